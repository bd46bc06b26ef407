package session

import (
	"context"

	"sandbar/app/workspace"
)

// Branches lists the local branches of a project's repository (by id,
// name or path), with the one checked out there now: what a session may
// start from. Only git's own reading runs, scrubbed (see
// workspace.ListBranches).
func (m *Manager) Branches(ctx context.Context, projectRef string) (workspace.Branches, error) {
	p, err := m.findProject(ctx, projectRef)
	if err != nil {
		return workspace.Branches{}, err
	}
	return workspace.ListBranches(ctx, p.Path)
}
