package session

import (
	"context"

	"sandbar/app/store"
)

// Stop stops a running session: the agent gets SIGTERM and a grace
// period, then the VM shuts down. It returns when the session is stopped.
func (m *Manager) Stop(ctx context.Context, ref string) (store.Session, error) {
	s, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return s, err
	}
	r.requestStop(ReasonStoppedByUser)
	select {
	case <-r.done:
	case <-ctx.Done():
		return s, ctx.Err()
	}
	return m.cfg.Store.Session(ctx, s.ID)
}
