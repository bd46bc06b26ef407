package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// overlayText is the text of the labels in c's topmost overlay.
func overlayText(c fyne.Canvas) string {
	top := c.Overlays().Top()
	if top == nil {
		return ""
	}
	var b strings.Builder
	for _, o := range test.LaidOutObjects(top) {
		if l, ok := o.(*widget.Label); ok {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

// TestReadAllLabel: a line cut with "…" shows whole when clicked, with
// Copy; one that fits does what its row does instead.
func TestReadAllLabel(t *testing.T) {
	test.NewTempApp(t)
	l := newReadAllLabel()
	rowTaps := 0
	l.tapped = func() { rowTaps++ }
	long := "Failed — the agent quit with error code 3 after " + strings.Repeat("a long explanation ", 20) + "THE END"
	l.SetText(long)
	w := test.NewTempWindow(t, l)
	w.Resize(fyne.NewSize(300, 200))
	if !l.cut() {
		t.Fatal("a long line in 300 points is not cut")
	}
	test.Tap(l)
	if got := overlayText(w.Canvas()); !strings.Contains(got, "THE END") {
		t.Fatalf("the click did not show the whole line: %q", got)
	}
	w.Canvas().Overlays().Remove(w.Canvas().Overlays().Top())
	if rowTaps != 0 {
		t.Fatal("the click on a cut line did the row's action too")
	}
	l.SetText("Running")
	test.Tap(l)
	if rowTaps != 1 || w.Canvas().Overlays().Top() != nil {
		t.Fatalf("a line that fits: row taps %d, overlay %v", rowTaps, w.Canvas().Overlays().Top())
	}
}

// TestSessionWindowStateReadsWhole: at 1280×800 a long reason is cut in
// the header, and clicking it shows it whole.
func TestSessionWindowStateReadsWhole(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "echo ready; sleep 600")
	w := h.open(t, s.ID)
	w.win.Resize(fyne.NewSize(1280, 800))
	h.q.WaitFor(t, 30*time.Second, "the session running", func() bool { return w.sess.State == session.StateRunning })
	failed := w.sess
	failed.State = session.StateFailed
	failed.Reason = "the agent quit: " + strings.Repeat("it printed a very long reason ", 12) + "and that is all"
	w.applySession(failed)
	if !w.state.cut() {
		t.Fatalf("a %d-character reason is not cut at 1280 points: %q", len(w.state.Text), w.state.Text)
	}
	test.Tap(w.state)
	if got := overlayText(w.win.Canvas()); !strings.Contains(got, "and that is all") {
		t.Fatalf("clicking the state line did not show the whole reason: %q", got)
	}
}
