package ui

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"

	"sandbar/app/desktop"
)

// TestAddRepositoryBrowsesWithoutPortal: once the desktop's chooser did
// not answer, Choose Folder… in Add a Repository opens Sandbar's own
// folder browser, not the chooser again (which reopened the same window),
// and the folder chosen there is added.
func TestAddRepositoryBrowsesWithoutPortal(t *testing.T) {
	h := newAddRepoHarness(t)
	mw := h.mainWindow(t)
	var calls atomic.Int32
	h.u.ChooseFolder = func(context.Context, string) (string, error) {
		calls.Add(1)
		return "", desktop.ErrUnavailable
	}
	mw.u.AddRepository(mw.added)
	h.q.WaitFor(t, 5*time.Second, "Add a Repository, after the chooser did not answer", func() bool { return h.u.addRepo.win != nil })
	w := h.u.addRepo.win

	test.Tap(w.choose)
	h.q.Drain()
	if n := calls.Load(); n != 1 {
		t.Errorf("Choose Folder… asked the desktop's chooser again (%d calls)", n)
	}
	if h.u.addRepo.win != w {
		t.Fatal("Choose Folder… closed Add a Repository")
	}
	if w.win.Canvas().Overlays().Top() == nil {
		t.Fatal("Choose Folder… showed no folder browser")
	}

	// The browser's answer: the folder is added, and the window closes.
	l, err := storage.ListerForURI(storage.NewFileURI(h.repo))
	if err != nil {
		t.Fatal(err)
	}
	w.browsed(l, nil)
	h.q.WaitFor(t, 5*time.Second, "the chosen repository added", func() bool { return len(mw.projects) == 1 })
	h.q.WaitFor(t, 5*time.Second, "Add a Repository closed", func() bool { return h.u.addRepo.win == nil })
	if want := "Added shop (~/repos/shop, branch main)."; mw.banner.text.Text != want {
		t.Errorf("banner = %q, want %q", mw.banner.text.Text, want)
	}

	// With no chooser at all, Choose Folder… browses too.
	h.u.ChooseFolder = nil
	h.u.ShowAddByPath(mw.added, "")
	w = h.u.addRepo.win
	test.Tap(w.choose)
	if w.win.Canvas().Overlays().Top() == nil {
		t.Error("with no desktop chooser, Choose Folder… showed no folder browser")
	}
	w.browsed(nil, nil) // cancelled: nothing happens
	if h.u.addRepo.win != w || w.problem.Visible() {
		t.Error("a cancelled browse closed the window or showed a problem")
	}
}
