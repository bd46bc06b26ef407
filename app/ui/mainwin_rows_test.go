package ui

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// countingBackend is the real backend, counting the diff stats asked of
// it; stat, when set, answers them instead.
type countingBackend struct {
	session.Service
	asked atomic.Int64
	stat  func(id string) (workspace.DiffStat, error)
}

func (b *countingBackend) DiffStat(ctx context.Context, id string) (workspace.DiffStat, error) {
	b.asked.Add(1)
	if b.stat != nil {
		return b.stat(id)
	}
	return b.Service.DiffStat(ctx, id)
}

// TestMainWindowRowShowsChanges: a session's row shows its diff stat
// summed from its saved work (by real git in Sandbar's repository),
// where that work went (not merged, then its branch created), and its
// age; a running session's row shows its VM's live changes. The saved
// stat is asked for once per record, not on each resync.
func TestMainWindowRowShowsChanges(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "rows")
	b := &countingBackend{Service: h.env.Manager}
	h.u.Backend = b
	mw := h.mainWindow(t)
	ctx := context.Background()

	done, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Prompt: "Write three lines",
		Agent: sessiontest.Shell(`printf 'a\nb\nc\n' > new.txt && printf 'more\n' >> README.md`)})
	if err != nil {
		t.Fatal(err)
	}
	row := func(id string) *sessionRow { return mw.byID[id] }
	h.q.WaitFor(t, 30*time.Second, "the finished session's diff stat in its row", func() bool {
		r := row(done.ID)
		return r != nil && r.cells.state == "finished" && r.cells.changes == "+4 –0, 2 files"
	})
	c := row(done.ID).cells
	if c.merged != "not merged" || c.age != "just now" {
		t.Errorf("the finished row says merged %q, age %q; want \"not merged\", \"just now\"", c.merged, c.age)
	}
	if !shows(mw.win, "+4 –0, 2 files") || !shows(mw.win, "not merged") {
		t.Errorf("the window shows %q", texts(mw.win.Canvas().Content()))
	}

	// Resyncs reread every record: none changed, so none is counted again.
	asked := b.asked.Load()
	list, err := h.env.Manager.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mw.apply(mainUpdate{all: true, projects: mw.projects, sessions: list}, time.Now())
	}
	if n := b.asked.Load() - asked; n != 0 || row(done.ID).diffBusy {
		t.Errorf("three resyncs asked for %d diff stats, want 0", n)
	}

	// Its branch created: the row says so.
	if _, err := h.env.Manager.Merge(ctx, done.ID, session.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	mw.reload()
	h.q.WaitFor(t, 10*time.Second, "the row saying the branch was created", func() bool {
		return row(done.ID).cells.merged == "branch "+done.Branch+" created"
	})

	// A running session: its VM's live changes, once it reports them.
	live, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Prompt: "Keep going",
		Agent: sessiontest.Shell(`printf 'x\ny\n' >> README.md && sleep 60`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.env.Manager.Stop(context.Background(), live.ID) })
	h.q.WaitFor(t, 30*time.Second, "the running session's live changes in its row", func() bool {
		r := row(live.ID)
		return r != nil && r.cells.changes == "+2 –0, 1 file" && r.cells.merged == "live · not merged"
	})
}

// TestSessionRowButtonsStayPut: a row's actions are where they were
// whatever state, changes or age it shows, so that a click aimed at
// Merge after Stop lands on Merge.
func TestSessionRowButtonsStayPut(t *testing.T) {
	h := newAppHarness(t)
	h.addProject(t, "steady")
	mw := h.mainWindow(t)
	it := newSessionItem(mw)
	w := test.NewWindow(it)
	defer w.Close()
	w.SetPadded(false)
	w.Resize(fyne.NewSize(1160, it.MinSize().Height))
	place := func() []fyne.Position {
		var at []fyne.Position
		d := fyne.CurrentApp().Driver()
		for _, a := range it.actions.named() {
			at = append(at, d.AbsolutePositionForObject(a.btn).Add(fyne.NewPos(a.btn.Size().Width, a.btn.Size().Height)))
		}
		return at
	}
	base := sessionCells{title: "Add dark mode", project: "steady", branch: "sandbar/steady-1", uptime: "—", cpu: "—", mem: "—", age: "just now"}
	states := []sessionCells{}
	for _, v := range []struct {
		state, changes, merged, uptime, cpu, mem string
		canStop, canMerge                        bool
	}{
		{"cloning", "…", "not merged", "—", "—", "—", false, false},
		{"working", "not saved yet", "not merged", "3m 04s", "99%", "1023.9 MiB / 64.0 GiB", true, true},
		{"stopping", "+12345 –6789, 123 files", "live · not merged", "1h 02m", "1600%", "512.0 MiB / 2.0 GiB", false, true},
		{"stopped by you", "+4 –0, 2 files", "merged into main", "2d 03h", "—", "—", false, true},
		{"stopped when Sandbar quit", "no changes", "branch sandbar/steady-1 created", "—", "—", "—", false, true},
		{"failed", "3 files (lines not counted)", "not merged", "—", "—", "—", false, true},
	} {
		c := base
		c.state, c.changes, c.merged, c.uptime, c.cpu, c.mem, c.canStop, c.canMerge = v.state, v.changes, v.merged, v.uptime, v.cpu, v.mem, v.canStop, v.canMerge
		states = append(states, c)
	}
	it.set("s1", states[0])
	want := place()
	for _, c := range states[1:] {
		it.set("s1", c)
		it.Refresh()
		if got := place(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("showing %q the row's actions end at %v, want %v as for %q", c.state, got, want, states[0].state)
		}
	}
}

// screenshotSessions are the five sessions of tests/TestScreenshots, in
// the states it puts them in.
func screenshotSessions(now time.Time) []store.Session {
	one, sigterm := 1, 143
	return []store.Session{
		{ID: "s5", Title: "Add dark mode to the settings page", State: "running", Activity: "working", Started: now.Add(-95 * time.Second)},
		{ID: "s4", Title: "Speed up the product search", State: "stopped", Reason: session.ReasonStoppedByUser, ExitCode: &sigterm, Started: now.Add(-3 * time.Minute), Ended: now.Add(-2 * time.Minute)},
		{ID: "s3", Title: "Upgrade the payments SDK to v3", State: "failed", Reason: "agent exited with code 1", ExitCode: &one},
		{ID: "s2", Title: "Add product catalogue fixtures", State: "stopped", Reason: "agent finished", ExitCode: new(int), Merged: store.Merge{Into: "main", Commit: "cadf6101234"}},
		{ID: "s1", Title: "Explain how checkout works", State: "running", Activity: "waiting", Reason: "waiting for your message"},
	}
}

// TestMainWindowRowsFitAt1280: on a 1280×800 screen (less a panel) the
// Sandbar window opens inside the work area and shows at least five
// rows, each with its title, state, changes, where they went and age
// drawn whole: every label's text is measured against the width its
// cell gives it.
func TestMainWindowRowsFitAt1280(t *testing.T) {
	h := newAppHarness(t)
	work := fyne.NewSize(1280, 800-28)
	h.u.ScreenSize = func() fyne.Size { return work }
	h.u.Backend = &countingBackend{Service: h.env.Manager, stat: func(string) (workspace.DiffStat, error) {
		return workspace.DiffStat{Files: 123, Added: 12345, Deleted: 6789}, nil
	}}
	p := h.addProject(t, "tinyshop")
	mw := h.mainWindow(t)
	if s := mw.win.Canvas().Size(); s.Width > work.Width || s.Height > work.Height || s.Width < 1100 {
		t.Fatalf("the Sandbar window opens at %v on a %v work area", s, work)
	}
	now := time.Now()
	ss := screenshotSessions(now)
	for i := range ss {
		ss[i].ProjectID, ss[i].Branch, ss[i].Created = p.ID, "sandbar/"+ss[i].ID, now.Add(-time.Duration(i+1)*47*time.Minute)
	}
	mw.apply(mainUpdate{changed: ss}, now)
	h.q.WaitFor(t, 5*time.Second, "the rows' diff stats", func() bool {
		for _, s := range ss {
			if r := mw.byID[s.ID]; r == nil || r.cells.changes != "+12345 –6789, 123 files" {
				return false
			}
		}
		return true
	})

	rep := mw.rowsReport()
	if rep.Rows < 5 || rep.Room < 5 {
		t.Errorf("the session list (%v) lays out %d rows and has room for %.1f, want 5", mw.sessionList.Size(), rep.Rows, rep.Room)
	}
	for _, c := range rep.Cut {
		t.Error(c)
	}
	for _, r := range mw.sessions {
		c := r.cells
		if c.state == "" || c.changes == "" || c.merged == "" || c.age == "" || c.age == "—" {
			t.Errorf("row %q shows %+v: a cell is empty", c.title, c)
		}
	}
	// MainWindowRows, which the screenshot test measures the real
	// window's rows with, says the same of the same window.
	diffs := map[string]workspace.DiffStat{}
	for _, s := range ss {
		diffs[s.ID] = workspace.DiffStat{Files: 123, Added: 12345, Deleted: 6789}
	}
	if got := MainWindowRows(fyne.CurrentApp(), mw.win.Canvas().Size(), mw.projects, ss, diffs, now); got.Rows != rep.Rows || got.Room != rep.Room || len(got.Cut) != 0 {
		t.Errorf("MainWindowRows = %+v, the window's own %+v", got, rep)
	}
	// Too narrow a window cuts, and the report says so.
	if got := MainWindowRows(fyne.CurrentApp(), fyne.NewSize(760, 560), mw.projects, ss, diffs, now); len(got.Cut) == 0 || got.Room >= 5 {
		t.Errorf("at 760×560 MainWindowRows = %+v, want cut texts and room for fewer than five rows", got)
	}
}
