package session

import (
	"context"
	"time"

	"sandbar/app/store"
)

// savedAt is when the session's work was last saved: recorded by save,
// else (a session saved before that was recorded) when it ended.
func (m *Manager) savedAt(s store.Session) time.Time {
	if t := m.inspect(s.ID).SavedAt; !t.IsZero() {
		return t
	}
	return s.Ended
}

// Export writes the session's files, as last saved, into a read-only
// folder Sandbar owns (see workspace.Mirror.Export) and returns it, with
// when that work was saved. A session whose VM runs here is saved first,
// so the export is its latest. The agent's own files stay in its VM:
// nothing on the host opens them.
func (m *Manager) Export(ctx context.Context, ref string) (string, time.Time, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return "", time.Time{}, err
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		if _, err := r.save(ctx); err != nil {
			return "", time.Time{}, err
		}
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return "", time.Time{}, err
	}
	defer unlock()
	info, err := mr.Export(ctx, s.ID, m.cfg.Paths.SessionDir(s.ID).Export())
	if err != nil {
		return "", time.Time{}, err
	}
	if len(info.Skipped) > 0 {
		m.log.Info("export: left out", "session", s.ID, "count", len(info.Skipped), "first", info.Skipped[0])
	}
	return info.Dir, m.savedAt(s), nil
}
