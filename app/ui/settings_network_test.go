package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// networkSettings opens Settings on its Network tab, the rules loaded.
func (h *appHarness) networkSettings(t *testing.T) *settingsWindow {
	t.Helper()
	w := h.settings(t)
	selectTab(t, w.tabs, tabNetwork)
	h.q.WaitFor(t, 5*time.Second, "the network rules and the ports setting read", func() bool {
		return w.netRules.loaded && !w.publish.Disabled()
	})
	return w
}

func TestSettingsNetworkRulesAreCheckedBeforeSaving(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	p := h.addProject(t, "rules")
	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	const good = "allow api.example.com\n"
	if err := h.env.Manager.SetNetworkRules(ctx, session.ScopeSandbar, "", good, 0); err != nil {
		t.Fatal(err)
	}
	w := h.networkSettings(t)
	e := w.netRules
	if e.text.Text != good || !e.save.Disabled() || e.mode.Selected != "Allowlist (default)" {
		t.Fatalf("loaded %q, Save disabled %v, mode %q; want the stored rules, nothing to save, the default mode", e.text.Text, e.save.Disabled(), e.mode.Selected)
	}
	if !shows(w.win, "allow HOST[:PORTS][/tcp|udp]") {
		t.Error("the tab does not say how to write a rule")
	}

	// A bad line is named, and nothing is saved.
	retype(e.text, "allow api.example.com\nallow exa mple.com\n")
	test.Tap(e.save)
	h.q.WaitFor(t, 5*time.Second, "the bad line shown", func() bool { return e.status.Visible() && e.status.Text != "" })
	if !strings.Contains(e.status.Text, "Line 2") || !strings.Contains(e.status.Text, "a host has no spaces") || !strings.Contains(e.status.Text, "nothing changed") {
		t.Errorf("status = %q, want line 2 named with what is wrong", e.status.Text)
	}
	if e.text.CursorRow != 1 {
		t.Errorf("the cursor is on row %d, want the bad line's (1)", e.text.CursorRow)
	}
	if v, _ := h.env.Manager.NetworkRules(ctx, session.ScopeSandbar, ""); v != good {
		t.Errorf("after a refused save the rules are %q, want %q", v, good)
	}
	if e.save.Disabled() {
		t.Error("Save is disabled after a refusal: the text can be fixed and saved")
	}

	// The mode select writes the mode line, and the text's mode line
	// moves the select.
	e.mode.SetSelected("Open")
	if !strings.HasPrefix(e.text.Text, "mode open\n") {
		t.Errorf("choosing Open left the text %q", e.text.Text)
	}
	retype(e.text, "mode off\nallow api.example.com:8443\n")
	if e.mode.Selected != "Off" || !strings.HasPrefix(e.hint.Text, "Off") {
		t.Errorf("a mode off line shows %q (%q)", e.mode.Selected, e.hint.Text)
	}
	retype(e.text, "mode open\nallow api.example.com:8443\n")
	test.Tap(e.save)
	h.q.WaitFor(t, 5*time.Second, "the rules saved", func() bool { return strings.HasPrefix(e.status.Text, "Saved") })
	if !strings.HasPrefix(e.status.Text, "Saved: every session follows these rules") {
		t.Errorf("status = %q, want it to say every session follows them", e.status.Text)
	}
	if v, _ := h.env.Manager.NetworkRules(ctx, session.ScopeSandbar, ""); v != "mode open\nallow api.example.com:8443\n" {
		t.Errorf("saved rules = %q", v)
	}
	// The running session follows them, with no restart.
	if sum, err := h.env.Manager.NetSummary(ctx, s.ID); err != nil || sum.Mode != session.NetworkOpen {
		t.Errorf("the running session's policy: %+v, %v; want mode open", sum, err)
	}
	if !e.save.Disabled() {
		t.Error("Save is enabled with nothing new to save")
	}
}

func TestSettingsPublishPorts(t *testing.T) {
	h := newAppHarness(t)
	w := h.networkSettings(t)
	if !w.publish.Checked {
		t.Fatal("ports are published by default, but the check is off")
	}
	test.Tap(w.publish)
	h.q.WaitFor(t, 5*time.Second, "the setting saved", func() bool { return strings.HasPrefix(w.publishStatus.Text, "Saved") })
	if v, _, _ := h.env.Store.Setting(context.Background(), store.SettingPublishPorts); v != "off" {
		t.Errorf("%s = %q, want off", store.SettingPublishPorts, v)
	}
	test.Tap(w.publish)
	h.q.WaitFor(t, 5*time.Second, "the setting saved again", func() bool {
		v, _, _ := h.env.Store.Setting(context.Background(), store.SettingPublishPorts)
		return v != "off" && strings.Contains(w.publishStatus.Text, "are published")
	})
}

// TestSettingsSecretBroker: a secret can be bound to a host (and
// unbound) in Settings, checked as typed; the model API's are always
// brokered and take no host.
func TestSettingsSecretBroker(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	h.setSecret(t, "GITHUB_TOKEN", "ghp_plain")
	h.setSecret(t, "ANTHROPIC_API_KEY", "sk-ant-broker-test")
	w := h.settings(t)
	h.q.WaitFor(t, 5*time.Second, "the secrets listed", func() bool { return len(w.secretNames) == 2 })
	if !shows(w.win, "enters the VM of the projects that choose it") || !shows(w.win, "brokered to the model API") {
		t.Errorf("the list does not say where each secret goes: %q", texts(w.win.Canvas().Content()))
	}

	// The model API's credential takes no host.
	retype(w.secretName, "ANTHROPIC_API_KEY")
	if !w.secretHost.Disabled() || !strings.Contains(w.secretHostNote.Text, "always brokered to the model API") {
		t.Errorf("ANTHROPIC_API_KEY: host disabled %v, note %q", w.secretHost.Disabled(), w.secretHostNote.Text)
	}

	// Bind GITHUB_TOKEN to a host, keeping its value.
	w.replaceSecret("GITHUB_TOKEN")
	if w.secretHost.Disabled() || w.secretHost.Text != "" {
		t.Fatalf("GITHUB_TOKEN: host disabled %v, %q", w.secretHost.Disabled(), w.secretHost.Text)
	}
	test.Type(w.secretHost, "not a host!")
	if !w.secretSave.Disabled() || !strings.Contains(w.secretStatus.Text, "is not a host name") {
		t.Errorf("a bad host: Save disabled %v, status %q", w.secretSave.Disabled(), w.secretStatus.Text)
	}
	retype(w.secretHost, "GitHub.com")
	if w.secretSave.Disabled() {
		t.Fatalf("a good host, no new value: Save disabled (%q)", w.secretStatus.Text)
	}
	test.Tap(w.secretSave)
	h.q.WaitFor(t, 5*time.Second, "the binding saved", func() bool {
		return strings.HasPrefix(w.secretStatus.Text, "GITHUB_TOKEN is now brokered to github.com (Authorization)")
	})
	if b, _ := h.env.Store.SecretBrokers(ctx); b["GITHUB_TOKEN"] != (store.SecretBroker{Host: "github.com", Header: "Authorization"}) {
		t.Errorf("bindings = %v", b)
	}
	if v, _ := h.secrets.get("GITHUB_TOKEN"); v != "ghp_plain" {
		t.Errorf("changing the binding changed the value to %q", v)
	}
	h.q.WaitFor(t, 5*time.Second, "the list saying so", func() bool { return shows(w.win, "brokered to github.com (Authorization)") })

	// A new secret with a host and header of its own.
	retype(w.secretName, "REGISTRY_TOKEN")
	retype(w.secretValue, "tok-123")
	retype(w.secretHost, "registry.example.com")
	retype(w.secretHeader, "X-Registry-Token")
	test.Tap(w.secretSave)
	h.q.WaitFor(t, 5*time.Second, "the new secret saved", func() bool {
		return w.secretStatus.Text == "Saved REGISTRY_TOKEN, brokered to registry.example.com (X-Registry-Token)."
	})

	// Clearing the host makes GITHUB_TOKEN plain again.
	w.replaceSecret("GITHUB_TOKEN")
	if w.secretHost.Text != "github.com" || w.secretHeader.Text != "Authorization" {
		t.Errorf("Replace… shows host %q header %q", w.secretHost.Text, w.secretHeader.Text)
	}
	w.secretHost.SetText("")
	w.secretHeader.SetText("")
	test.Tap(w.secretSave)
	h.q.WaitFor(t, 5*time.Second, "the binding removed", func() bool { return strings.HasPrefix(w.secretStatus.Text, "GITHUB_TOKEN is no longer brokered") })
	if b, _ := h.env.Store.SecretBrokers(ctx); len(b) != 1 || b["REGISTRY_TOKEN"].Host != "registry.example.com" {
		t.Errorf("bindings = %v, want REGISTRY_TOKEN's only", b)
	}
}

// TestSettingsShowTheDefaultAllowlist: the rules box's placeholder reads
// as a hint, not as a rule already there, and Default allowlist… shows
// the hosts every session in Allowlist mode reaches (it was shown
// nowhere).
func TestSettingsShowTheDefaultAllowlist(t *testing.T) {
	h := newAppHarness(t)
	w := h.networkSettings(t)
	e := w.netRules
	if e.text.Text != "" {
		t.Fatalf("a fresh data directory has rules %q", e.text.Text)
	}
	ph := e.text.PlaceHolder
	if f, err := policy.Parse([]byte(ph), policy.SourceSandbar); err == nil {
		t.Errorf("the placeholder %q parses as rules (%d of them): it reads as if they were there", ph, len(f.Rules))
	}
	if !strings.Contains(ph, "default allowlist") || !strings.Contains(ph, "Type") {
		t.Errorf("the placeholder %q does not say what applies and what to do", ph)
	}

	test.Tap(e.defaults)
	top := w.win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("Default allowlist… showed nothing")
	}
	shown := strings.Join(texts(top), "\n")
	for _, want := range []string{"allow api.anthropic.com", "allow github.com read", "allow proxy.golang.org read", "defaults off"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the default allowlist shown lacks %q:\n%s", want, shown)
		}
	}
	test.Tap(overlayButton(t, w.win, "Close"))
	if w.win.Canvas().Overlays().Top() != nil {
		t.Error("Close left the default allowlist up")
	}
}
