package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// A session of a project whose environment is being prepared waits in
// provisioning, its reason saying the preparation's step (the state line
// shows it): under the state line, a bar says it is under way, and a
// button opens the project's Environment tab, which follows the
// preparation's log. No fraction of a preparation is known (its steps
// are the file's own commands), so the bar runs without one.

func (w *sessionWindow) buildEnvWait() fyne.CanvasObject {
	w.envWaitBar = widget.NewProgressBarInfinite()
	w.envWaitBar.Stop()
	follow := widget.NewButtonWithIcon("Show the preparation", theme.FileTextIcon(), func() {
		w.u.showProjectEnvironment(w.project.ID)
	})
	follow.Importance = widget.LowImportance
	w.envWait = container.NewBorder(nil, nil, nil, follow, w.envWaitBar)
	w.envWait.Hide()
	return w.envWait
}

// showEnvWait shows the bar while s waits for its environment.
func (w *sessionWindow) showEnvWait(s store.Session) {
	_, waiting := envWaitStep(s.Reason)
	if waiting && s.State == session.StateProvisioning {
		if !w.envWait.Visible() {
			w.envWait.Show()
			w.envWaitBar.Start()
		}
		return
	}
	if w.envWait.Visible() {
		w.envWaitBar.Stop()
		w.envWait.Hide()
	}
}
