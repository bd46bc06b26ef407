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

// rowOf is the list row that shows session id, drawn in the window.
func rowOf(mw *mainWindow, id string) *sessionItem {
	for _, o := range test.LaidOutObjects(mw.win.Canvas().Content()) {
		if it, ok := o.(*sessionItem); ok && it.id == id && it.Visible() {
			return it
		}
	}
	return nil
}

// TestMainWindowRowsByTitle: a session's row says its title, then its
// project and branch; its Open, Stop, Merge and Delete act on it; a
// rename shows at once.
func TestMainWindowRowsByTitle(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "shop")
	mw := h.mainWindow(t)
	mw.win.Resize(fyne.NewSize(1000, 600))
	ctx := context.Background()

	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("sleep 60"),
		Prompt: "  Fix the login bug\nIt fails when the password has a space."})
	if err != nil {
		t.Fatal(err)
	}
	var row *sessionItem
	h.q.WaitFor(t, 20*time.Second, "the running session's row", func() bool {
		row = rowOf(mw, s.ID)
		return row != nil && (row.state.Text == "running" || row.state.Text == "working")
	})
	if row.title.Text != "Fix the login bug" {
		t.Errorf("the row's title is %q, want the prompt's first line", row.title.Text)
	}
	if want := "shop · " + s.Branch; !strings.HasPrefix(row.detail.Text, want) {
		t.Errorf("the row's second line is %q, want it to start with %q", row.detail.Text, want)
	}
	if !shows(mw.win, "Fix the login bug") || !shows(mw.win, "Session") {
		t.Errorf("the window shows %q", texts(mw.win.Canvas().Content()))
	}
	// Open, Stop, Merge and Delete, as icons, in that order, all enabled
	// while it runs.
	for i, a := range row.actions.named() {
		want := []string{"Open", "Stop", "Merge", "Delete"}[i]
		if a.name != want || a.btn.Icon.Name() != rowActionIcon(want).Name() || a.btn.Disabled() || !a.btn.Visible() {
			t.Errorf("action %d: %s, icon %v, disabled %v; want %s enabled", i, a.name, a.btn.Icon.Name(), a.btn.Disabled(), want)
		}
	}

	// A rename (here through the Manager, as `sandbar rename` does)
	// reaches the row.
	if _, err := h.env.Manager.Rename(ctx, s.ID, "Spaces in passwords"); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 5*time.Second, "the new title in the row", func() bool {
		r := rowOf(mw, s.ID)
		return r != nil && r.title.Text == "Spaces in passwords"
	})

	// Open opens the session.
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	test.Tap(rowOf(mw, s.ID).actions.open)
	if len(opened) != 1 || opened[0] != s.ID {
		t.Errorf("Open opened %v, want %s", opened, s.ID)
	}

	// Stop stops it, and then Stop is disabled.
	test.Tap(rowOf(mw, s.ID).actions.stop)
	h.q.WaitFor(t, 30*time.Second, "the session stopped, Stop disabled, and the banner saying so", func() bool {
		r := rowOf(mw, s.ID)
		return r != nil && r.state.Text == "stopped by you" && r.actions.stop.Disabled() &&
			mw.banner.text.Text == "Stopped “Spaces in passwords”."
	})

	// Delete asks first; Cancel keeps it, Delete deletes it.
	test.Tap(rowOf(mw, s.ID).actions.del)
	if top := mw.win.Canvas().Overlays().Top(); top == nil || !strings.Contains(strings.Join(texts(top), " "), "Delete “Spaces in passwords”?") {
		t.Fatalf("Delete asked nothing, or not by the title: %v", top)
	}
	test.Tap(overlayButton(t, mw.win, "Cancel"))
	if _, err := h.env.Manager.Get(ctx, s.ID); err != nil {
		t.Fatalf("Cancel deleted the session: %v", err)
	}
	test.Tap(rowOf(mw, s.ID).actions.del)
	test.Tap(overlayButton(t, mw.win, "Delete"))
	h.q.WaitFor(t, 30*time.Second, "the row gone and the banner saying so", func() bool {
		return mw.byID[s.ID] == nil && strings.HasPrefix(mw.banner.text.Text, "Moved “Spaces in passwords” to the trash.")
	})
}

// TestMainWindowRowMergeAndDeleteWithWork: Merge merges in the session's
// window, where what it did is said; deleting a session whose work is
// not in the repository asks again, listing it.
func TestMainWindowRowMergeAndDeleteWithWork(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "notes")
	mw := h.mainWindow(t)
	mw.win.Resize(fyne.NewSize(1000, 600))
	ctx := context.Background()
	work := `echo hi > added.txt && git add added.txt && git -c user.name=A -c user.email=a@example.com commit -qm add`
	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell(work), Prompt: "Add a file"})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	h.q.WaitFor(t, 10*time.Second, "the stopped session's row", func() bool {
		r := rowOf(mw, s.ID)
		return r != nil && r.state.Text == "finished"
	})

	test.Tap(rowOf(mw, s.ID).actions.del)
	test.Tap(overlayButton(t, mw.win, "Delete"))
	h.q.WaitFor(t, 30*time.Second, "a second question listing the work", func() bool {
		top := mw.win.Canvas().Overlays().Top()
		return top != nil && strings.Contains(strings.Join(texts(top), " "), "Delete “Add a file” and its work?")
	})
	if got := strings.Join(texts(mw.win.Canvas().Overlays().Top()), " "); !strings.Contains(got, "not merged") {
		t.Errorf("the question says %q, want the unmerged commit listed", got)
	}
	test.Tap(overlayButton(t, mw.win, "Keep it"))
	if _, err := h.env.Manager.Get(ctx, s.ID); err != nil {
		t.Fatalf("Keep it deleted the session: %v", err)
	}

	test.Tap(rowOf(mw, s.ID).actions.merge)
	w := h.u.sessionWins[s.ID]
	if w == nil {
		t.Fatal("Merge did not open the session's window")
	}
	h.q.WaitFor(t, 30*time.Second, "the merge said in the session window", func() bool {
		return strings.HasPrefix(w.notice.text(), "Branch "+s.Branch+" created")
	})
	if got := sessiontest.Git(t, p.Path, "rev-parse", "--verify", "-q", s.Branch); got == "" {
		t.Errorf("the repository has no %s after Merge", s.Branch)
	}
}

// TestSessionWindowRename: the window's title and header show the
// session's title, with its project and branch beneath; Rename turns the
// title into a field: Enter renames, Esc leaves it, a title too long is
// refused with the reason.
func TestSessionWindowRename(t *testing.T) {
	h := newSWHarness(t)
	repo := h.env.Repo(t, "demo")
	ctx := context.Background()
	s, err := h.env.Manager.Start(ctx, session.Options{Repo: repo, MemoryMiB: 512, Agent: sessiontest.Shell("sleep 60"),
		Prompt: "Make the build faster"})
	if err != nil {
		t.Fatal(err)
	}
	w := h.open(t, s.ID)
	if w.name.Text != "Make the build faster" || w.win.Title() != "Make the build faster — demo" || w.where.Text != "demo · "+s.Branch {
		t.Errorf("header %q over %q, window %q", w.name.Text, w.where.Text, w.win.Title())
	}
	if w.title.edit.Visible() || !w.title.rename.Visible() {
		t.Error("the title opens as a field")
	}

	test.Tap(w.title.rename)
	if !w.title.edit.Visible() || w.title.view.Visible() || w.title.entry.Text != "Make the build faster" {
		t.Fatalf("Rename shows the field %v holding %q", w.title.edit.Visible(), w.title.entry.Text)
	}
	w.title.entry.SetText("Not this")
	w.title.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if w.title.edit.Visible() || w.name.Text != "Make the build faster" {
		t.Errorf("Esc: field shown %v, title %q", w.title.edit.Visible(), w.name.Text)
	}

	test.Tap(w.title.rename)
	w.title.entry.SetText(strings.Repeat("x", 150))
	pressEnter(w.title.entry)
	h.q.WaitFor(t, 10*time.Second, "the refusal said", func() bool {
		return strings.Contains(w.notice.text(), "Could not rename the session: the title is 150 characters long: keep it to 120")
	})
	if !w.title.edit.Visible() {
		t.Error("a refused title closed the field: what was typed is lost")
	}

	w.title.entry.SetText("Faster builds")
	pressEnter(w.title.entry)
	h.q.WaitFor(t, 10*time.Second, "the new title in the header and the title bar", func() bool {
		return w.name.Text == "Faster builds" && w.win.Title() == "Faster builds — demo" && !w.title.edit.Visible()
	})
	if got, _ := h.env.Manager.Get(ctx, s.ID); got.Title != "Faster builds" {
		t.Errorf("the store says %q", got.Title)
	}

	// A rename from elsewhere (the CLI, another window) reaches it too.
	if _, err := h.env.Manager.Rename(ctx, s.ID, "Fast builds"); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 10*time.Second, "a rename from elsewhere in the header", func() bool {
		return w.name.Text == "Fast builds" && w.win.Title() == "Fast builds — demo"
	})

	// The window is found by its session, whatever its title: opening it
	// again brings it forward.
	if again := h.u.showSession(s.ID); again != nil {
		t.Error("opening a renamed session's window again made a second one")
	}
}

// TestSessionWindowTitleHasRoom: the session window's title is drawn
// whole at the window's first size: it has the window's width, not what
// the actions beside it leave (a few letters, with five of them).
func TestSessionWindowTitleHasRoom(t *testing.T) {
	h := newSWHarness(t)
	repo := h.env.Repo(t, "room")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512,
		Agent: sessiontest.Shell("true"), Prompt: "Add product catalogue fixtures"})
	if err != nil {
		t.Fatal(err)
	}
	w := h.open(t, s.ID)
	w.win.Resize(fyne.NewSize(980, 720))
	need := widget.NewLabelWithStyle(w.name.Text, fyne.TextAlignLeading, w.name.TextStyle)
	need.SizeName = w.name.SizeName
	if w.name.Text != "Add product catalogue fixtures" || w.name.Size().Width < need.MinSize().Width {
		t.Errorf("the title %q has %.0f points, it needs %.0f", w.name.Text, w.name.Size().Width, need.MinSize().Width)
	}
}
