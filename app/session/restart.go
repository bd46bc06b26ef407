package session

import (
	"context"
	"fmt"
	"time"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Restart boots a stopped, failed or interrupted session again on its
// workspace and scratch disk and starts its agent; Claude Code continues
// its conversation (--continue).
func (m *Manager) Restart(ctx context.Context, ref string) (store.Session, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return s, err
	}
	// From here until its run is launched (or this fails) the session is
	// marked starting, so a second Restart at once (a double click, the
	// UI and the CLI) is refused instead of booting a second VM on the
	// same disks. Read again under the mark, the session says whether one
	// that was just launched is booting.
	release, err := m.reserveStart(s.ID)
	if err != nil {
		return s, err
	}
	defer release()
	if s, err = m.cfg.Store.Session(ctx, s.ID); err != nil {
		return s, err
	}
	if r := m.running(s.ID); r != nil && !Live(s.State) {
		// Its end is recorded; the run is finishing its last writes.
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	if m.running(s.ID) != nil {
		return s, fmt.Errorf("session %s is already running: stop it first: %w", s.ID, ErrState)
	}
	if Live(s.State) && ownerAlive(s.Owner) {
		return s, fmt.Errorf("session %s is %s: stop it first: %w", s.ID, s.State, ErrState)
	}
	if m.isLegacy(s) {
		return s, m.legacyError(s)
	}
	if m.inspect(s.ID).BaseDisk == "" {
		return s, fmt.Errorf("session %s has no workspace left: start a new session: %w", s.ID, ErrState)
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return s, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return s, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	setup, err := m.admit(ctx, s, specOf(s.Agent), true)
	if err != nil {
		return s, err
	}
	s, err = m.cfg.Store.UpdateSession(ctx, s.ID, func(x *store.Session) error {
		x.State, x.Activity, x.Reason = StateBooting, "", "restarting"
		x.Owner, x.ExitCode, x.Error = m.owner, nil, ""
		x.Started, x.Ended = time.Now(), time.Time{}
		return nil
	})
	if err != nil {
		return s, err
	}
	m.publishState(s)
	r := m.newRun(s, repo, setup, false)
	r.restart = true
	m.launch(r, func(ctx context.Context) error { return r.bootAndRun(ctx) })
	return s, nil
}

// reserveStart marks session id as starting here until release is
// called, or says it already is. A Restart holds the mark from its checks
// until launch has put the run in m.runs, where the next one's check
// finds it.
func (m *Manager) reserveStart(id string) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.starting[id]; ok {
		return nil, fmt.Errorf("session %s is already starting: wait for it to run, or stop it: %w", id, ErrState)
	}
	if m.starting == nil {
		m.starting = map[string]struct{}{}
	}
	m.starting[id] = struct{}{}
	return func() {
		m.mu.Lock()
		delete(m.starting, id)
		m.mu.Unlock()
	}, nil
}
