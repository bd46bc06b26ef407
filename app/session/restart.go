package session

import (
	"context"
	"fmt"
	"os"
	"time"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Restart boots a stopped, failed or interrupted session again on its
// workspace and scratch disk and starts its agent; Claude Code continues
// its conversation (--continue).
func (m *Manager) Restart(ctx context.Context, ref string) (store.Session, error) {
	return m.restart(ctx, ref, false)
}

// RestartFromSaved restarts a session whose scratch disk is gone from its
// last saved work: a new clone at the commit its last save brought home
// (its branch, or the snapshot of its uncommitted work on it), never at
// the commit it first started from. Where the disk is there, or nothing
// was saved, it is refused in words.
func (m *Manager) RestartFromSaved(ctx context.Context, ref string) (store.Session, error) {
	return m.restart(ctx, ref, true)
}

func (m *Manager) restart(ctx context.Context, ref string, fromSaved bool) (store.Session, error) {
	s, err := m.findIntact(ctx, ref)
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
	if s.State == StateSuspended {
		// A cold boot would leave the saved state behind a disk that
		// moved on from it, and lose the processes it holds.
		return s, fmt.Errorf("session %s is suspended: `sandbar resume %s` brings it back where it was: %w", s.ID, short(s.ID), ErrState)
	}
	if m.isLegacy(s) {
		return s, m.legacyError(s)
	}
	in := m.inspect(s.ID)
	if in.BaseDisk == "" {
		return s, fmt.Errorf("session %s has no workspace left: start a new session: %w", s.ID, ErrState)
	}
	gone := in.Scratch == nil && s.Timings["boot"] > 0
	switch {
	case gone && !fromSaved:
		return s, m.scratchGone(ctx, s)
	case !gone && fromSaved:
		return s, fmt.Errorf("session %s still has its disk: `sandbar restart %s` continues where it was: %w", short(s.ID), short(s.ID), ErrState)
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return s, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return s, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	at, err := m.placeOfSession(ctx, s.ID)
	if err != nil {
		return s, err
	}
	setup, err := m.admit(ctx, s, at, specOf(s.Agent), true)
	if err != nil {
		return s, err
	}
	envCfg, feats, err := keptEnvironment(m.cfg.Paths.SessionDir(s.ID).Environment())
	if err != nil {
		return s, err
	}
	var from string
	if fromSaved {
		if from, err = m.baseFromSaved(ctx, s, repo); err != nil {
			return s, err
		}
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
	r.restart, r.fromSaved = true, from
	r.useEnvironment(envCfg, feats)
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

// scratchGone says why a session whose VM booted before, but whose
// scratch disk (its clone and uncommitted work) is gone, is not booted
// again: that would start over from the project's commit, silently, and
// the agent would begin again. Its saved work is kept (see
// workspace.Mirror.ImportSave's saves refs), and the message says where.
func (m *Manager) scratchGone(ctx context.Context, s store.Session) error {
	what := fmt.Sprintf("no work of it was saved: `sandbar rm --force %s` deletes the session", short(s.ID))
	if mr, unlock, err := m.mirror(ctx, s.ProjectID); err == nil {
		if info, ok := mr.Saved(ctx, s.ID); ok {
			what = fmt.Sprintf("its last saved work is kept (branch %s at %s): `sandbar restart --from-saved %s` continues from it in a new clone, `sandbar merge %s` brings it home, and `sandbar rm %s` deletes the session", s.Branch, short(info.Branch), short(s.ID), short(s.ID), short(s.ID))
		}
		unlock()
	}
	return fmt.Errorf("session %s's disk (%s) is gone, so it cannot continue where it was, and Sandbar will not start it over from the beginning: %s: %w", short(s.ID), m.cfg.Paths.SessionDir(s.ID).Scratch(), what, ErrScratchGone)
}

// ErrScratchGone: a session's scratch disk, its clone and uncommitted
// work, is gone; RestartFromSaved continues from its saved work.
var ErrScratchGone = fmt.Errorf("the session's disk is gone: %w", ErrState)

// baseFromSaved builds the workspace disk of the session's last saved
// work and makes it the session's, and says which commit that is, in
// words for the log.
func (m *Manager) baseFromSaved(ctx context.Context, s store.Session, repo workspace.Repo) (string, error) {
	mr, unlock, err := m.mirror(ctx, s.ProjectID)
	if err != nil {
		return "", err
	}
	defer unlock()
	info, ok := mr.Saved(ctx, s.ID)
	if !ok {
		return "", fmt.Errorf("session %s has no saved work to continue from: `sandbar rm --force %s` deletes it: %w", short(s.ID), short(s.ID), ErrState)
	}
	commit, which := info.Branch, fmt.Sprintf("its branch %s at %s", s.Branch, short(info.Branch))
	if same, err := mr.SameTree(ctx, info.Snapshot, info.Branch); err == nil && !same {
		// Work it had not committed was saved on top: the clone holds it
		// as that snapshot's commit, so nothing saved is left out.
		commit, which = info.Snapshot, fmt.Sprintf("the snapshot %s of its uncommitted work on its branch %s at %s", short(info.Snapshot), s.Branch, short(info.Branch))
	}
	base, err := mr.BuildBase(ctx, workspace.BaseOptions{Source: repo, Commit: commit, Dir: m.cfg.Paths.ProjectBases(s.ProjectID)})
	if err != nil {
		return "", fmt.Errorf("build the workspace of session %s's saved work: %w", short(s.ID), err)
	}
	if err := os.WriteFile(m.cfg.Paths.SessionDir(s.ID).BaseDisk(), []byte(base.Path+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("record the session's workspace disk: %w", err)
	}
	return which, nil
}
