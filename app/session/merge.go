package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// MergeOptions says how Merge brings a session's work into its
// repository.
type MergeOptions struct {
	// Into merges into the branch checked out in the repository and
	// updates its working tree (workspace.MergeInto), refusing a dirty
	// tree or a conflict; otherwise the session's own branch is created
	// or moved there (workspace.Merge) and the working tree is untouched.
	Into bool
	// Force lets the session's own branch overwrite a diverged one of
	// the same name; it does nothing with Into.
	Force bool
	// AcceptSteering lets Into bring steering files (.gitattributes,
	// .lfsconfig, .envrc…, see workspace.IsSteering) into the working
	// tree; without it such a merge is refused (workspace.ErrSteering),
	// naming them.
	AcceptSteering bool
	// Stash lets Into stash the repository's uncommitted changes that the
	// session's work does not touch, merge, and put them back
	// (workspace.MergeIntoStashing); without it they refuse the merge
	// (workspace.ErrDirtyTree, with workspace.ErrStashable when stashing
	// would do).
	Stash bool
}

// Merge brings the session's work into its project's repository, as o
// says. A running session's work is saved first, so the merge takes its
// latest; a stopped one's uncommitted work is committed first when the
// setting says so (see autoCommitOn), for a session that ended before
// that was done at its end. A session with nothing to merge is refused
// (workspace.ErrNothingToMerge), saying why. A merge is recorded on the
// session (store.Session.Merged).
func (m *Manager) Merge(ctx context.Context, ref string, o MergeOptions) (workspace.MergeResult, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return workspace.MergeResult{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	r := m.running(s.ID)
	live := r != nil && r.vmUp()
	// Accepting steering files accepts those the person was shown: the
	// ones the refused merge named, from the work saved then. A running
	// session's agent may have changed them since; those are refused
	// again, named, rather than brought in unseen.
	var reviewed string
	if live && o.Into && o.AcceptSteering {
		if mr, unlock, err := m.mirror(ctx, s.ProjectID); err == nil {
			if saved, ok := mr.Saved(ctx, s.ID); ok {
				reviewed = saved.Branch
			}
			unlock()
		}
	}
	if live {
		if _, err := r.save(ctx); err != nil {
			return workspace.MergeResult{}, err
		}
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	defer unlock()
	if !live && m.autoCommitOn(ctx) {
		if c, err := m.commitLeftover(ctx, mr, s); err != nil {
			return workspace.MergeResult{}, err
		} else if c != "" {
			m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "autocommit", Detail: c})
		}
	}
	if why := m.nothingToMerge(ctx, mr, s, live); why != "" {
		return workspace.MergeResult{}, fmt.Errorf("%w: %s", workspace.ErrNothingToMerge, why)
	}
	if live && o.Into && o.AcceptSteering {
		if err := m.steeringSinceReviewed(ctx, mr, s, reviewed); err != nil {
			return workspace.MergeResult{}, err
		}
	}
	var res workspace.MergeResult
	switch {
	case o.Into && o.Stash:
		res, err = workspace.MergeIntoStashing(ctx, repo, mr, s.ID, s.Branch, o.AcceptSteering)
	case o.Into:
		res, err = workspace.MergeInto(ctx, repo, mr, s.ID, s.Branch, o.AcceptSteering)
	default:
		res, err = workspace.Merge(ctx, repo, mr, s.ID, s.Branch, o.Force)
		if err == nil {
			// Named, not refused: the working tree is untouched.
			res.Steering, _ = mr.SteeringBetween(ctx, m.baseCommit(s), res.Commit)
		}
	}
	if err != nil {
		return res, err
	}
	rec := store.Merge{Into: res.Into, Commit: res.Commit, Work: res.Commit, Time: time.Now().UTC()}
	if saved, ok := mr.Saved(ctx, s.ID); ok {
		rec.Work = saved.Branch
	}
	if !o.Into {
		rec.Into, rec.Branch = s.Branch, true
	}
	m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "merge", Detail: fmt.Sprintf("%s → %s at %s", s.Branch, repo.Root+" "+rec.Into, res.Commit)})
	if x, err := m.cfg.Store.UpdateSession(ctx, s.ID, func(x *store.Session) error { x.Merged = rec; return nil }); err == nil {
		m.publishState(x)
	} else if !errors.Is(err, store.ErrNotFound) {
		return res, fmt.Errorf("merged, but could not record it: %w", err)
	}
	return res, nil
}

// nothingToMerge says why the session's saved work holds nothing to
// merge (no commit since its base), "" when it holds something. mr is
// held.
func (m *Manager) nothingToMerge(ctx context.Context, mr *workspace.Mirror, s store.Session, live bool) string {
	saved, ok := mr.Saved(ctx, s.ID)
	if !ok || saved.Branch != m.baseCommit(s) {
		return "" // no save: the merge says so
	}
	unc, _ := mr.SavedUncommitted(ctx, s.ID)
	files := plural(len(unc), "file", "files")
	switch {
	case len(unc) == 0:
		return "the session made no changes"
	case live:
		return fmt.Sprintf("the session has committed nothing yet (%s changed but not committed): commit them with `sandbar commit %s` (Commit now in the session's window), or ask the agent to commit, then merge", files, short(s.ID))
	}
	return fmt.Sprintf("the session's changes (%s) were not committed when it ended, and committing them is off in Settings: turn on \"Commit the work a session leaves\" and merge again, or restart the session and ask the agent to commit", files)
}

// MergeTarget says where a session's work would go and whether there
// is anything to merge, for the merge actions' labels and states.
type MergeTarget struct {
	// Branch is the session's own branch, which "Create branch" makes.
	Branch string
	// Into is the branch checked out in the repository, which "Merge
	// into" merges into; "" when there is none (a detached HEAD, a
	// repository that is gone).
	Into string
	// Nothing says why there is nothing to merge at all, "" when there
	// is (or may be: a running session is saved when it merges).
	Nothing string
	// BranchDone says why "Create branch" has nothing to do (the branch
	// is at the session's work already), IntoDone why "Merge into" has
	// none (Into already has the session's work); "" when they have.
	BranchDone, IntoDone string
	// AutoCommit is the commit Sandbar made of the work the session left
	// uncommitted when it ended, if its branch is still at it.
	AutoCommit string
}

// MergeTarget reads what the merge actions of a session would do. It
// reads the repository and Sandbar's, and changes nothing.
func (m *Manager) MergeTarget(ctx context.Context, ref string) (MergeTarget, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return MergeTarget{}, err
	}
	t := MergeTarget{Branch: s.Branch}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return t, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		t.Nothing = fmt.Sprintf("the repository %s cannot be read: %v", proj.Path, err)
		return t, nil
	}
	t.Into = workspace.CurrentBranch(ctx, repo)
	if r := m.running(s.ID); (r != nil && r.vmUp()) || Live(s.State) {
		return t, nil
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		t.Nothing = err.Error()
		return t, nil
	}
	defer unlock()
	saved, ok := mr.Saved(ctx, s.ID)
	if !ok {
		t.Nothing = "the session saved no work"
		return t, nil
	}
	t.AutoCommit = saved.AutoCommit
	if why := m.nothingToMerge(ctx, mr, s, false); why != "" {
		// A leftover a merge would commit first is something to merge.
		if unc, _ := mr.SavedUncommitted(ctx, s.ID); len(unc) == 0 || !m.autoCommitOn(ctx) {
			t.Nothing = why
			return t, nil
		}
	}
	if saved.Snapshot != saved.Head {
		return t, nil // a merge commits it first: new work for both
	}
	if workspace.BranchAt(ctx, repo, s.Branch) == saved.Branch {
		t.BranchDone = fmt.Sprintf("the session's work is already on branch %s in %s", s.Branch, repo.Root)
	}
	if t.Into != "" && workspace.Reaches(ctx, repo, "HEAD", saved.Branch) {
		t.IntoDone = fmt.Sprintf("the session's work is already in %s", t.Into)
	}
	return t, nil
}

// steeringSinceReviewed refuses (workspace.ErrSteering) a merge into with
// steering files accepted when the running session's saved work changed
// steering files after reviewed, the work the person was shown (the
// branch as saved when the merge that named them was refused), or when
// nothing was saved for them to see. mr is held.
func (m *Manager) steeringSinceReviewed(ctx context.Context, mr *workspace.Mirror, s store.Session, reviewed string) error {
	saved, ok := mr.Saved(ctx, s.ID)
	if !ok || saved.Branch == reviewed {
		return nil
	}
	from := reviewed
	if from == "" {
		from = m.baseCommit(s)
	}
	st, err := mr.SteeringBetween(ctx, from, saved.Branch)
	if err != nil {
		return err
	}
	if len(st) == 0 {
		return nil
	}
	names := make([]string, len(st))
	for i, f := range st {
		names[i] = workspace.SteeringNote(f)
	}
	what := "it changed files that steer your tools after you were shown them"
	if reviewed == "" {
		what = "its work changes files that steer your tools, and no merge has shown them to you yet"
	}
	return fmt.Errorf("%w: the session is running, and %s: %s: look at them (sandbar changes %s, sandbar diff %s FILE), then merge --into --accept-steering again", workspace.ErrSteering, what, strings.Join(names, "; "), short(s.ID), short(s.ID))
}
