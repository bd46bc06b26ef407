package session

import (
	"context"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// List returns the sessions, newest first.
func (m *Manager) List(ctx context.Context) ([]store.Session, error) {
	return m.cfg.Store.Sessions(ctx, store.SessionFilter{})
}

// Get returns a session by id or unique id prefix.
func (m *Manager) Get(ctx context.Context, id string) (store.Session, error) {
	return m.cfg.Store.FindSession(ctx, id)
}

// Logs returns stored log lines after seq (see store.Logs).
func (m *Manager) Logs(ctx context.Context, ref string, afterSeq int64, limit int) ([]store.LogLine, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return nil, err
	}
	return m.cfg.Store.Logs(ctx, s.ID, afterSeq, limit)
}

// Transcript returns a Claude Code session's transcript so far.
func (m *Manager) Transcript(ctx context.Context, ref string) ([]Entry, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return nil, err
	}
	return readTranscript(m.cfg.Paths.SessionDir(s.ID).Transcript())
}

// Changes returns the session's changes against its base: asked of its
// VM while it runs (the agent's own view), else read from the work it
// last saved.
func (m *Manager) Changes(ctx context.Context, ref string) (workspace.Changes, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return workspace.Changes{}, err
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		return r.liveChanges(ctx)
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return workspace.Changes{}, err
	}
	defer unlock()
	return mr.SavedStatus(ctx, s.ID, m.baseCommit(s))
}

// maxDiff bounds one file's diff shown to a person.
const maxDiff = 4 << 20

// FileDiff returns the unified diff of one changed file against the
// session's base, from its VM while it runs, else from its saved work.
func (m *Manager) FileDiff(ctx context.Context, ref string, f workspace.FileChange) (string, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return "", err
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		out, err := workspace.FileDiff(ctx, r.guestGit, m.baseCommit(s), f)
		return truncateDiff(out), err
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return "", err
	}
	defer unlock()
	out, err := mr.SavedDiff(ctx, s.ID, m.baseCommit(s), f.Path, maxDiff+1)
	return truncateDiff(out), err
}

// DiffTruncated ends a diff cut at maxDiff bytes.
const DiffTruncated = "\n[diff truncated]\n"

// truncateDiff bounds a diff to maxDiff bytes, saying so.
func truncateDiff(d string) string {
	if len(d) > maxDiff {
		return d[:maxDiff] + DiffTruncated
	}
	return d
}
