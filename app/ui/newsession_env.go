package ui

import (
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// New Session's environment line: where the chosen project's sessions
// run (the repository's devcontainer.json and the state of its prepared
// environment, or Sandbar's own image), followed while the window is
// open, and a way to start this one session in Sandbar's own image
// (when preparing failed, or to compare).

func (w *newSessionWindow) buildEnv() fyne.CanvasObject {
	w.envLine = widget.NewLabel("Reading the project's environment…")
	w.envLine.Wrapping = fyne.TextWrapWord
	w.envDefault = widget.NewCheck("Use Sandbar's own image for this session", func(bool) { w.validate() })
	w.envSettings = widget.NewButton("Environment settings…", func() {
		if p, ok := w.selected(); ok {
			w.u.showProjectEnvironment(p.ID)
		}
	})
	w.envSettings.Importance = widget.LowImportance
	return container.NewVBox(w.envLine, container.NewHBox(w.envDefault, w.envSettings))
}

// watchProjectEnv follows the environment of p, the project chosen.
func (w *newSessionWindow) watchProjectEnv(p store.Project) {
	if w.envWatch != nil {
		w.envWatch.Stop()
	}
	w.envOf = p.ID
	w.envLine.SetText("Reading the project's environment…")
	w.envLine.Importance = widget.LowImportance
	w.envWatch = w.u.watchEnv(p.Path, func(v session.EnvironmentView, err error) {
		if cur, ok := w.selected(); !ok || cur.ID != p.ID {
			return
		}
		w.showEnv(v, err)
	})
}

// showEnv shows one reading of the chosen project's environment.
func (w *newSessionWindow) showEnv(v session.EnvironmentView, err error) {
	if err != nil {
		w.envLine.SetText("Cannot read the project's environment: " + sentence(err.Error()))
		w.envLine.Importance = widget.DangerImportance
		w.envLine.Refresh()
		return
	}
	text, imp := envLineWords(v, time.Now())
	if imp == widget.SuccessImportance || imp == widget.MediumImportance {
		imp = widget.MediumImportance // a plain fact here, not news
	}
	w.envLine.SetText(text)
	w.envLine.Importance = imp
	w.envLine.Refresh()
	// The choice only means something where the project's own
	// environment is used, or its trusted file is broken (which refuses
	// the start).
	if v.Source == "devcontainer" || v.Trust == session.TrustTrusted {
		w.envDefault.Show()
	} else {
		w.envDefault.SetChecked(false)
		w.envDefault.Hide()
	}
	w.validate()
}

// stopEnv ends the following (the window closed).
func (w *newSessionWindow) stopEnv() {
	if w.envWatch != nil {
		w.envWatch.Stop()
		w.envWatch = nil
	}
}
