package session

import (
	"context"
	"fmt"
	"time"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Merge brings the session's branch into its project's repository (see
// workspace.Merge); the repository's working tree is never touched. A
// running session's work is saved first, so the merge takes its latest.
func (m *Manager) Merge(ctx context.Context, ref string, force bool) (workspace.MergeResult, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
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
	if r := m.running(s.ID); r != nil && r.vmUp() {
		if _, err := r.save(ctx); err != nil {
			return workspace.MergeResult{}, err
		}
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	defer unlock()
	res, err := workspace.Merge(ctx, repo, mr, s.ID, s.Branch, force)
	if err != nil {
		return res, err
	}
	m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "merge", Detail: fmt.Sprintf("%s → %s at %s", s.Branch, repo.Root, res.Commit)})
	return res, nil
}
