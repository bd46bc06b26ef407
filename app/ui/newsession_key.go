package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// missingKeyText is what New Session says when Start failed because the
// keyring holds no credential for Claude Code.
const missingKeyText = "Claude Code needs your Anthropic key, and none is saved yet: add it, then press Start again."

// newMissingKey is the button New Session offers beside missingKeyText:
// it takes the person to where the key is added. Hidden until needed.
func newMissingKey(u *UI) (*fyne.Container, *widget.Button) {
	add := widget.NewButtonWithIcon("Add your Anthropic key…", theme.AccountIcon(), u.ShowAddKey)
	add.Importance = widget.HighImportance
	box := container.NewHBox(add, layout.NewSpacer())
	box.Hide()
	return box, add
}

// showMissingKey puts the plain sentence, and the way to the key, in
// place of the backend's error (which speaks of `sandbar secrets set`).
func (w *newSessionWindow) showMissingKey() {
	w.status.Importance = widget.DangerImportance
	w.status.SetText(missingKeyText)
	w.status.Show()
	w.keyBox.Show()
}

// keySaved clears the missing-key error once the key is in the keyring:
// Start is all that is left to do.
func (w *newSessionWindow) keySaved() {
	if !w.keyBox.Visible() {
		return
	}
	w.keyBox.Hide()
	w.status.Importance = widget.SuccessImportance
	w.status.SetText("Your Anthropic key is saved: press Start.")
	w.validate()
}
