package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sandbar/app/config"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Remove deletes a session: its VM is stopped, and its folder (workspace,
// scratch disk, logs, transcript) and record go to the trash, whence
// Restore brings them back until the trash is emptied (trash.go). It
// refuses while the workspace has uncommitted changes or commits not in
// the project's repository, unless force: the trash is emptied in a week.
// A session whose record is damaged is removed without that check (its
// project cannot be told for sure): see removeDamaged.
func (m *Manager) Remove(ctx context.Context, ref string, force bool) error {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return err
	}
	if s.Damaged != "" {
		if r := m.running(s.ID); r != nil {
			r.requestStop(ReasonRemoved)
			select {
			case <-r.done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := m.removeDamaged(ctx, s); err != nil {
			return err
		}
		m.hub.publish(Event{Session: s.ID, Time: time.Now(), Kind: EventRemoved})
		return nil
	}
	if Live(s.State) && m.running(s.ID) == nil && ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
		return fmt.Errorf("session %s runs in Sandbar process %d: %w", s.ID, s.Owner.PID, ErrOwnedElsewhere)
	}
	dir := m.cfg.Paths.SessionDir(s.ID)
	if !force {
		if err := m.checkRemovable(ctx, s); err != nil {
			return err
		}
	}
	if r := m.running(s.ID); r != nil {
		r.requestStop(ReasonRemoved)
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := m.moveToTrash(ctx, s.ID, dir); err != nil {
		return err
	}
	m.hub.publish(Event{Session: s.ID, Time: time.Now(), Kind: EventRemoved})
	return nil
}

// checkRemovable refuses to delete a session whose work is not in its
// project's repository (see workspace.CheckRemovable), saving a running
// session's work first.
func (m *Manager) checkRemovable(ctx context.Context, s store.Session) error {
	if m.isLegacy(s) {
		return fmt.Errorf("%w: use --force to delete it", m.legacyError(s))
	}
	if err := m.saveFailed(s); err != nil {
		return fmt.Errorf("%w; or use --force to delete it anyway", err)
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		if _, err := r.save(ctx); err != nil {
			return fmt.Errorf("%w: use --force to delete the session anyway", err)
		}
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return fmt.Errorf("project %s: %w (use --force to delete the session anyway)", proj.Name, err)
	}
	mr, unlock, err := m.mirror(ctx, s.ProjectID)
	if err != nil {
		return err
	}
	defer unlock()
	return workspace.CheckRemovable(ctx, repo, mr, s.ID, m.baseCommit(s))
}

// removeSessionDir deletes a session's directory. A scratch disk can be
// large, and a legacy clone may hold anything the agent made (symlinks
// included: RemoveAll does not follow them).
func removeSessionDir(d config.SessionDir) error {
	dir := d.Path()
	// The export's folders are read-only, and so are those of one left
	// half-written by a Sandbar that died while writing it.
	exports := []string{d.Export()}
	if es, err := os.ReadDir(dir); err == nil {
		for _, e := range es {
			if e.IsDir() && config.IsExportTemp(e.Name()) {
				exports = append(exports, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, d := range exports {
		if err := workspace.RemoveExport(d); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", dir, err)
	}
	return nil
}
