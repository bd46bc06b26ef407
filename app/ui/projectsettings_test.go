package ui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/store"
)

// projectSettings opens a project's settings from its row in the
// Sandbar window, as a person does, and waits for them to load.
func (h *appHarness) projectSettings(t *testing.T, p store.Project) *projectSettingsWindow {
	t.Helper()
	mw := h.mainWindow(t)
	mw.win.Resize(fyne.NewSize(900, 600))
	h.q.WaitFor(t, 5*time.Second, "the project's row", func() bool {
		return slices.ContainsFunc(mw.projects, func(x store.Project) bool { return x.ID == p.ID })
	})
	var row *projectItem
	for _, it := range mw.projItems {
		if it.projectID == p.ID && it.Visible() {
			row = it
		}
	}
	if row == nil {
		t.Fatalf("no row shows project %s", p.Name)
	}
	test.Tap(row.settings)
	w := h.u.projectWins[p.ID]
	if w == nil {
		t.Fatal("the row's settings button opened no window")
	}
	h.q.WaitFor(t, 5*time.Second, "the project's settings read", func() bool { return w.loaded && w.rules != nil && w.rules.loaded })
	return w
}

func TestProjectSettingsSecrets(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	h.setSecret(t, "ANTHROPIC_API_KEY", "sk-ant-project-test")
	h.setSecret(t, "GITHUB_TOKEN", "ghp_project")
	h.setSecret(t, "NPM_TOKEN", "npm_project")
	h.prefs.SetSecretBroker(ctx, "GITHUB_TOKEN", store.SecretBroker{Host: "github.com", Header: "Authorization"})
	p := h.addProject(t, "secrets")
	// A name the project lists that is no longer set (deleted since).
	if err := h.env.Store.SetProjectSetting(ctx, p.ID, store.ProjectSecrets, "NPM_TOKEN\nGONE_TOKEN"); err != nil {
		t.Fatal(err)
	}
	w := h.projectSettings(t, p)
	if !strings.Contains(w.win.Title(), "secrets") {
		t.Errorf("title %q does not name the project", w.win.Title())
	}

	model := w.checks["ANTHROPIC_API_KEY"]
	if model == nil || !model.Checked || !model.Disabled() || !shows(w.win, "always: brokered to the model API, never in the VM") {
		t.Errorf("the model API's key is not shown as always given: %+v", model)
	}
	if c := w.checks["NPM_TOKEN"]; c == nil || !c.Checked || c.Disabled() {
		t.Errorf("NPM_TOKEN, which the project lists, is not ticked: %+v", c)
	}
	if c := w.checks["GITHUB_TOKEN"]; c == nil || c.Checked {
		t.Errorf("GITHUB_TOKEN is ticked, or missing: %+v", c)
	}
	if !shows(w.win, "brokered to github.com (Authorization)") || !shows(w.win, "enters the VM") {
		t.Errorf("the rows do not say where each secret goes: %q", texts(w.win.Canvas().Content()))
	}
	// Only recorded secrets can be ticked: the gone one has no check,
	// and the window says Save drops it.
	if w.checks["GONE_TOKEN"] != nil || !strings.Contains(w.secretsNote.Text, "GONE_TOKEN, no longer set") {
		t.Errorf("GONE_TOKEN: check %v, note %q", w.checks["GONE_TOKEN"] != nil, w.secretsNote.Text)
	}
	if w.secretsSave.Disabled() {
		t.Error("Save is disabled though saving would drop GONE_TOKEN")
	}

	test.Tap(w.checks["GITHUB_TOKEN"])
	test.Tap(w.secretsSave)
	h.q.WaitFor(t, 5*time.Second, "the choice saved", func() bool { return strings.HasPrefix(w.secretsStatus.Text, "Saved") })
	if got, err := h.env.Manager.ProjectSecrets(ctx, p.ID); err != nil || !slices.Equal(got, []string{"GITHUB_TOKEN", "NPM_TOKEN"}) {
		t.Errorf("the project's secrets are %q, %v; want GITHUB_TOKEN and NPM_TOKEN, GONE_TOKEN dropped", got, err)
	}
	if !strings.Contains(w.secretsStatus.Text, "GITHUB_TOKEN, NPM_TOKEN and the model API's credential") || !w.secretsSave.Disabled() || w.secretsNote.Visible() {
		t.Errorf("after saving: status %q, Save disabled %v, note %q", w.secretsStatus.Text, w.secretsSave.Disabled(), w.secretsNote.Text)
	}
	test.Tap(w.checks["GITHUB_TOKEN"])
	test.Tap(w.secretsSave)
	h.q.WaitFor(t, 5*time.Second, "the second choice saved", func() bool { return strings.Contains(w.secretsStatus.Text, "get NPM_TOKEN and") })

	// A session of the project gets what was saved.
	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512,
		Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", `echo "gh=${GITHUB_TOKEN:-unset} npm=${NPM_TOKEN:+set}"`}}})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
	lines, _ := h.env.Store.LastLogs(ctx, s.ID, 50)
	if !slices.ContainsFunc(lines, func(l store.LogLine) bool { return l.Text == "gh=unset npm=set" }) {
		t.Errorf("the session's agent did not get NPM_TOKEN alone: %+v", lines)
	}
}

func TestProjectSettingsNetworkRules(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	if err := h.env.Manager.SetNetworkRules(ctx, session.ScopeSandbar, "", "mode open\n", 0); err != nil {
		t.Fatal(err)
	}
	p := h.addProject(t, "rules of its own")
	w := h.projectSettings(t, p)
	selectTab(t, w.tabs, tabNetwork)
	e := w.rules
	if e.mode.Selected != "As Sandbar's settings (open)" {
		t.Errorf("mode = %q, want Sandbar's (open)", e.mode.Selected)
	}
	retype(e.text, "deny\n")
	test.Tap(e.save)
	h.q.WaitFor(t, 5*time.Second, "the bad line shown", func() bool { return strings.Contains(e.status.Text, "Line 1") })
	if v, ok, _ := h.env.Store.ProjectSetting(ctx, p.ID, store.ProjectNetwork); ok {
		t.Errorf("a refused text was saved: %q", v)
	}
	e.mode.SetSelected("Allowlist")
	retype(e.text, "mode allowlist\nallow db.example.com:5432\n")
	test.Tap(e.save)
	h.q.WaitFor(t, 5*time.Second, "the rules saved", func() bool { return strings.HasPrefix(e.status.Text, "Saved") })
	if !strings.HasPrefix(e.status.Text, "Saved: this project's sessions follow these rules") {
		t.Errorf("status = %q, want it to say the project's sessions follow them", e.status.Text)
	}
	if v, _, _ := h.env.Store.ProjectSetting(ctx, p.ID, store.ProjectNetwork); v != "mode allowlist\nallow db.example.com:5432\n" {
		t.Errorf("the project's rules are %q", v)
	}
	if v, _ := h.env.Manager.NetworkRules(ctx, session.ScopeSandbar, ""); v != "mode open\n" {
		t.Errorf("Sandbar's rules changed to %q", v)
	}
}
