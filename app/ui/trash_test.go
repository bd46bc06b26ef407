package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// TestStorageTrash: Settings → Storage lists the sessions in the trash
// with what they take; Restore brings one back, and Empty trash, once
// confirmed, deletes them for good.
func TestStorageTrash(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "storage")
	ctx := context.Background()
	var ids []string
	for range 2 {
		s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("head -c 100000 /dev/urandom > .git/big.bin")})
		if err != nil {
			t.Fatal(err)
		}
		h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
		if err := h.env.Manager.Remove(ctx, s.ID, true); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	w := h.settings(t)
	selectTab(t, w.tabs, tabStorage)
	tp := w.trash
	h.q.WaitFor(t, 5*time.Second, "two sessions in the trash", func() bool { return len(tp.items) == 2 })
	if !strings.HasPrefix(tp.total.Text, "Trash: 2 sessions, ") || tp.empty.Disabled() {
		t.Errorf("the trash's heading %q (Empty trash disabled: %v)", tp.total.Text, tp.empty.Disabled())
	}
	// A session by its title, as everywhere else, not its branch.
	if tp.items[0].bytes < 100000 || !strings.HasPrefix(tp.items[0].label, "head -c 100000") || !strings.HasSuffix(tp.items[0].label, " · storage") || !strings.HasPrefix(tp.items[0].when, "deleted ") {
		t.Errorf("first trash row: %+v", tp.items[0])
	}
	if !shows(w.win, "Deleted sessions stay here for 7 days, then go for good.") {
		t.Error("the Storage tab does not say how long the trash keeps sessions")
	}
	if w.storageTotal.Text != "0 B in 0 sessions" {
		t.Errorf("the sessions' total %q counts the trash", w.storageTotal.Text)
	}

	// Restore, from the row's button.
	first := tp.items[0].id
	tp.list.Resize(fyne.NewSize(600, 300))
	row := tp.list.CreateItem()
	tp.list.UpdateItem(0, row)
	var restore *widget.Button
	for _, o := range test.LaidOutObjects(row) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Restore" {
			restore = b
		}
	}
	if restore == nil {
		t.Fatal("no Restore button in a trash row")
	}
	test.Tap(restore)
	h.q.WaitFor(t, 10*time.Second, "the session restored and both lists reread", func() bool {
		return len(tp.items) == 1 && len(w.storage) == 1 && w.storage[0].id == first
	})
	if _, err := h.env.Manager.Get(ctx, first); err != nil {
		t.Errorf("the restored session: %v", err)
	}
	if !strings.HasPrefix(tp.status.Text, "Restored “head -c 100000") {
		t.Errorf("status after Restore: %q", tp.status.Text)
	}
	if l := w.storage[0].label; !strings.HasPrefix(l, "head -c 100000") || !strings.HasSuffix(l, " · storage") {
		t.Errorf("the storage row says %q, want the session's title and project", l)
	}

	// Empty trash asks first, then deletes for good.
	test.Tap(tp.empty)
	test.Tap(overlayButton(t, w.win, "Empty trash"))
	h.q.WaitFor(t, 10*time.Second, "the trash emptied", func() bool { return len(tp.items) == 0 && tp.empty.Disabled() })
	if tr, _ := h.env.Manager.Trash(ctx); len(tr) != 0 {
		t.Errorf("the trash after Empty trash: %+v", tr)
	}
	if tp.total.Text != "Trash: empty" || tp.status.Text != "Deleted 1 session for good." {
		t.Errorf("after Empty trash: %q, %q", tp.total.Text, tp.status.Text)
	}
}

// TestMainWindowUndoDelete: a deletion's banner in the Sandbar window
// says the session is in the trash and for how long, and its Undo brings
// the session back to the list.
func TestMainWindowUndoDelete(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "undo")
	ctx := context.Background()
	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("true")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
	mw := h.mainWindow(t)
	h.q.WaitFor(t, 5*time.Second, "the session listed", func() bool { return mw.byID[s.ID] != nil })
	if err := h.env.Manager.Remove(ctx, s.ID, false); err != nil {
		t.Fatal(err)
	}
	mw.showDeleted(s.ID, "undo · "+s.Branch)
	h.q.WaitFor(t, 5*time.Second, "the session gone from the list", func() bool { return mw.byID[s.ID] == nil })
	if !mw.banner.action.Visible() || mw.banner.action.Text != "Undo" || !strings.Contains(mw.banner.text.Text, "to the trash. It is kept there for 7 days") {
		t.Fatalf("banner %q, action %q shown %v", mw.banner.text.Text, mw.banner.action.Text, mw.banner.action.Visible())
	}
	test.Tap(mw.banner.action)
	h.q.WaitFor(t, 10*time.Second, "the session back in the list", func() bool { return mw.byID[s.ID] != nil })
	if !strings.HasPrefix(mw.banner.text.Text, "Restored “undo · ") || mw.banner.action.Visible() {
		t.Errorf("banner after Undo: %q (action shown %v)", mw.banner.text.Text, mw.banner.action.Visible())
	}
}
