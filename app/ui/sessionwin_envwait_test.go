package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// TestSessionWindowWaitsForEnvironment: a session waiting for its
// project's prepared environment (provisioning, its reason the step, as
// the session manager's waitPrepared writes it) says so in its window,
// with a running bar and a way to the preparation's live log; once it
// boots, the bar goes.
func TestSessionWindowWaitsForEnvironment(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 5*time.Second, "the window showing the running session", func() bool { return w.sess.State == session.StateRunning })
	if w.envWait.Visible() {
		t.Fatal("a running session shows the environment's bar")
	}

	waiting := w.sess
	waiting.State, waiting.Reason = session.StateProvisioning, "preparing the environment: running postCreateCommand…"
	w.applySession(waiting)
	if got := w.state.Text; got != "Waiting for its environment — preparing it: running postCreateCommand…" {
		t.Errorf("the state line: %q", got)
	}
	if !w.envWait.Visible() {
		t.Fatal("no bar while the session waits for its environment")
	}
	var follow *widget.Button
	for _, o := range test.LaidOutObjects(w.envWait) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Show the preparation" {
			follow = b
		}
	}
	if follow == nil {
		t.Fatal("no way to the preparation's log")
	}
	test.Tap(follow)
	pw := h.u.projectWins[w.project.ID]
	if pw == nil {
		t.Fatal("Show the preparation opened no Project Settings")
	}
	h.q.WaitFor(t, 5*time.Second, "the Environment tab selected", func() bool {
		sel := pw.tabs.Selected()
		return sel != nil && sel.Text == tabEnvironment
	})

	running := waiting
	running.State, running.Reason = session.StateRunning, ""
	w.applySession(running)
	if w.envWait.Visible() {
		t.Error("the bar stays once the session runs")
	}
}

// TestEnvWaitWords: the state of a session waiting for its environment
// reads so, and is never cut in the Sandbar window's state column.
func TestEnvWaitWords(t *testing.T) {
	test.NewTempApp(t)
	state, _ := sessionStatus(store.Session{State: session.StateProvisioning, Reason: envWaitPrefix + "running onCreateCommand…"})
	if w := fyne.MeasureText(state, theme.TextSize(), fyne.TextStyle{}).Width + 2*theme.InnerPadding(); w > sessionColumns.width(1) {
		t.Errorf("the state %q is %v wide, more than the state column's %v", state, w, sessionColumns.width(1))
	}
	for _, tt := range []struct {
		state  store.State
		reason string
		want   string
	}{
		{session.StateProvisioning, "preparing the environment: capturing the environment's disk…", "Waiting for its environment — preparing it: capturing the environment's disk…"},
		{session.StateProvisioning, "preparing a clone of /src/x", "Cloning — preparing a clone of /src/x"},
	} {
		if got := stateSentence(store.Session{State: tt.state, Reason: tt.reason}); got != tt.want {
			t.Errorf("%s %q reads %q, want %q", tt.state, tt.reason, got, tt.want)
		}
	}
}
