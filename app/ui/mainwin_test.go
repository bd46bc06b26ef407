package ui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// nowhere is a drop position on no project row.
var nowhere = fyne.NewPos(-1, -1)

func TestMainWindowDropAddsProject(t *testing.T) {
	h := newAppHarness(t)
	mw := h.mainWindow(t)
	if !mw.empty.Visible() || mw.body.Visible() || !shows(mw.win, "Drop a repository folder here") {
		t.Fatal("with no projects the window does not show its drop zone")
	}

	repo := h.env.Repo(t, "drop me é")
	// The project's folder is shown under ~; the backend gets it in full.
	h.u.Home = filepath.Dir(repo)
	mw.dropped(nowhere, []fyne.URI{storage.NewFileURI(repo)})
	h.q.WaitFor(t, 5*time.Second, "the dropped repository listed as a project", func() bool {
		return len(mw.projects) == 1 && shows(mw.win, "drop me é")
	})
	if p := mw.projects[0]; p.Path != repo || p.DefaultBranch != "main" {
		t.Errorf("project = %+v, want path %s on main", p, repo)
	}
	if want := "Added drop me é (~/drop me é, branch main)."; mw.banner.text.Text != want || !mw.banner.box.Visible() {
		t.Errorf("banner = %q, want %q", mw.banner.text.Text, want)
	}
	if mw.empty.Visible() || !mw.body.Visible() || !shows(mw.win, "No sessions yet") {
		t.Error("with a project the window still shows the drop zone, or no empty sessions list")
	}
	if !shows(mw.win, "no sessions") || !slices.Contains(texts(mw.win.Canvas().Content()), "~/drop me é") || shows(mw.win, repo) {
		t.Errorf("the project's row lacks its path under ~ or its session count: %q", texts(mw.win.Canvas().Content()))
	}

	// A subfolder adds its repository, with a note; here it is a duplicate.
	sub := filepath.Join(repo, "sub dir")
	os.MkdirAll(sub, 0o755)
	mw.dropped(nowhere, []fyne.URI{storage.NewFileURI(sub)})
	h.q.WaitFor(t, 5*time.Second, "the duplicate refused", func() bool {
		return strings.Contains(mw.banner.text.Text, "already the project")
	})
}

func TestMainWindowDropRefusesWhatIsNotARepository(t *testing.T) {
	h := newAppHarness(t)
	dup := h.env.Repo(t, "already here")
	if _, _, err := h.env.Manager.AddProject(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	mw := h.mainWindow(t)
	if len(mw.projects) != 1 {
		t.Fatalf("%d projects listed, want 1", len(mw.projects))
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	os.WriteFile(file, []byte("hi"), 0o644)
	plain := filepath.Join(dir, "plain folder")
	os.Mkdir(plain, 0o755)
	bare := filepath.Join(dir, "bare.git")
	sessiontest.Git(t, dir, "init", "-q", "--bare", bare)
	web, _ := storage.ParseURI("https://example.com/repo.git")

	tests := []struct {
		name string
		uri  fyne.URI
		want string
	}{
		{"file", storage.NewFileURI(file), "is a file, not a folder"},
		{"not a repository", storage.NewFileURI(plain), "is not a git repository: drop the folder that holds .git, or run git init there."},
		{"bare repository", storage.NewFileURI(bare), "bare repository"},
		{"duplicate", storage.NewFileURI(dup), "is already the project"},
		{"not local", web, "is not a folder on this computer"},
		{"missing", storage.NewFileURI(filepath.Join(dir, "gone")), "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw.banner.hide()
			mw.dropped(nowhere, []fyne.URI{tt.uri})
			h.q.WaitFor(t, 5*time.Second, "an inline message for "+tt.name, func() bool { return mw.banner.text.Text != "" })
			if !strings.Contains(mw.banner.text.Text, tt.want) || !mw.banner.box.Visible() {
				t.Errorf("banner = %q, want it to contain %q", mw.banner.text.Text, tt.want)
			}
			if ps, _ := h.env.Manager.Projects(context.Background()); len(ps) != 1 {
				t.Errorf("%d projects after the drop, want 1", len(ps))
			}
		})
	}

	// Several at once: the good one is added, the bad one explained.
	good := h.env.Repo(t, "good one")
	mw.banner.hide()
	mw.dropped(nowhere, []fyne.URI{storage.NewFileURI(file), storage.NewFileURI(good)})
	h.q.WaitFor(t, 5*time.Second, "a mixed drop handled", func() bool { return len(mw.projects) == 2 })
	if msg := mw.banner.text.Text; !strings.Contains(msg, "Added good one") || !strings.Contains(msg, "is a file") {
		t.Errorf("banner = %q, want both outcomes", msg)
	}
	mw.banner.hide()
	if mw.banner.box.Visible() {
		t.Error("the banner does not hide when dismissed")
	}
}

func TestMainWindowDropOnProjectOpensNewSession(t *testing.T) {
	h := newAppHarness(t)
	h.addProject(t, "first")
	second := h.addProject(t, "second")
	mw := h.mainWindow(t)
	mw.win.Resize(fyne.NewSize(760, 560))
	h.q.WaitFor(t, 5*time.Second, "two project rows", func() bool { return len(mw.projects) == 2 && shows(mw.win, "second") })

	var row *projectItem
	for _, it := range mw.projItems {
		if it.projectID == second.ID && !h.u.App.Driver().AbsolutePositionForObject(it).IsZero() {
			row = it
		}
	}
	if row == nil {
		t.Fatal("no row shows the project second")
	}
	at := h.u.App.Driver().AbsolutePositionForObject(row).Add(fyne.NewPos(10, row.Size().Height/2))
	if p, ok := mw.projectAt(at); !ok || p.ID != second.ID {
		t.Fatalf("projectAt(%v) = %v, %v; want project second", at, p, ok)
	}
	mw.dropped(at, []fyne.URI{storage.NewFileURI(t.TempDir())})
	ns := h.u.newSessWin
	if ns == nil {
		t.Fatal("a drop on a project row opened no New Session window")
	}
	h.q.WaitFor(t, 5*time.Second, "New Session with the project selected", func() bool {
		p, ok := ns.selected()
		return ok && p.ID == second.ID
	})
	if ps, _ := h.env.Manager.Projects(context.Background()); len(ps) != 2 {
		t.Errorf("%d projects after a drop on a row, want 2 (nothing added)", len(ps))
	}
}

func TestMainWindowFollowsSessions(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "live")
	mw := h.mainWindow(t)
	mw.win.Resize(fyne.NewSize(900, 600))
	ctx := context.Background()

	quick, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("echo done")})
	if err != nil {
		t.Fatal(err)
	}
	long, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	row := func(id string) *sessionRow { return mw.byID[id] }
	h.q.WaitFor(t, 20*time.Second, "the quick session stopped and the long one running, in the list", func() bool {
		q, l := row(quick.ID), row(long.ID)
		return q != nil && l != nil && q.cells.state == "finished" && l.cells.state == "working"
	})
	if !shows(mw.win, "finished") || !shows(mw.win, "working") || !shows(mw.win, "2 sessions") {
		t.Errorf("the window shows %q", texts(mw.win.Canvas().Content()))
	}
	if mw.sessions[0].s.ID != long.ID {
		t.Error("sessions are not listed newest first")
	}

	// Stats arrive from the guest every 2 s; only the long row moves on.
	h.q.WaitFor(t, 15*time.Second, "CPU and memory of the running session", func() bool {
		return row(long.ID).cells.cpu != "—" && strings.Contains(row(long.ID).cells.mem, "iB")
	})
	h.q.WaitFor(t, 5*time.Second, "the uptime ticking", func() bool { return mw.rowUpdates[long.ID] > 2 })
	// The window's own loop applies the guest's stats meanwhile: a try
	// that one of those came between counts for nothing, and is made
	// again (the row then shows other figures than these).
	for try := 0; ; try++ {
		quickBefore, longBefore := mw.rowUpdates[quick.ID], mw.rowUpdates[long.ID]
		mw.apply(mainUpdate{tick: true, stats: map[string]session.Stats{long.ID: {CPU: 77}}}, time.Now().Add(time.Minute))
		mw.apply(mainUpdate{stats: map[string]session.Stats{long.ID: {CPU: 77}}}, time.Now().Add(time.Minute))
		quickN, longN := mw.rowUpdates[quick.ID]-quickBefore, mw.rowUpdates[long.ID]-longBefore
		if row(long.ID).cells.cpu != "77%" && try < 5 {
			continue
		}
		if quickN != 0 {
			t.Errorf("the stopped session's row was redrawn %d times by a tick and stats of another, want 0", quickN)
		}
		if longN != 1 {
			t.Errorf("the running session's row was redrawn %d times by a tick and two equal stats, want 1", longN)
		}
		break
	}

	// Stop: the state flows in.
	if _, err := h.env.Manager.Stop(ctx, long.ID); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 20*time.Second, "the stopped state in the list", func() bool {
		return row(long.ID).cells.state == "stopped by you" && row(long.ID).cells.cpu == "—"
	})
	if !shows(mw.win, "stopped by you") || shows(mw.win, "143") || shows(mw.win, "exit") {
		t.Errorf("a session the person stopped: the window shows %q, want \"stopped by you\" and no exit status", texts(mw.win.Canvas().Content()))
	}

	// Remove: the row goes.
	if err := h.env.Manager.Remove(ctx, quick.ID, true); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 5*time.Second, "the removed session gone from the list", func() bool {
		return row(quick.ID) == nil && len(mw.sessions) == 1 && shows(mw.win, "1 session")
	})

	// Selecting a session opens it.
	var opened string
	h.u.OpenSession = func(id string) { opened = id }
	mw.sessionList.Select(0)
	if opened != long.ID {
		t.Errorf("selecting the row opened %q, want %s", opened, long.ID)
	}
}

// eventBackend is the real backend with a hand-fed event stream.
type eventBackend struct {
	session.Service
	events chan session.Event
}

func (b *eventBackend) Subscribe(ctx context.Context, _ string) <-chan session.Event { return b.events }

func TestMainWindowBatchesUpdates(t *testing.T) {
	h := newAppHarness(t)
	h.addProject(t, "busy")
	ctx := context.Background()
	s, err := h.env.Manager.Start(ctx, session.Options{Project: "busy", MemoryMiB: 512, Agent: sessiontest.Shell("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	eb := &eventBackend{Service: h.env.Manager, events: make(chan session.Event)}
	h.u.Backend = eb
	mw := h.mainWindow(t)
	h.q.WaitFor(t, 5*time.Second, "the session listed", func() bool { return mw.byID[s.ID] != nil })

	h.q.Drain()
	postsBefore := h.q.Posts()
	start := time.Now()
	const n = 3000
	for i := range n {
		eb.events <- session.Event{Session: s.ID, Kind: session.EventStats, Stats: &session.Stats{CPU: float64(i % 100), MemUsed: 1 << 30, MemTotal: 2 << 30}}
		eb.events <- session.Event{Session: s.ID, Kind: session.EventLog, Log: &store.LogLine{Text: "noise"}}
	}
	elapsed := time.Since(start)
	h.q.WaitFor(t, 5*time.Second, "the last stats shown", func() bool { return mw.byID[s.ID].cells.cpu == "99%" })
	posts := h.q.Posts() - postsBefore
	// One update per frame at most, plus the one in flight at each end.
	if limit := int(time.Since(start)/uiFrame) + 2; posts > limit {
		t.Errorf("%d events in %s made %d window updates, want at most %d (30 a second)", 2*n, elapsed, posts, limit)
	}
	t.Logf("%d events in %s: %d window updates", 2*n, elapsed, posts)
}

func TestCellsFor(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	code, sigterm := 3, 143
	tests := []struct {
		name  string
		s     store.Session
		stats *session.Stats
		want  sessionCells
	}{
		{"waiting", store.Session{ID: "a", State: "running", Activity: "waiting", Branch: "sandbar/a", Started: now.Add(-90 * time.Second)},
			&session.Stats{CPU: 12.4, MemUsed: 512 << 20, MemTotal: 2 << 30},
			sessionCells{title: "Session a", project: "p", branch: "sandbar/a", state: "waiting for you", uptime: "up 1m 30s", cpu: "12%", mem: "512.0 MiB / 2.0 GiB",
				changes: "…", merged: "not merged", age: "—", canStop: true, canMerge: true}},
		{"failed", store.Session{Title: "Break it", State: "failed", Reason: "agent exited with code 3", ExitCode: &code, Started: now.Add(-2 * time.Hour), Ended: now.Add(-time.Hour)},
			&session.Stats{CPU: 50}, sessionCells{title: "Break it", project: "p", detail: "the agent quit with error code 3", canMerge: true, state: "failed", uptime: "ran 1h 00m", cpu: "—", mem: "—",
				changes: "…", merged: "not merged", age: "—"}},
		{"finished", store.Session{Prompt: "Tidy up", State: "stopped", Reason: "agent finished", ExitCode: new(int), Created: now.Add(-3 * time.Hour),
			Merged: store.Merge{Into: "main", Commit: "1a2b3c4d5e"}}, nil,
			sessionCells{title: "Tidy up", project: "p", canMerge: true, state: "finished", cpu: "—", mem: "—",
				changes: "…", merged: "merged into main", age: "3 h ago"}},
		{"stopped by the person", store.Session{Prompt: "Tidy up", State: "stopped", Reason: session.ReasonStoppedByUser, ExitCode: &sigterm, Created: now.Add(-5 * time.Minute),
			Merged: store.Merge{Into: "sandbar/tidy", Branch: true, Commit: "1a2b3c4d5e"}}, nil,
			sessionCells{title: "Tidy up", project: "p", canMerge: true, state: "stopped by you", cpu: "—", mem: "—",
				changes: "…", merged: "branch sandbar/tidy created", age: "5 min ago"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cellsFor(tt.s, tt.stats, diffView{}, "p", now)
			got.stateImp = 0
			if got != tt.want {
				t.Errorf("cellsFor = %+v\nwant       %+v", got, tt.want)
			}
		})
	}
	if d := humanDuration(49*time.Hour + 5*time.Minute); d != "2d 01h" {
		t.Errorf("humanDuration = %q", d)
	}
}

// TestMainWindowShowsTheNotice: what main has to say about this run (the
// app is another engine's client) shows in the window's banner.
func TestMainWindowShowsTheNotice(t *testing.T) {
	h := newAppHarness(t)
	h.u.Notice = "Another Sandbar process (pid 42) runs the sessions of this data folder"
	mw := h.mainWindow(t)
	if !mw.banner.box.Visible() || mw.banner.text.Text != h.u.Notice {
		t.Errorf("banner %v %q, want the notice", mw.banner.box.Visible(), mw.banner.text.Text)
	}
}
