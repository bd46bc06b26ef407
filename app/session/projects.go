package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// AddProject adds the repository holding path as a project. The returned
// note is non-empty when the user should hear something (a subfolder was
// given, so its repository's top level was added).
func (m *Manager) AddProject(ctx context.Context, path string) (store.Project, string, error) {
	repo, err := workspace.Resolve(ctx, path)
	if err != nil {
		return store.Project{}, "", err
	}
	note := ""
	if repo.Subdir != "" {
		note = fmt.Sprintf("%s is inside the repository %s: added that", path, repo.Root)
	}
	if p, err := m.cfg.Store.ProjectByPath(ctx, repo.Root); err == nil {
		return p, "", fmt.Errorf("%s is already the project %q: %w", repo.Root, p.Name, store.ErrExists)
	}
	p, err := m.cfg.Store.AddProject(ctx, store.Project{Name: repo.Name, Path: repo.Root, DefaultBranch: repo.Branch})
	if err == nil {
		m.watchSource(p)
	}
	return p, note, err
}

// Projects lists the projects, most recently used first.
func (m *Manager) Projects(ctx context.Context) ([]store.Project, error) {
	return m.cfg.Store.Projects(ctx)
}

// RemoveProject forgets a project (never touching the repository); it
// refuses while the project has sessions, and empties its sessions out of
// the trash.
func (m *Manager) RemoveProject(ctx context.Context, ref string) error {
	p, err := m.findProject(ctx, ref)
	if err != nil {
		return err
	}
	trashed, err := m.cfg.Store.Trashed(ctx)
	if err != nil {
		return err
	}
	// Its sessions in the trash go with it (the store deletes their
	// records): none could be restored without it.
	if err := m.cfg.Store.RemoveProject(ctx, p.ID); err != nil {
		return err
	}
	for _, t := range trashed {
		if t.ProjectID == p.ID {
			if err := removeSessionDir(m.cfg.Paths.TrashedSessionDir(t.ID, t.Deleted)); err != nil {
				m.log.Warn("delete a trashed session of a removed project", "session", t.ID, "err", err)
			}
		}
	}
	// Its watch ends, and Sandbar's repository and base disks of it go:
	// a project added later may be given the same id.
	m.mu.Lock()
	if stop := m.watched[p.ID]; stop != nil {
		stop()
		delete(m.watched, p.ID)
	}
	m.mu.Unlock()
	if _, unlock, err := m.mirror(ctx, p.ID); err == nil {
		err = os.RemoveAll(m.cfg.Paths.Project(p.ID))
		unlock()
		if err != nil {
			return fmt.Errorf("delete Sandbar's copy of %s: %w", p.Name, err)
		}
	}
	// Its prepared environments go too: a project given its id later
	// would boot on them (one of the same devcontainer.json inputs serves
	// another commit), this repository's ignored files in them, and no
	// prune removes a project's newest.
	if err := os.RemoveAll(filepath.Join(m.cfg.Paths.PreparedEnvs(), envName(p.ID))); err != nil {
		return fmt.Errorf("delete the prepared environments of %s: %w", p.Name, err)
	}
	return nil
}

// findProject resolves an id, a name or a path.
func (m *Manager) findProject(ctx context.Context, ref string) (store.Project, error) {
	ps, err := m.cfg.Store.Projects(ctx)
	if err != nil {
		return store.Project{}, err
	}
	abs, _ := filepath.Abs(ref)
	var byName []store.Project
	for _, p := range ps {
		switch {
		case fmt.Sprint(p.ID) == ref, p.Path == ref, p.Path == abs:
			return p, nil
		case p.Name == ref:
			byName = append(byName, p)
		}
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		if repo, err := workspace.Resolve(ctx, ref); err == nil {
			if p, err := m.cfg.Store.ProjectByPath(ctx, repo.Root); err == nil {
				return p, nil
			}
		}
		return store.Project{}, fmt.Errorf("no project %q: add it with `sandbar project add PATH` (or `sandbar project ls`): %w", ref, ErrNotFound)
	}
	var paths []string
	for _, p := range byName {
		paths = append(paths, fmt.Sprintf("%d (%s)", p.ID, p.Path))
	}
	return store.Project{}, fmt.Errorf("several projects are named %q: use an id or a path: %s: %w", ref, strings.Join(paths, ", "), store.ErrAmbiguous)
}

// Project returns a project by id.
func (m *Manager) Project(ctx context.Context, id int64) (store.Project, error) {
	return m.cfg.Store.Project(ctx, id)
}

func (m *Manager) projectForRepo(ctx context.Context, path string) (store.Project, error) {
	repo, err := workspace.Resolve(ctx, path)
	if err != nil {
		return store.Project{}, err
	}
	if p, err := m.cfg.Store.ProjectByPath(ctx, repo.Root); err == nil {
		return p, nil
	}
	p, _, err := m.AddProject(ctx, repo.Root)
	return p, err
}
