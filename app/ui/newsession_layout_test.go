package ui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// at is where o is drawn in its window, and how big.
func at(o fyne.CanvasObject) (fyne.Position, fyne.Size) {
	return fyne.CurrentApp().Driver().AbsolutePositionForObject(o), o.Size()
}

// TestNewSessionCustomCommandFits: choosing "Custom command" shows its
// field between the agent and the Limits heading, never over the
// heading, in the window's own size; what does not fit scrolls.
func TestNewSessionCustomCommandFits(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "fits")
	w := h.newSession(t, p.ID)
	frame := newSettler()
	frame.settle(w.win.Canvas())
	size := w.win.Canvas().Size()
	w.agent.SetSelected(agentCustom)
	h.q.Drain()
	frame.settle(w.win.Canvas())

	cmdPos, cmdSize := at(w.command)
	headPos, _ := at(w.limitsHead)
	agentPos, agentSize := at(w.agent)
	if !w.command.Visible() || cmdSize.Height < w.command.MinSize().Height {
		t.Fatalf("the command field: shown %v, %v high (wants %v)", w.command.Visible(), cmdSize.Height, w.command.MinSize().Height)
	}
	if cmdPos.Y < agentPos.Y+agentSize.Height || cmdPos.Y+cmdSize.Height > headPos.Y {
		t.Errorf("the command field spans y %v to %v; want it below the agent (ends at %v) and above Limits (at %v)",
			cmdPos.Y, cmdPos.Y+cmdSize.Height, agentPos.Y+agentSize.Height, headPos.Y)
	}
	if got := w.win.Canvas().Size(); got != size {
		t.Errorf("the window went from %v to %v", size, got)
	}
	if c, v := w.scroll.Content.Size().Height, w.scroll.Size().Height; c > v {
		t.Errorf("the form with its command (%v high) does not fit in the window as it opened (%v): it scrolls", c, v)
	}

	// In a window too small for the form, the fields keep their sizes
	// and scroll.
	w.win.Resize(fyne.NewSize(620, 300))
	h.q.Drain()
	frame.settle(w.win.Canvas())
	if _, s := at(w.prompt); s.Height < w.prompt.MinSize().Height {
		t.Errorf("in a small window the prompt is %v high, wants %v: squeezed, not scrolled", s.Height, w.prompt.MinSize().Height)
	}
	if w.scroll.Content.Size().Height <= w.scroll.Size().Height {
		t.Errorf("in a small window the form (%v high) does not scroll in %v", w.scroll.Content.Size().Height, w.scroll.Size().Height)
	}
	_, startSize := at(w.start)
	if startPos, _ := at(w.start); startPos.Y+startSize.Height > w.win.Canvas().Size().Height {
		t.Errorf("Start, at y %v, is outside the %v-high window", startPos.Y, w.win.Canvas().Size().Height)
	}
}

// TestNewSessionNoErrorBeforeTyping: the form opens with no error, and
// choosing a custom command asks for it without calling it wrong; once
// typed and cleared, it is.
func TestNewSessionNoErrorBeforeTyping(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "quiet")
	w := h.newSession(t, p.ID)
	h.q.WaitFor(t, 5*time.Second, "the branches loaded", func() bool { return w.branchesOf == p.ID })
	noError := func(when string) {
		t.Helper()
		if w.problems.Visible() || w.status.Visible() || shows(w.win, "Agent:") {
			t.Errorf("%s: an error shows: %q %q", when, w.problems.Text, w.status.Text)
		}
	}
	noError("opened")
	w.agent.SetSelected(agentCustom)
	noError("custom command chosen")
	if !w.start.Disabled() {
		t.Error("Start is enabled with no command")
	}
	test.Type(w.command, "x")
	noError("a command typed")
	if w.start.Disabled() {
		t.Errorf("Start is disabled with a command: %q", w.problems.Text)
	}
	retype(w.command, "")
	if !w.problems.Visible() || !strings.Contains(w.problems.Text, "type the command to run") {
		t.Errorf("a command typed and cleared: problems %q (shown %v)", w.problems.Text, w.problems.Visible())
	}
}

// TestNewSessionFieldsStayPut: a problem showing moves no field, so a
// click aimed before it lands where it was aimed.
func TestNewSessionFieldsStayPut(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "still")
	w := h.newSession(t, p.ID)
	frame := newSettler()
	frame.settle(w.win.Canvas())
	w.agent.SetSelected(agentCustom)
	test.Type(w.command, "true")
	h.q.Drain()
	frame.settle(w.win.Canvas())
	fields := map[string]fyne.CanvasObject{"vCPU slider": w.cpus, "memory": w.memory, "disk": w.disk, "timeout": w.timeout,
		"network": w.network, "command": w.command, "Start": w.start}
	before := map[string]fyne.Position{}
	for name, o := range fields {
		before[name], _ = at(o)
	}
	retype(w.command, "")
	retype(w.disk, "5000")
	retype(w.timeout, "soon")
	h.q.Drain()
	frame.settle(w.win.Canvas())
	if !w.problems.Visible() || strings.Count(w.problems.Text, "\n") < 2 {
		t.Fatalf("three problems, shown as %q", w.problems.Text)
	}
	for name, o := range fields {
		if now, _ := at(o); now != before[name] {
			t.Errorf("the %s moved from %v to %v when the problems showed", name, before[name], now)
		}
	}
	// They show whole, above the buttons and inside the window.
	pp, ps := at(w.problems)
	if sp, _ := at(w.start); ps.Height < w.problems.MinSize().Height || pp.Y+ps.Height > sp.Y || pp.Y < 0 {
		t.Errorf("the problems span y %v to %v (want %v high), Start is at %v", pp.Y, pp.Y+ps.Height, w.problems.MinSize().Height, sp.Y)
	}
}

// TestNewSessionBranchesAndMemory: the base branch is picked from the
// project's branches, read from its real repository (the one checked out
// there now chosen), and memory from steps of GiB within what is free;
// the backend gets both.
func TestNewSessionBranchesAndMemory(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "picked")
	sessiontest.Git(t, p.Path, "branch", "feature/login")
	sessiontest.Git(t, p.Path, "switch", "-q", "-c", "work")
	w := h.newSession(t, p.ID)
	h.q.WaitFor(t, 5*time.Second, "the branches loaded", func() bool { return w.branchesOf == p.ID })
	if w.base.Text != "work" {
		t.Errorf("base %q, want work, the branch checked out in the repository", w.base.Text)
	}

	// The list, as drawn when the field's button is pressed.
	test.Tap(w.base.ActionItem.(fyne.Tappable))
	menu := w.win.Canvas().Overlays().Top()
	if menu == nil {
		t.Fatal("the base field's button shows no list")
	}
	var listed []string
	var item, login fyne.Tappable // the row drawing a text comes before it
	for _, o := range test.LaidOutObjects(menu) {
		if tp, ok := o.(fyne.Tappable); ok {
			item = tp
		}
		if tx, ok := o.(*canvas.Text); ok && tx.Visible() && tx.Text != "" {
			listed = append(listed, tx.Text)
			if tx.Text == "feature/login" {
				login = item
			}
		}
	}
	slices.Sort(listed)
	if want := []string{"feature/login", "master", "work"}; !slices.Equal(listed, want) && !slices.Equal(listed, []string{"feature/login", "main", "work"}) {
		t.Fatalf("the list shows %q, want %q (or main for master)", listed, want)
	}
	if login == nil {
		t.Fatal("no row of the list to tap for feature/login")
	}
	test.Tap(login)
	if w.base.Text != "feature/login" || w.win.Canvas().Overlays().Top() != nil {
		t.Errorf("after picking feature/login: base %q, list shown %v", w.base.Text, w.win.Canvas().Overlays().Top() != nil)
	}

	// 9.6 GiB free: 1, 2, 4 and 8 GiB.
	if got := strings.Join(w.memory.Options, ", "); got != "1 GiB, 2 GiB, 4 GiB, 8 GiB" || w.memory.Selected != "2 GiB" {
		t.Errorf("memory offers %q with %q chosen; want 1 to 8 GiB, 2 GiB", got, w.memory.Selected)
	}
	w.memory.SetSelected("4 GiB")
	w.agent.SetSelected(agentCustom)
	test.Type(w.command, "true")
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the session started", func() bool { return len(opened) == 1 })
	s, err := h.env.Manager.Get(context.Background(), opened[0])
	if err != nil || s.Base != "feature/login" || s.Limits.MemoryMiB != 4096 {
		t.Errorf("started on %q with %d MiB (%v); want feature/login, 4096 MiB", s.Base, s.Limits.MemoryMiB, err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
}

func TestMemorySteps(t *testing.T) {
	for _, tt := range []struct {
		free, def int
		want      []int
	}{
		{9830, 2048, []int{1024, 2048, 4096, 8192}},
		{9830, 768, []int{768, 1024, 2048, 4096, 8192}},
		{9830, 3072, []int{1024, 2048, 3072, 4096, 8192}},
		{1638, 2048, []int{1024}},
		{700, 2048, []int{256, 512}},
		{200, 2048, nil},
	} {
		if got := memorySteps(tt.free, tt.def); !slices.Equal(got, tt.want) {
			t.Errorf("memorySteps(%d, %d) = %v, want %v", tt.free, tt.def, got, tt.want)
		}
	}
	if memoryName(4096) != "4 GiB" || memoryName(512) != "512 MiB" {
		t.Errorf("names: %q, %q", memoryName(4096), memoryName(512))
	}
}

// TestNewSessionClosesFromEveryField: Esc and Ctrl+W close New Session
// whichever of its fields has focus (a click on a choice or the slider
// focuses it).
func TestNewSessionClosesFromEveryField(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "keys")
	fields := map[string]func(w *newSessionWindow) fyne.Focusable{
		"project":     func(w *newSessionWindow) fyne.Focusable { return w.project },
		"base branch": func(w *newSessionWindow) fyne.Focusable { return w.base },
		"prompt":      func(w *newSessionWindow) fyne.Focusable { return w.prompt },
		"agent":       func(w *newSessionWindow) fyne.Focusable { return w.agent },
		"command":     func(w *newSessionWindow) fyne.Focusable { return w.command },
		"vCPUs":       func(w *newSessionWindow) fyne.Focusable { return w.cpus },
		"memory":      func(w *newSessionWindow) fyne.Focusable { return w.memory },
		"disk":        func(w *newSessionWindow) fyne.Focusable { return w.disk },
		"timeout":     func(w *newSessionWindow) fyne.Focusable { return w.timeout },
		"network":     func(w *newSessionWindow) fyne.Focusable { return w.network },
	}
	for name, field := range fields {
		for _, key := range []string{"Esc", "Ctrl+W"} {
			w := h.newSession(t, p.ID)
			w.agent.SetSelected(agentCustom)
			w.win.Canvas().Focus(field(w))
			if w.win.Canvas().Focused() != field(w) {
				t.Fatalf("%s: not focused", name)
			}
			if key == "Esc" {
				pressKey(w.win, fyne.KeyEscape)
			} else {
				pressShortcut(w.win, closeShortcut())
			}
			h.q.Drain()
			if isOpen(w.win) || h.u.newSessWin != nil {
				t.Errorf("%s in the %s field leaves New Session open", key, name)
				w.win.Close()
			}
		}
	}
}
