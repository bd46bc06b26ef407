package ui

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/secrets"
)

// anthropicKeysURL is where a person creates an Anthropic API key.
const anthropicKeysURL = "https://console.anthropic.com/settings/keys"

// keyStep is Welcome's "Add your Anthropic key" step: a password field
// and Save, which stores the key in the keyring as ANTHROPIC_API_KEY
// (the name sessions hand Claude Code, through the broker) by the same
// SettingsBackend.SetSecret that Settings uses. The key is never shown
// back: once saved, the step says only that a key is there.
type keyStep struct {
	u   *UI
	box *fyne.Container

	mark     *widget.Label // ✓ once a credential is saved
	form     *fyne.Container
	entry    *entry
	save     *widget.Button
	done     *fyne.Container
	doneText *widget.Label
	replace  *widget.Button
	status   *widget.Label

	// saved is the model API's credential the keyring holds
	// (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN); "" when none.
	saved  string
	saving bool
	// flagged: the status shows what is wrong with the text typed, which
	// typing again clears (a keyring error stays until the next Save).
	flagged bool
}

func newKeyStep(u *UI) *keyStep {
	k := &keyStep{u: u}
	k.mark = widget.NewLabelWithStyle("", fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
	k.mark.Importance = widget.SuccessImportance
	title := heading("Add your Anthropic key")
	about := note("Claude Code, the agent sessions run, calls Anthropic's API with your key. Sandbar keeps it in the " + keyringName +
		" and never puts it in a VM: its broker adds the key to requests to the API alone.")
	link := widget.NewHyperlink("Create a key at console.anthropic.com", nil)
	link.URL, _ = url.Parse(anthropicKeysURL)

	k.entry = newPasswordEntry()
	k.entry.SetPlaceHolder("sk-ant-… (paste your key)")
	k.entry.OnChanged = func(string) { k.validate() }
	k.entry.OnSubmitted = func(string) { k.submit() }
	k.save = widget.NewButtonWithIcon("Save key", theme.DocumentSaveIcon(), k.submit)
	k.save.Importance = widget.HighImportance
	k.form = container.NewBorder(nil, nil, nil, k.save, k.entry)

	k.doneText = widget.NewLabel("")
	k.doneText.Wrapping = fyne.TextWrapWord
	k.replace = widget.NewButtonWithIcon("Replace…", theme.DocumentCreateIcon(), k.showForm)
	k.replace.Importance = widget.LowImportance
	k.done = container.NewBorder(nil, nil, nil, k.replace, k.doneText)
	k.done.Hide()
	k.status = statusLabel()

	markBox := container.NewGridWrap(fyne.NewSquareSize(theme.IconInlineSize()+theme.Padding()), k.mark)
	k.box = container.NewVBox(container.NewBorder(nil, nil, markBox, nil, title), about,
		container.NewHBox(link, layout.NewSpacer()), k.form, k.done, k.status)
	if u.Settings == nil {
		k.entry.Disable()
		setStatus(k.status, widget.MediumImportance, "No keyring is connected here: run `sandbar secrets set ANTHROPIC_API_KEY` in a terminal.")
	}
	k.validate()
	return k
}

// load asks the keyring which credentials it holds, off the UI
// goroutine.
func (k *keyStep) load() {
	s := k.u.Settings
	if s == nil {
		return
	}
	k.u.background(func(ctx context.Context) {
		names, err := s.SecretNames(ctx)
		k.u.post(func() {
			if err != nil {
				setStatus(k.status, widget.DangerImportance, sentence(err.Error()))
				return
			}
			for _, n := range []string{secrets.AnthropicAPIKey, secrets.ClaudeCodeOAuthToken} {
				if slices.Contains(names, n) {
					k.setSaved(n)
					return
				}
			}
		})
	})
}

// setSaved marks the step done: the keyring holds name, a credential of
// the model API. The form folds away; Replace brings it back.
func (k *keyStep) setSaved(name string) {
	k.saved = name
	k.mark.SetText("Done")
	if name == secrets.ClaudeCodeOAuthToken {
		k.doneText.SetText("A Claude Code token (" + name + ") is saved in the " + keyringName + ": sessions use it.")
	} else {
		k.doneText.SetText("Your Anthropic key is saved in the " + keyringName + ".")
	}
	k.entry.SetText("")
	k.form.Hide()
	k.done.Show()
	k.box.Refresh()
}

// showForm brings the field back to replace the saved key.
func (k *keyStep) showForm() {
	k.done.Hide()
	k.form.Show()
	setStatus(k.status, widget.MediumImportance, "Paste the new key and press Save key; the one saved stays until you do.")
	if c := fyne.CurrentApp().Driver().CanvasForObject(k.entry); c != nil {
		c.Focus(k.entry)
	}
}

// value is the key as typed, without the spaces and line breaks a paste
// brings along.
func (k *keyStep) value() string { return strings.TrimSpace(k.entry.Text) }

// validate says what is wrong with the text typed, and enables Save
// when nothing is.
func (k *keyStep) validate() {
	v := k.value()
	problem := ""
	switch {
	case len(v) > secrets.MaxValueLen:
		problem = fmt.Sprintf("That is longer than %d KiB: an Anthropic key is about 100 characters.", secrets.MaxValueLen>>10)
	case strings.ContainsAny(v, " \t\r\n"):
		problem = "A key has no spaces or line breaks inside it: paste just the key."
	}
	switch {
	case problem != "":
		setStatus(k.status, widget.DangerImportance, problem)
		k.flagged = true
	case k.flagged:
		setStatus(k.status, widget.MediumImportance, "")
		k.flagged = false
	}
	setEnabled(k.save, k.u.Settings != nil && !k.saving && v != "" && problem == "")
}

// submit stores the key in the keyring off the UI goroutine. The value
// goes to SetSecret and nowhere else: errors from the keyring name the
// secret, never its value.
func (k *keyStep) submit() {
	v := k.value()
	k.validate()
	if k.save.Disabled() {
		return
	}
	k.saving = true
	k.validate()
	setStatus(k.status, widget.MediumImportance, "Saving…")
	s := k.u.Settings
	k.u.background(func(ctx context.Context) {
		err := s.SetSecret(ctx, secrets.AnthropicAPIKey, v)
		k.u.post(func() {
			k.saving = false
			if err != nil {
				setStatus(k.status, widget.DangerImportance, sentence(err.Error()))
				k.validate()
				return
			}
			setStatus(k.status, widget.SuccessImportance, "Saved. Sessions now start Claude Code with this key.")
			k.u.secretSaved(secrets.AnthropicAPIKey)
		})
	})
}
