package session

import (
	"context"

	"sandbar/app/store"
)

// ProjectSudo says whether a project's agent user may use sudo inside its
// VM: yes unless the project's setting is "off". The VM is the boundary;
// root in the guest reaches nothing of the host's.
func (m *Manager) ProjectSudo(ctx context.Context, projectID int64) (bool, error) {
	v, _, err := m.cfg.Store.ProjectSetting(ctx, projectID, store.ProjectSudo)
	if err != nil {
		return false, err
	}
	return v != "off", nil
}

// SetProjectSudo lets a project's agent use sudo inside its VM (on, the
// default, which unsets the setting) or not. A running session keeps
// what it started with until its agent starts again.
func (m *Manager) SetProjectSudo(ctx context.Context, ref string, on bool) error {
	p, err := m.findProject(ctx, ref)
	if err != nil {
		return err
	}
	if on {
		return m.cfg.Store.DeleteProjectSetting(ctx, p.ID, store.ProjectSudo)
	}
	return m.cfg.Store.SetProjectSetting(ctx, p.ID, store.ProjectSudo, "off")
}
