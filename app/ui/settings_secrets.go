package ui

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/secrets"
)

func (w *settingsWindow) secretsTab() fyne.CanvasObject {
	w.secretList = widget.NewList(
		func() int { return len(w.secretNames) },
		func() fyne.CanvasObject {
			name := widget.NewLabel("")
			replace := widget.NewButtonWithIcon("Replace…", theme.DocumentCreateIcon(), nil)
			del := widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), nil)
			del.Importance = widget.LowImportance
			return container.NewBorder(nil, nil, nil, container.NewHBox(replace, del), name)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(w.secretNames) {
				return
			}
			n := w.secretNames[i]
			c := o.(*fyne.Container)
			c.Objects[0].(*widget.Label).SetText(n)
			btns := c.Objects[1].(*fyne.Container).Objects
			btns[0].(*widget.Button).OnTapped = func() { w.replaceSecret(n) }
			btns[1].(*widget.Button).OnTapped = func() { w.confirmDeleteSecret(n) }
		})
	w.secretName = widget.NewSelectEntry([]string{secrets.AnthropicAPIKey, secrets.ClaudeCodeOAuthToken, secrets.GitHubToken})
	w.secretName.SetPlaceHolder("NAME, e.g. ANTHROPIC_API_KEY")
	w.secretName.OnChanged = func(string) { w.validateSecret() }
	w.secretValue = widget.NewPasswordEntry()
	w.secretValue.SetPlaceHolder("value (kept in the keyring, never shown)")
	w.secretValue.OnChanged = func(string) { w.validateSecret() }
	w.secretSave = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), w.saveSecret)
	w.secretSave.Importance = widget.HighImportance
	w.secretSave.Disable()
	w.secretStatus = statusLabel()
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Name"), w.secretName,
		widget.NewLabel("Value"), w.secretValue,
	)
	top := note("Secrets are handed to every session's agent as environment variables. Values are stored only in the " +
		keyringName + "; Sandbar shows their names, never their values, and redacts them from logs.")
	bottom := container.NewVBox(widget.NewSeparator(), heading("Add or replace a secret"), form,
		container.NewHBox(layout.NewSpacer(), w.secretSave), w.secretStatus)
	return container.NewBorder(top, bottom, nil, nil, w.secretList)
}

func (w *settingsWindow) loadSecrets() {
	s := w.u.Settings
	if s == nil {
		return
	}
	w.u.background(func(ctx context.Context) {
		names, err := s.SecretNames(ctx)
		w.u.post(func() {
			if err != nil {
				setStatus(w.secretStatus, widget.DangerImportance, sentence(err.Error()))
				return
			}
			sort.Strings(names)
			w.secretNames = names
			w.secretList.Refresh()
		})
	})
}

func (w *settingsWindow) validateSecret() {
	name := strings.TrimSpace(w.secretName.Text)
	switch {
	case name == "" && w.secretValue.Text == "":
		setStatus(w.secretStatus, widget.MediumImportance, "")
	case name != "" && !secrets.ValidName(name):
		// The name is not repeated: a pasted token would show.
		setStatus(w.secretStatus, widget.DangerImportance, "A name is letters, digits and _, not starting with a digit, at most 64 characters: it becomes an environment variable.")
	case len(w.secretValue.Text) > secrets.MaxValueLen:
		setStatus(w.secretStatus, widget.DangerImportance, fmt.Sprintf("The value is longer than %d KiB.", secrets.MaxValueLen>>10))
	default:
		setStatus(w.secretStatus, widget.MediumImportance, "")
	}
	if w.u.Settings != nil && secrets.ValidName(name) && w.secretValue.Text != "" && len(w.secretValue.Text) <= secrets.MaxValueLen {
		w.secretSave.Enable()
	} else {
		w.secretSave.Disable()
	}
}

func (w *settingsWindow) replaceSecret(name string) {
	w.secretName.SetText(name)
	w.secretValue.SetText("")
	w.win.Canvas().Focus(w.secretValue)
	setStatus(w.secretStatus, widget.MediumImportance, "Type the new value of "+name+" and press Save.")
}

func (w *settingsWindow) saveSecret() {
	name, value := strings.TrimSpace(w.secretName.Text), w.secretValue.Text
	if !secrets.ValidName(name) || value == "" {
		return
	}
	w.secretSave.Disable()
	replacing := slices.Contains(w.secretNames, name)
	w.u.background(func(ctx context.Context) {
		err := w.u.Settings.SetSecret(ctx, name, value)
		w.u.post(func() {
			if err != nil {
				setStatus(w.secretStatus, widget.DangerImportance, sentence(err.Error()))
				w.validateSecret()
				return
			}
			w.secretName.SetText("")
			w.secretValue.SetText("")
			verb := "Saved"
			if replacing {
				verb = "Replaced"
			}
			setStatus(w.secretStatus, widget.SuccessImportance, verb+" "+name+".")
			w.loadSecrets()
		})
	})
}

func (w *settingsWindow) confirmDeleteSecret(name string) {
	d := dialog.NewConfirm("Delete "+name+"?",
		"Its value is removed from the "+keyringName+". Sessions started afterwards will not have it.",
		func(ok bool) {
			if !ok {
				return
			}
			w.u.background(func(ctx context.Context) {
				err := w.u.Settings.DeleteSecret(ctx, name)
				w.u.post(func() {
					if err != nil {
						setStatus(w.secretStatus, widget.DangerImportance, sentence(err.Error()))
						return
					}
					setStatus(w.secretStatus, widget.SuccessImportance, "Deleted "+name+".")
					w.loadSecrets()
				})
			})
		}, w.win)
	d.SetConfirmText("Delete")
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}
