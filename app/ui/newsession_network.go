package ui

import (
	"context"
	"strings"

	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
)

// New Session's network mode: Allowlist, Open or Off. Untouched, it
// shows what the project's or Sandbar's settings give, and leaves the
// mode to them.

// setNetwork selects mode m without counting it as the person's choice.
func (w *newSessionWindow) setNetwork(m policy.Mode) {
	w.settingNet = true
	w.network.SetSelected(modeName(m))
	w.settingNet = false
}

// loadNetworkDefault reads the mode the settings give p's sessions: its
// mode line, else Sandbar's, else allowlist. Until the person chooses,
// the choice follows it.
func (w *newSessionWindow) loadNetworkDefault(p store.Project) {
	u := w.u
	u.background(func(ctx context.Context) {
		m, from := policy.ModeAllowlist, "the default"
		if t, err := u.Backend.NetworkRules(ctx, session.ScopeSandbar, ""); err == nil {
			if tm := textMode(t, policy.SourceSandbar); tm != "" {
				m, from = tm, "Sandbar's settings"
			}
		}
		// The path names the project unambiguously.
		if t, err := u.Backend.NetworkRules(ctx, session.ScopeProject, p.Path); err == nil {
			if tm := textMode(t, policy.SourceProject); tm != "" {
				m, from = tm, "the project's settings"
			}
		}
		u.post(func() {
			if cur, ok := w.selected(); !ok || cur.ID != p.ID {
				return
			}
			w.netDefault, w.netFrom = m, from
			if !w.netEdited {
				w.setNetwork(m)
			}
			w.networkChanged()
		})
	})
}

// networkChanged says what the chosen mode means, and whose it is.
func (w *newSessionWindow) networkChanged() {
	if w.networkHint == nil {
		return
	}
	var m policy.Mode
	switch w.network.Selected {
	case modeName(policy.ModeOpen):
		m = policy.ModeOpen
	case modeName(policy.ModeOff):
		m = policy.ModeOff
	default:
		m = policy.ModeAllowlist
	}
	text := modeWords(m)
	switch {
	case !w.netEdited && w.netFrom == "the default":
		text += " The default; a repository's .sandbar/network may narrow it."
	case !w.netEdited:
		text += " From " + w.netFrom + "; a repository's .sandbar/network may narrow it."
	case m != w.netDefault:
		verb := " give "
		if w.netFrom == "the default" {
			verb = " is "
		}
		text += " For this session only: " + w.netFrom + verb + strings.ToLower(modeName(w.netDefault)) + "."
	}
	w.networkHint.SetText(text)
}
