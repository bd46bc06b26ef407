package ui

import (
	"context"
	"errors"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// TestSessionWindowDeletedOffersOnlyUndo: a running session deleted from
// its window stops, and the state events of that stop may reach the
// window after it knows of the delete; whenever they come, the window
// offers only Undo (Restart and Merge stayed on, and did nothing).
func TestSessionWindowDeletedOffersOnlyUndo(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "echo up; sleep 600")
	w := h.open(t, s.ID)
	h.env.WaitState(t, s.ID, session.StateRunning, 30*time.Second)
	h.q.WaitFor(t, 30*time.Second, "the window to show it running", func() bool { return w.sess.State == session.StateRunning })

	w.doDelete(true)
	h.q.WaitFor(t, 30*time.Second, "the session in the trash, with Undo", func() bool {
		_, err := h.env.Manager.Get(context.Background(), s.ID)
		return errors.Is(err, store.ErrNotFound) && w.notice.button("Undo") != nil
	})
	// The stop's last event, as though it came after the delete's.
	late := w.sess
	late.State = session.StateStopped
	w.applySession(late)
	h.q.Drain()

	on := func() []string {
		var names []string
		for name, b := range map[string]*widget.Button{
			"Interrupt": w.interrupt, "Resume": w.resume, "Stop": w.stop, "Restart": w.restart,
			"Commit now": w.commitNow, "Sync": w.sync.btn, "Create branch": w.branch, "Merge": w.merge,
			"Delete": w.del, "Send": w.chatSend, "Rename": w.title.rename, "Publish": w.net.publish,
		} {
			if !b.Disabled() {
				names = append(names, name)
			}
		}
		for _, o := range w.openers {
			if !o.btn.Disabled() {
				names = append(names, o.o.label)
			}
		}
		if !w.chat.Disabled() {
			names = append(names, "the chat box")
		}
		return names
	}
	if names := on(); len(names) != 0 {
		t.Errorf("a deleted session's window offers %v; want only Undo", names)
	}
	// The merge actions are read again every few seconds.
	w.showMergeTarget()
	if names := on(); len(names) != 0 {
		t.Errorf("after the merge actions were read again, the window offers %v", names)
	}
	if w.notice.button("Undo") == nil {
		t.Error("Undo is gone")
	}
	test.Tap(w.notice.button("Undo"))
	h.q.WaitFor(t, 30*time.Second, "the session restored", func() bool {
		_, err := h.env.Manager.Get(context.Background(), s.ID)
		return err == nil && w.closed
	})
}
