package session

import (
	"context"
	"fmt"

	"sandbar/app/store"
)

// Stop stops a running session: the agent gets SIGTERM and a grace
// period, the work is saved, then the VM shuts down. It returns when the
// session is stopped, with an error wrapping ErrNotSaved when its work
// could not be saved (the session is stopped all the same).
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
	s, err = m.cfg.Store.Session(ctx, s.ID)
	if err != nil {
		return s, err
	}
	// A stop never claims a save it did not make.
	if why, ok := NotSaved(s.Reason); ok {
		return s, fmt.Errorf("%w: %s: the work is still on the session's disk; restart the session to try again (sandbar restart %s), or look inside with `sandbar shell %s`", ErrNotSaved, why, short(s.ID), short(s.ID))
	}
	return s, nil
}
