package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/vm"
)

// newSession opens New Session for project id and waits for its load.
func (h *appHarness) newSession(t *testing.T, id int64) *newSessionWindow {
	t.Helper()
	h.u.ShowNewSession(id)
	w := h.u.newSessWin
	h.q.WaitFor(t, 5*time.Second, "New Session's first load", func() bool { return w.loaded })
	return w
}

// retype replaces an entry's text the way a person does.
func retype(e interface {
	fyne.Focusable
	SetText(string)
}, s string) {
	e.SetText("")
	test.Type(e, s)
}

func TestNewSessionValidates(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "checked")
	w := h.newSession(t, p.ID)

	if got, _ := w.selected(); got.ID != p.ID || w.base.Text != "main" {
		t.Fatalf("project %v, base %q; want %s on main", got.Name, w.base.Text, p.Name)
	}
	if w.start.Disabled() || w.problems.Text != "" {
		t.Fatalf("defaults are refused: %q", w.problems.Text)
	}
	if w.cpusLabel.Text != "2 of 4" || w.memory.Selected != "2 GiB" || !strings.Contains(w.memoryHint.Text, "of 9.6 GiB free (60% of 16.0 GiB for sessions)") {
		t.Errorf("capacity shown as %q, %q and %q, want 2 of 4, 2 GiB of 9.6 GiB free (60%% of 16 GiB)", w.cpusLabel.Text, w.memory.Selected, w.memoryHint.Text)
	}

	tests := []struct {
		name string
		set  func()
		want string
	}{
		{"disk too big", func() { retype(w.disk, "5000") }, "Disk: type a whole number of GiB from 1 to 1024"},
		{"bad timeout", func() { retype(w.timeout, "soon") }, `Timeout: "soon" is not a length of time`},
		{"empty custom command", func() { w.agent.SetSelected(agentCustom); retype(w.command, "  ") }, "type the command to run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set()
			if !w.start.Disabled() || !strings.Contains(w.problems.Text, tt.want) {
				t.Errorf("Start enabled %v, problems %q; want Start disabled and %q", !w.start.Disabled(), w.problems.Text, tt.want)
			}
			test.Tap(w.start)
			if w.starting {
				t.Error("a tap on the disabled Start started a session")
			}
			// Put it right again.
			w.memory.SetSelected("1 GiB")
			retype(w.disk, "4")
			retype(w.timeout, "90m")
			w.agent.SetSelected(agentClaude)
			if w.start.Disabled() {
				t.Fatalf("still refused after fixing: %q", w.problems.Text)
			}
		})
	}
	o, problems := w.options()
	if len(problems) > 0 || o.Timeout != 90*time.Minute || o.MemoryMiB != 1024 || o.DiskGiB != 4 || o.CPUs != 2 || o.Agent.Command != "claude" {
		t.Errorf("options = %+v, %q", o, problems)
	}
	for in, want := range map[string]time.Duration{"": 0, "45": 45 * time.Minute, "1h30m": 90 * time.Minute} {
		if d, err := parseTimeout(in); err != nil || d != want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
}

func TestNewSessionStartsCustomAgent(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "started here")
	mw := h.mainWindow(t)
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	w := h.newSession(t, p.ID)

	w.agent.SetSelected(agentCustom)
	test.Type(w.command, "echo hello from the agent")
	test.Type(w.prompt, "say hello")
	w.memory.SetSelected("1 GiB")
	w.network.SetSelected(modeName(policy.ModeOff))
	if w.start.Disabled() {
		t.Fatalf("Start is disabled: %q", w.problems.Text)
	}
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the New Session window closed and the session opened", func() bool {
		return h.u.newSessWin == nil && len(opened) == 1
	})
	s, err := h.env.Manager.Get(context.Background(), opened[0])
	if err != nil {
		t.Fatal(err)
	}
	if s.ProjectID != p.ID || s.Prompt != "say hello" || s.Limits.MemoryMiB != 1024 || s.Limits.Network ||
		s.Agent.Kind != "custom" || fmt.Sprint(s.Agent.Args) != "[-c echo hello from the agent]" {
		t.Errorf("started %+v", s)
	}
	h.q.WaitFor(t, 20*time.Second, "the session listed and stopped", func() bool {
		r := mw.byID[s.ID]
		return r != nil && r.cells.state == "finished" && shows(mw.win, "finished")
	})
}

func TestNewSessionShowsBackendErrors(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "refused")
	w := h.newSession(t, p.ID)
	// The repository goes away after the window opened: the backend's
	// error is shown inline and the form is kept.
	if err := h.env.Manager.RemoveProject(context.Background(), p.Name); err != nil {
		t.Fatal(err)
	}
	test.Type(w.prompt, "keep me")
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the backend's error shown", func() bool {
		return !w.starting && strings.Contains(w.status.Text, "No project")
	})
	if h.u.newSessWin != w || w.prompt.Text != "keep me" || w.start.Disabled() {
		t.Errorf("after a refused start: window open %v, prompt %q, Start disabled %v", h.u.newSessWin == w, w.prompt.Text, w.start.Disabled())
	}
}

func TestNewSessionBudgetFollowsRunningSessions(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "budget")
	ctx := context.Background()
	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 8192, Agent: sessiontest.Shell("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.newSession(t, p.ID)
	free := w.budget.Free() / vm.MiB
	if free != 9830-8192 {
		t.Fatalf("free = %d MiB, want %d", free, 9830-8192)
	}
	// 2 GiB, the default, does not fit: 1 GiB, the one step that does,
	// is what is offered.
	if w.memory.Selected != "1 GiB" || fmt.Sprint(w.memory.Options) != "[1 GiB]" || !strings.Contains(w.memoryHint.Text, "of 1.6 GiB free") {
		t.Errorf("with %d MiB free: memory %q of %q, hint %q; want 1 GiB, the only step, of 1.6 GiB free", free, w.memory.Selected, w.memory.Options, w.memoryHint.Text)
	}
	if w.start.Disabled() || w.problems.Visible() {
		t.Errorf("Start disabled %v, problems %q; want none", w.start.Disabled(), w.problems.Text)
	}
}

func TestNewSessionNetworkMode(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	plain := h.addProject(t, "plain")
	open := h.addProject(t, "open")
	if err := h.env.Manager.SetNetworkRules(ctx, session.ScopeProject, open.Path, "mode open\n", open.ID); err != nil {
		t.Fatal(err)
	}
	w := h.newSession(t, plain.ID)
	h.q.WaitFor(t, 5*time.Second, "the default mode shown", func() bool { return strings.Contains(w.networkHint.Text, "The default") })
	if w.network.Selected != "Allowlist" {
		t.Errorf("a project with no rules: %q, want Allowlist", w.network.Selected)
	}
	if o, _ := w.options(); o.Network != "" || o.NoNetwork {
		t.Errorf("untouched, the mode is %q (no network %v); want it left to the settings", o.Network, o.NoNetwork)
	}

	// Another project's mode line shows, until the person chooses.
	w.project.SetSelected("open")
	h.q.WaitFor(t, 5*time.Second, "the project's mode shown", func() bool {
		return w.network.Selected == "Open" && strings.Contains(w.networkHint.Text, "From the project's settings")
	})
	if o, _ := w.options(); o.Network != "" {
		t.Errorf("untouched, the mode is %q; want it left to the settings", o.Network)
	}
	for _, tt := range []struct {
		choice  string
		network string
		off     bool
	}{{"Off", session.NetworkOff, true}, {"Allowlist", session.NetworkAllowlist, false}, {"Open", session.NetworkOpen, false}} {
		w.network.SetSelected(tt.choice)
		if o, _ := w.options(); o.Network != tt.network || o.NoNetwork != tt.off {
			t.Errorf("%s: Network %q, NoNetwork %v", tt.choice, o.Network, o.NoNetwork)
		}
	}
	w.network.SetSelected("Allowlist")
	if !strings.Contains(w.networkHint.Text, "For this session only: the project's settings give open") {
		t.Errorf("a choice other than the project's: hint %q", w.networkHint.Text)
	}

	w.agent.SetSelected(agentCustom)
	test.Type(w.command, "true")
	w.memory.SetSelected("1 GiB")
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the session started", func() bool { return len(opened) == 1 })
	s, err := h.env.Manager.Get(ctx, opened[0])
	if err != nil || !s.Limits.Network || s.Limits.NetMode != session.NetworkAllowlist {
		t.Errorf("started %+v, %v; want the network on in mode allowlist", s.Limits, err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
}
