package ui

import (
	"context"
	"errors"
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
	"sandbar/app/session"
	"sandbar/app/store"
)

func (w *settingsWindow) secretsTab() fyne.CanvasObject {
	w.secretList = widget.NewList(
		func() int { return len(w.secretNames) },
		func() fyne.CanvasObject {
			name := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
			name.Truncation = fyne.TextTruncateEllipsis
			how := widget.NewLabel("")
			how.Importance = widget.LowImportance
			how.Truncation = fyne.TextTruncateEllipsis
			replace := widget.NewButtonWithIcon("Replace…", theme.DocumentCreateIcon(), nil)
			del := widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), nil)
			del.Importance = widget.LowImportance
			return container.NewBorder(nil, nil, nil, container.NewHBox(replace, del), container.New(columns{2, 3}, name, how))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(w.secretNames) {
				return
			}
			n := w.secretNames[i]
			c := o.(*fyne.Container)
			text := c.Objects[0].(*fyne.Container).Objects
			text[0].(*widget.Label).SetText(n)
			text[1].(*widget.Label).SetText(secretHow(n, w.secretBrokers))
			btns := c.Objects[1].(*fyne.Container).Objects
			btns[0].(*widget.Button).OnTapped = func() { w.replaceSecret(n) }
			btns[1].(*widget.Button).OnTapped = func() { w.confirmDeleteSecret(n) }
		})
	w.secretName = newSelectEntry([]string{secrets.AnthropicAPIKey, secrets.ClaudeCodeOAuthToken, secrets.GitHubToken})
	w.secretName.SetPlaceHolder("NAME, e.g. ANTHROPIC_API_KEY")
	w.secretName.OnChanged = func(string) { w.validateSecret() }
	w.secretValue = newPasswordEntry()
	w.secretValue.SetPlaceHolder("value (kept in the keyring, never shown)")
	w.secretValue.OnChanged = func(string) { w.validateSecret() }
	w.secretHost = newEntry()
	w.secretHost.SetPlaceHolder("optional: the one host it may go to, e.g. api.example.com")
	w.secretHost.OnChanged = func(string) { w.validateSecret() }
	w.secretHeader = newEntry()
	w.secretHeader.SetPlaceHolder("Authorization")
	w.secretHeader.OnChanged = func(string) { w.validateSecret() }
	w.secretHostNote = note("")
	w.secretSave = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), w.saveSecret)
	w.secretSave.Importance = widget.HighImportance
	w.secretSave.Disable()
	w.secretStatus = statusLabel()
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Name"), w.secretName,
		widget.NewLabel("Value"), w.secretValue,
		widget.NewLabel("Brokered to"), w.secretHost,
		widget.NewLabel("In header"), w.secretHeader,
	)
	top := note("A session gets the model API's credential, which Sandbar's broker keeps out of the VM, and the secrets its project chooses " +
		"(Project Settings). Values are stored only in the " + keyringName + "; Sandbar shows their names, never their values, and redacts them from logs.")
	bottom := container.NewVBox(widget.NewSeparator(), heading("Add or replace a secret"), form, w.secretHostNote,
		container.NewHBox(layout.NewSpacer(), w.secretSave), w.secretStatus)
	w.validateSecret()
	return container.NewBorder(top, bottom, nil, nil, w.secretList)
}

// secretHow says where a secret's value goes.
func secretHow(name string, brokers map[string]store.SecretBroker) string {
	if b, ok := brokers[name]; ok && b.Host != "" {
		return "brokered to " + b.Host + " (" + b.Header + "): the VM holds a stand-in"
	}
	if session.ModelCredential(name) {
		return "brokered to the model API: never in a VM"
	}
	return "enters the VM of the projects that choose it"
}

func (w *settingsWindow) loadSecrets() {
	s := w.u.Settings
	if s == nil {
		return
	}
	w.u.background(func(ctx context.Context) {
		names, err := s.SecretNames(ctx)
		var brokers map[string]store.SecretBroker
		if err == nil {
			brokers, err = s.SecretBrokers(ctx)
		}
		w.u.post(func() {
			if err != nil {
				setStatus(w.secretStatus, widget.DangerImportance, sentence(err.Error()))
				return
			}
			sort.Strings(names)
			w.secretNames, w.secretBrokers = names, brokers
			w.secretList.Refresh()
			w.checkSecret(false)
		})
	})
}

// secretBinding reads the host and header typed for name: the binding,
// or why it cannot be one.
func (w *settingsWindow) secretBinding(name string) (store.SecretBroker, error) {
	host, header := strings.TrimSpace(w.secretHost.Text), strings.TrimSpace(w.secretHeader.Text)
	switch {
	case session.ModelCredential(name):
		return store.SecretBroker{}, nil
	case host == "" && header != "":
		return store.SecretBroker{}, errors.New("a header goes with a host: give the host the secret may go to, or clear the header")
	case host == "":
		return store.SecretBroker{}, nil
	}
	b, err := session.SecretBinding(name, host, header)
	if err != nil {
		return b, errors.New(strings.TrimSuffix(err.Error(), ": "+session.ErrBadOptions.Error()))
	}
	return b, nil
}

// validateSecret checks the form as it is typed.
func (w *settingsWindow) validateSecret() { w.checkSecret(true) }

// checkSecret says what is wrong with the form and enables Save when
// nothing is; typed false (the list was reread) keeps a success shown.
func (w *settingsWindow) checkSecret(typed bool) {
	name := strings.TrimSpace(w.secretName.Text)
	model := session.ModelCredential(name)
	if model {
		w.secretHost.Disable()
		w.secretHeader.Disable()
		w.secretHostNote.SetText(name + " is always brokered to the model API: the VM never holds it.")
	} else {
		w.secretHost.Enable()
		w.secretHeader.Enable()
		w.secretHostNote.SetText("With a host, the VM holds a stand-in and Sandbar puts the value in HTTPS requests to that host alone; without one, the value enters the VM of the projects that choose it.")
	}
	bind, bindErr := w.secretBinding(name)
	recorded := slices.Contains(w.secretNames, name)
	rebind := recorded && !model && bind != w.secretBrokers[name]
	clearable := typed || w.secretStatus.Importance != widget.SuccessImportance
	switch {
	case name == "" && w.secretValue.Text == "" && w.secretHost.Text == "":
		if clearable {
			setStatus(w.secretStatus, widget.MediumImportance, "")
		}
	case name != "" && !secrets.ValidName(name):
		// The name is not repeated: a pasted token would show.
		setStatus(w.secretStatus, widget.DangerImportance, "A name is letters, digits and _, not starting with a digit, at most 64 characters: it becomes an environment variable.")
	case len(w.secretValue.Text) > secrets.MaxValueLen:
		setStatus(w.secretStatus, widget.DangerImportance, fmt.Sprintf("The value is longer than %d KiB.", secrets.MaxValueLen>>10))
	case bindErr != nil:
		setStatus(w.secretStatus, widget.DangerImportance, sentence(bindErr.Error()))
	case rebind && w.secretValue.Text == "":
		setStatus(w.secretStatus, widget.MediumImportance, "Save changes where "+name+" goes and keeps its value.")
	default:
		if clearable {
			setStatus(w.secretStatus, widget.MediumImportance, "")
		}
	}
	ok := w.u.Settings != nil && secrets.ValidName(name) && bindErr == nil && len(w.secretValue.Text) <= secrets.MaxValueLen &&
		(w.secretValue.Text != "" || rebind)
	setEnabled(w.secretSave, ok)
}

func (w *settingsWindow) replaceSecret(name string) {
	w.secretName.SetText(name)
	w.secretValue.SetText("")
	b := w.secretBrokers[name]
	w.secretHost.SetText(b.Host)
	w.secretHeader.SetText(b.Header)
	w.win.Canvas().Focus(w.secretValue)
	setStatus(w.secretStatus, widget.MediumImportance, "Type the new value of "+name+" and press Save, or change only where it goes.")
}

func (w *settingsWindow) saveSecret() {
	name, value := strings.TrimSpace(w.secretName.Text), w.secretValue.Text
	bind, err := w.secretBinding(name)
	if !secrets.ValidName(name) || err != nil {
		return
	}
	model := session.ModelCredential(name)
	replacing := slices.Contains(w.secretNames, name)
	if value == "" && (!replacing || model) {
		return
	}
	w.secretSave.Disable()
	w.u.background(func(ctx context.Context) {
		var err error
		if value != "" {
			err = w.u.Settings.SetSecret(ctx, name, value)
		}
		if err == nil && !model {
			err = w.u.Settings.SetSecretBroker(ctx, name, bind)
		}
		w.u.post(func() {
			if err != nil {
				setStatus(w.secretStatus, widget.DangerImportance, sentence(err.Error()))
				w.validateSecret()
				return
			}
			for _, e := range []*widget.Entry{&w.secretValue.Entry, &w.secretHost.Entry, &w.secretHeader.Entry} {
				e.SetText("")
			}
			w.secretName.SetText("")
			var msg string
			switch {
			case value == "" && bind.Host != "":
				msg = name + " is now brokered to " + bind.Host + " (" + bind.Header + "): the VM holds a stand-in."
			case value == "":
				msg = name + " is no longer brokered: it enters the VM of the projects that choose it."
			default:
				msg = "Saved " + name
				if replacing {
					msg = "Replaced " + name
				}
				if bind.Host != "" {
					msg += ", brokered to " + bind.Host + " (" + bind.Header + ")"
				}
				msg += "."
			}
			setStatus(w.secretStatus, widget.SuccessImportance, msg)
			w.loadSecrets()
			if value != "" {
				w.u.secretSaved(name)
			}
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
