package ui

import (
	"fyne.io/fyne/v2/widget"

	"sandbar/app/secrets"
	"sandbar/app/session"
)

// ShowAddKey takes a person to where the Anthropic key is added:
// Settings' Secrets tab, with ANTHROPIC_API_KEY filled in as the name and
// the cursor in the value field.
func (u *UI) ShowAddKey() {
	u.ShowSettings()
	u.settingsWin.addSecret(secrets.AnthropicAPIKey)
}

// addSecret opens the Secrets tab ready to add name: the form holds the
// name, the value field has the focus.
func (w *settingsWindow) addSecret(name string) {
	for _, t := range w.tabs.Items {
		if t.Text == "Secrets" {
			w.tabs.Select(t)
			break
		}
	}
	w.secretName.SetText(name)
	w.secretValue.SetText("")
	w.secretHost.SetText("")
	w.secretHeader.SetText("")
	w.win.Canvas().Focus(w.secretValue)
	setStatus(w.secretStatus, widget.MediumImportance, "Paste your key as the value of "+name+" and press Save.")
}

// secretSaved tells the open windows that name was stored in the
// keyring: a credential of the model API ends New Session's "needs your
// Anthropic key" and marks Welcome's key step done.
func (u *UI) secretSaved(name string) {
	if !session.ModelCredential(name) {
		return
	}
	if w := u.firstRunWin; w != nil {
		w.key.setSaved(name)
		w.projectHint()
	}
	if w := u.newSessWin; w != nil {
		w.keySaved()
	}
}
