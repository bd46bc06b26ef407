package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/secrets"
)

// TestNewSessionMissingKey: Start refused for want of the key offers the
// way to add it, and the refusal goes once the key is saved, from
// Settings or from Welcome.
func TestNewSessionMissingKey(t *testing.T) {
	for _, via := range []string{"Settings", "Welcome"} {
		t.Run(via, func(t *testing.T) {
			h := newAppHarness(t)
			delete(h.env.Secrets, secrets.AnthropicAPIKey)
			p := h.addProject(t, "keyless")
			w := h.newSession(t, p.ID)
			if w.agent.Selected != agentClaude || w.start.Disabled() {
				t.Fatalf("agent %q, Start enabled %v", w.agent.Selected, !w.start.Disabled())
			}
			test.Tap(w.start)
			h.q.WaitFor(t, 10*time.Second, "Start refused for want of the key", func() bool { return !w.starting && w.status.Text != "Starting…" })
			if w.status.Text != missingKeyText || !w.keyBox.Visible() || !sees(w.win, "Add your Anthropic key…") {
				t.Fatalf("New Session shows %q (button shown %v); want %q and the button", w.status.Text, w.keyBox.Visible(), missingKeyText)
			}
			if sees(w.win, "sandbar secrets set") {
				t.Error("New Session sends a person at a window to the CLI")
			}

			const key = "sk-ant-api03-newsession"
			switch via {
			case "Settings":
				test.Tap(w.addKey)
				sw := h.u.settingsWin
				if sw == nil {
					t.Fatal("the button opened no Settings window")
				}
				if sw.tabs.Selected().Text != "Secrets" || sw.secretName.Text != secrets.AnthropicAPIKey || sw.win.Canvas().Focused() != sw.secretValue {
					t.Fatalf("Settings opened on %q with name %q, focus %v; want Secrets, ANTHROPIC_API_KEY, the value field",
						sw.tabs.Selected().Text, sw.secretName.Text, sw.win.Canvas().Focused())
				}
				test.Type(sw.secretValue, key)
				test.Tap(sw.secretSave)
			case "Welcome":
				h.u.Settings = &keyPrefs{Prefs: h.prefs}
				h.u.ShowFirstRun()
				fw := h.u.firstRunWin
				test.Type(fw.key.entry, key)
				test.Tap(fw.key.save)
			}
			h.q.WaitFor(t, 5*time.Second, "the missing-key error gone", func() bool { return !w.keyBox.Visible() })
			if v, _ := h.secrets.get(secrets.AnthropicAPIKey); v != key {
				t.Errorf("the keyring holds %q", v)
			}
			if sees(w.win, "needs your Anthropic key") || !sees(w.win, "Your Anthropic key is saved: press Start.") || w.start.Disabled() {
				t.Errorf("after the key was saved New Session shows %q, Start enabled %v", w.status.Text, !w.start.Disabled())
			}
		})
	}
}
