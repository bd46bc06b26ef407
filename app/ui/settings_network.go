package ui

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// networkTab is Settings → Network: the mode and rules of every session
// (each project adds its own, in Project Settings), whether the ports a
// guest listens on are published on their own, and whether sessions trust
// the certificates this machine trusts (settings_certs.go).
func (w *settingsWindow) networkTab() fyne.CanvasObject {
	w.netRules = newRulesEditor(w.u, session.ScopeSandbar, "", 0)
	w.netRules.win = w.win
	w.publish = widget.NewCheck("Publish the ports a session listens on at this machine's 127.0.0.1", func(on bool) {
		if !w.settingUp {
			w.setPublish(on)
		}
	})
	w.publish.Disable() // until read
	w.publishStatus = statusLabel()
	top := note("Every session starts with no network but what these rules allow. A project's settings add to them (Project Settings, from its row in the Sandbar window), " +
		"and so does a repository's .sandbar/network; Allow in a session's window adds for that session. Changes reach running sessions at once.")
	bottom := container.NewVBox(widget.NewSeparator(), w.publish,
		note("Off: only the ports you publish in a session's window are reachable from this machine."), w.publishStatus,
		w.certsBox())
	return container.NewBorder(top, bottom, nil, nil, w.netRules.content)
}

// loadNetwork reads the rules, the ports setting and the certificates.
func (w *settingsWindow) loadNetwork() {
	w.netRules.load()
	w.loadCerts()
	s := w.u.Settings
	if s == nil {
		return
	}
	w.u.background(func(ctx context.Context) {
		v, _, err := s.Setting(ctx, string(store.SettingPublishPorts))
		w.u.post(func() {
			if err != nil {
				setStatus(w.publishStatus, widget.DangerImportance, sentence(err.Error()))
				return
			}
			w.settingUp = true
			w.publish.SetChecked(v != "off")
			w.settingUp = false
			w.publish.Enable()
		})
	})
}

// setPublish saves whether guest ports are published on their own; it
// applies to the ports a guest opens from then on.
func (w *settingsWindow) setPublish(on bool) {
	v := "on"
	if !on {
		v = "off"
	}
	w.u.background(func(ctx context.Context) {
		err := w.u.Settings.SetSetting(ctx, string(store.SettingPublishPorts), v)
		w.u.post(func() {
			if err != nil {
				setStatus(w.publishStatus, widget.DangerImportance, sentence(err.Error()))
				w.settingUp = true
				w.publish.SetChecked(!on)
				w.settingUp = false
				return
			}
			msg := "Saved: ports a session's guest opens from now on are published."
			if !on {
				msg = "Saved: from now on only the ports you publish are; those published already stay until they close."
			}
			setStatus(w.publishStatus, widget.SuccessImportance, msg)
		})
	})
}
