package ui

import (
	"sandbar/app/session"
)

// secretSaved tells the open windows that name was stored in the
// keyring: a credential of the model API marks Welcome's key step done.
func (u *UI) secretSaved(name string) {
	if !session.ModelCredential(name) {
		return
	}
	if w := u.firstRunWin; w != nil {
		w.key.setSaved(name)
		w.projectHint()
	}
}
