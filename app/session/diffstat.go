package session

import (
	"context"
	"errors"
	"fmt"

	"sandbar/app/workspace"
)

// ErrNothingSaved: the session has saved no work yet (a running
// session's work is saved when it stops, merges or is exported).
var ErrNothingSaved = errors.New("the session has saved no work yet")

// maxDiffStats bounds the Manager's cache of diff stats; past it the
// cache starts again.
const maxDiffStats = 4096

// DiffStat sums the session's last saved work against its base (files,
// lines added and deleted), from Sandbar's repository of its project.
// Each saved commit is counted once: a later call for the same save
// costs one ref read. A session with nothing saved is ErrNothingSaved.
func (m *Manager) DiffStat(ctx context.Context, ref string) (workspace.DiffStat, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return workspace.DiffStat{}, err
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return workspace.DiffStat{}, err
	}
	defer unlock()
	saved, ok := mr.Saved(ctx, s.ID)
	if !ok {
		return workspace.DiffStat{}, ErrNothingSaved
	}
	base := m.baseCommit(s)
	key := fmt.Sprintf("%d %s %s", s.ProjectID, base, saved.Snapshot)
	m.mu.Lock()
	d, hit := m.diffStats[key]
	m.mu.Unlock()
	if hit {
		return d, nil
	}
	d, err = mr.SavedDiffStat(ctx, base, saved.Snapshot, 0)
	if err != nil {
		return workspace.DiffStat{}, err
	}
	m.mu.Lock()
	if m.diffStats == nil || len(m.diffStats) >= maxDiffStats {
		m.diffStats = map[string]workspace.DiffStat{}
	}
	m.diffStats[key] = d
	m.mu.Unlock()
	return d, nil
}
