package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// TestSessionWindowHeaderButtonsStay: the header's buttons keep their
// places at 1280×800 while the state changes: the merge target loads
// (Merge into current branch, then Merge into main), the disk fills
// (Resume shows), the session stops. A click aimed at one lands on it.
func TestSessionWindowHeaderButtonsStay(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "echo ready; sleep 600")
	w := h.open(t, s.ID)
	w.win.Resize(fyne.NewSize(1280, 800))
	h.q.WaitFor(t, 30*time.Second, "the session running", func() bool { return w.sess.State == session.StateRunning })
	buttons := map[string]*widget.Button{"Interrupt": w.interrupt, "Stop": w.stop, "Restart": w.restart,
		"Commit now": w.commitNow, "Sync": w.sync.btn, "Create branch": w.branch, "Merge into": w.merge, "Delete": w.del}
	d := fyne.CurrentApp().Driver()
	where := func() map[string]fyne.Position {
		w.win.Content().Refresh()
		at := map[string]fyne.Position{}
		for n, b := range buttons {
			at[n] = d.AbsolutePositionForObject(b)
		}
		return at
	}
	same := func(step string, before map[string]fyne.Position) {
		t.Helper()
		for n, p := range where() {
			if p != before[n] {
				t.Errorf("%s: %s moved from %v to %v", step, n, before[n], p)
			}
		}
	}

	w.target = session.MergeTarget{}
	w.showMergeTarget()
	before := where()
	w.target = session.MergeTarget{Into: "main", Branch: s.Branch}
	w.showMergeTarget()
	same("the merge target loaded", before)

	paused := w.sess
	paused.Activity = session.ActivityPaused
	w.applySession(paused)
	if !w.resume.Visible() {
		t.Fatal("Resume does not show on a full disk")
	}
	same("the disk filled", before)

	stopped := w.sess
	stopped.State, stopped.Activity = session.StateStopped, ""
	w.applySession(stopped)
	same("the session stopped", before)
}
