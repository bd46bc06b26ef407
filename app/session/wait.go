package session

import (
	"context"

	"sandbar/app/store"
)

// Wait blocks until the session is no longer live here and returns it.
func (m *Manager) Wait(ctx context.Context, ref string) (store.Session, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return s, err
	}
	if r := m.running(s.ID); r != nil {
		select {
		case <-r.done:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	return m.cfg.Store.Session(ctx, s.ID)
}
