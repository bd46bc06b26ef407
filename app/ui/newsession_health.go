package ui

import (
	"errors"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/policy"
	"sandbar/app/session"
)

// New Session's answer to a start refused because Claude Code could not
// reach its model API (session.ErrNoModelAPI): the refusal's words, and
// a button that turns the session's network on (Allowlist, which the
// model API needs no rule for) and starts again.

// apiFixLabel is the button's text.
const apiFixLabel = "Turn the network on and start"

func (w *newSessionWindow) newAPIFix() *widget.Button {
	b := widget.NewButtonWithIcon(apiFixLabel, theme.MediaPlayIcon(), func() {
		w.netEdited = true
		w.network.SetSelected(modeName(policy.ModeAllowlist))
		w.submit()
	})
	b.Importance = widget.HighImportance
	b.Hide()
	return b
}

// offerAPIFix shows the button when err says the model API could not be
// reached and the session's own choice of network can change that: its
// network was off, or its mode left to settings that turn it off. A
// session that asked for a network and still could not reach the API is
// kept out by a rule, which the refusal names; no choice here mends it.
func (w *newSessionWindow) offerAPIFix(err error, o session.Options) {
	if !errors.Is(err, session.ErrNoModelAPI) {
		w.apiFix.Hide()
		return
	}
	if o.NoNetwork || o.Network == session.NetworkOff || o.Network == "" {
		w.apiFix.Show()
		return
	}
	w.apiFix.Hide()
}
