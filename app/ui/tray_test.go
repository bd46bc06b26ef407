package ui

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/assets"
)

func TestElapsed(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "<1m"},
		{59 * time.Second, "<1m"},
		{time.Minute, "1m"},
		{12*time.Minute + 59*time.Second, "12m"},
		{65 * time.Minute, "1h05m"},
		{26*time.Hour + 3*time.Minute, "1d2h"},
		{-time.Second, "<1m"},
	}
	for _, tc := range tests {
		if got := elapsed(tc.d); got != tc.want {
			t.Errorf("elapsed(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestBuildTrayModel(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	projects := []store.Project{{ID: 1, Name: "web"}, {ID: 2, Name: "api"}}
	sess := func(id string, state store.State, activity string, started time.Duration, ended time.Duration) store.Session {
		s := store.Session{ID: id, ProjectID: 1, Title: "Task " + id, Branch: "sandbar/" + id, State: state, Activity: activity, Started: now.Add(-started)}
		if ended > 0 {
			s.Ended = now.Add(-ended)
		}
		return s
	}
	tests := []struct {
		name      string
		sessions  []store.Session
		attention map[string]notice
		state     assets.TrayState
		labels    []string
		header    string
	}{
		{"nothing", nil, nil, assets.Idle, nil, "No sessions running"},
		{"ended sessions are not shown", []store.Session{sess("a", session.StateStopped, "", time.Hour, 30*time.Minute)}, nil,
			assets.Idle, nil, "No sessions running"},
		{"running", []store.Session{
			sess("a", session.StateRunning, session.ActivityWorking, 12*time.Minute+30*time.Second, 0),
			sess("b", session.StateBooting, "", 10*time.Second, 0),
		}, nil, assets.Running, []string{"Task a · working · 12m", "Task b · starting · <1m"}, "2 sessions running"},
		{"waiting needs the person", []store.Session{
			sess("a", session.StateRunning, session.ActivityWaiting, 2*time.Hour+time.Minute, 0),
		}, map[string]notice{"a": noticeWaiting}, assets.Attention, []string{"Task a · waiting for you · 2h01m"}, "1 session running · 1 needs you"},
		{"finished until seen", []store.Session{
			sess("a", session.StateRunning, session.ActivityWorking, 5*time.Minute, 0),
			sess("b", session.StateStopped, "", 50*time.Minute, 20*time.Minute),
			sess("c", session.StateFailed, "", 50*time.Minute, 40*time.Minute),
		}, map[string]notice{"b": noticeFinished, "c": noticeFailed}, assets.Attention,
			[]string{"Task a · working · 5m", "Task b · finished · 30m", "Task c · failed · 10m"}, "1 session running · 2 need you"},
		{"suspended is shown, not running", []store.Session{
			sess("a", session.StateSuspended, session.ActivityWaiting, 40*time.Minute, 0),
		}, nil, assets.Idle, []string{"Task a · suspended · 40m"}, "No sessions running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := buildTrayModel(tc.sessions, projects, tc.attention, now)
			if m.State != tc.state {
				t.Errorf("state %s, want %s", m.State, tc.state)
			}
			var labels []string
			for _, s := range m.Sessions {
				labels = append(labels, s.Label)
				if want := "web · sandbar/" + s.ID; s.Where != want {
					t.Errorf("%s's secondary text %q, want %q", s.ID, s.Where, want)
				}
			}
			if !slices.Equal(labels, tc.labels) {
				t.Errorf("sessions %q, want %q", labels, tc.labels)
			}
			if h := m.header(); h != tc.header {
				t.Errorf("header %q, want %q", h, tc.header)
			}
			if len(m.Projects) != 2 || m.Projects[0].Name != "web" {
				t.Errorf("recent projects %v, want web then api", m.Projects)
			}
		})
	}
}

// fakeTray stands in for the GLFW driver's tray: it records what the
// tray is handed (on the UI goroutine, the test's here).
type fakeTray struct {
	menus []*fyne.Menu
	icons []fyne.Resource
}

func (f *fakeTray) SetSystemTrayMenu(m *fyne.Menu)    { f.menus = append(f.menus, m) }
func (f *fakeTray) SetSystemTrayIcon(r fyne.Resource) { f.icons = append(f.icons, r) }
func (f *fakeTray) SetSystemTrayWindow(fyne.Window)   {}

func (f *fakeTray) menu() *fyne.Menu {
	if len(f.menus) == 0 {
		return nil
	}
	return f.menus[len(f.menus)-1]
}

func (f *fakeTray) icon() fyne.Resource {
	if len(f.icons) == 0 {
		return nil
	}
	return f.icons[len(f.icons)-1]
}

// waitTray runs the UI until the tray shows a menu and icon that satisfy
// ok, and returns that menu.
func waitTray(t *testing.T, h *appHarness, f *fakeTray, what string, ok func(m *fyne.Menu, icon fyne.Resource) bool) *fyne.Menu {
	t.Helper()
	h.q.WaitFor(t, 30*time.Second, "the tray showing "+what, func() bool {
		return f.menu() != nil && ok(f.menu(), f.icon())
	})
	return f.menu()
}

func trayLabels(m *fyne.Menu) []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, i := range m.Items {
		if !i.IsSeparator {
			out = append(out, i.Label)
		}
	}
	return out
}

func trayItem(m *fyne.Menu, prefix string) *fyne.MenuItem {
	for _, i := range m.Items {
		if strings.HasPrefix(i.Label, prefix) {
			return i
		}
	}
	return nil
}

// The tray against a real Manager: sessions appear, change and go, the
// icon follows, Stop works, a finished session needs attention until it
// is opened, and nothing is rebuilt when nothing changed.
func TestTrayRealManager(t *testing.T) {
	h := newAppHarness(t)
	e, u := h.env, h.u
	repo := e.Repo(t, "web app")
	var opened []string
	u.OpenSession = func(id string) { opened = append(opened, id) }
	ft := &fakeTray{}
	clock := struct {
		sync.Mutex
		now time.Time
	}{now: time.Now()}
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.now }
	updated := make(chan struct{}, 1)
	// No tick to speak of: the events alone must keep the tray up to date.
	tray := u.StartTray(ft, TrayOptions{Tick: time.Hour, Now: now, afterUpdate: func() {
		select {
		case updated <- struct{}{}:
		default:
		}
	}})
	defer tray.Stop()
	ctx := context.Background()

	waitTray(t, h, ft, "the idle menu", func(m *fyne.Menu, icon fyne.Resource) bool {
		return slices.Equal(trayLabels(m), []string{"No sessions running", "New Session…", "Add Repository…", "Open Sandbar", "Settings…", "Quit"}) &&
			icon == assets.TrayIdleColor
	})

	s, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("sleep 60"), Prompt: "Serve the web app\non port 80"})
	if err != nil {
		t.Fatal(err)
	}
	m := waitTray(t, h, ft, "the running session", func(m *fyne.Menu, icon fyne.Resource) bool {
		return trayItem(m, "Serve the web app · working · ") != nil && icon == assets.TrayRunningColor
	})
	if got := trayLabels(m)[0]; got != "1 session running" {
		t.Errorf("header %q", got)
	}
	sub := trayItem(m, "Serve the web app · ").ChildMenu
	if got := trayLabels(sub); !slices.Equal(got, []string{"web app · " + s.Branch, "Open", "Stop", "Create branch " + s.Branch}) {
		t.Errorf("session submenu %q, want where it works, then its actions", got)
	}
	if !sub.Items[0].Disabled {
		t.Error("the submenu's project and branch can be clicked")
	}

	// A rename shows at once.
	if _, err := e.Manager.Rename(ctx, s.ID, "Web app, served"); err != nil {
		t.Fatal(err)
	}
	m = waitTray(t, h, ft, "the renamed session", func(m *fyne.Menu, _ fyne.Resource) bool {
		return trayItem(m, "Web app, served · working · ") != nil
	})
	recent := trayItem(m, "Recent Projects")
	if recent == nil || !slices.Equal(trayLabels(recent.ChildMenu), []string{"web app"}) {
		t.Fatalf("no Recent Projects holding web app in %q", trayLabels(m))
	}

	// Steady state: looking again and again hands the tray nothing new.
	h.q.Drain()
	menus, icons := len(ft.menus), len(ft.icons)
	for range 20 {
		tray.poke()
		<-updated
	}
	h.q.Drain()
	if len(ft.menus) != menus || len(ft.icons) != icons {
		t.Errorf("nothing changed, yet the tray got %d menus and %d icons more", len(ft.menus)-menus, len(ft.icons)-icons)
	}
	// Two minutes on (the clock started just before the session), the
	// elapsed time changes: a new menu, the same icon.
	clock.Lock()
	clock.now = clock.now.Add(2 * time.Minute)
	clock.Unlock()
	tray.poke()
	m = waitTray(t, h, ft, "the elapsed time move on", func(m *fyne.Menu, _ fyne.Resource) bool {
		return trayItem(m, "Web app, served · working · 1m") != nil
	})
	if len(ft.icons) != icons {
		t.Errorf("the icon was set again when only a label changed")
	}

	// Stop from the menu: the session goes, and it needs nobody.
	trayItem(trayItem(m, "Web app, served · ").ChildMenu, "Stop").Action()
	waitTray(t, h, ft, "the idle menu after Stop", func(m *fyne.Menu, icon fyne.Resource) bool {
		return trayItem(m, "Web app, served · ") == nil && icon == assets.TrayIdleColor
	})
	if got, _ := e.Manager.Get(ctx, s.ID); got.State != session.StateStopped {
		t.Errorf("after Stop the session is %s", got.State)
	}

	// A session that finishes on its own needs attention until opened.
	done, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("true")})
	if err != nil {
		t.Fatal(err)
	}
	m = waitTray(t, h, ft, "the finished session", func(m *fyne.Menu, icon fyne.Resource) bool {
		return trayItem(m, "true · finished · ") != nil && icon == assets.TrayAttentionColor
	})
	if got := trayLabels(m)[0]; got != "No sessions running · 1 needs you" {
		t.Errorf("header %q", got)
	}
	sub = trayItem(m, "true · ").ChildMenu
	if !trayItem(sub, "Stop").Disabled {
		t.Error("Stop is enabled for an ended session")
	}
	trayItem(sub, "Open").Action()
	if !slices.Equal(opened, []string{done.ID}) {
		t.Errorf("opened %v, want %s", opened, done.ID)
	}
	waitTray(t, h, ft, "the idle icon once the session was opened", func(m *fyne.Menu, icon fyne.Resource) bool {
		return trayItem(m, "true · ") == nil && icon == assets.TrayIdleColor
	})
}

// Quit asks first, in the Sandbar window, while sessions run, and quits
// at once otherwise.
func TestTrayQuit(t *testing.T) {
	h := newAppHarness(t)
	e, u := h.env, h.u
	// Close the windows on a copy of the driver's list: closing one
	// shifts the list the harness's own cleanup ranges over.
	t.Cleanup(func() {
		for _, w := range slices.Clone(u.App.Driver().AllWindows()) {
			w.Close()
		}
	})
	repo := e.Repo(t, "q")
	ft := &fakeTray{}
	quits := 0
	tray := u.StartTray(ft, TrayOptions{Quit: func() { quits++ }})
	defer tray.Stop()
	m := waitTray(t, h, ft, "a menu", func(*fyne.Menu, fyne.Resource) bool { return true })
	trayItem(m, "Quit").Action()
	if quits != 1 {
		t.Fatalf("Quit with no session ran quit %d times, want 1", quits)
	}

	if _, err := e.Manager.Start(context.Background(), session.Options{Repo: repo, Agent: sessiontest.Shell("sleep 60")}); err != nil {
		t.Fatal(err)
	}
	m = waitTray(t, h, ft, "a running session", func(m *fyne.Menu, _ fyne.Resource) bool { return trayItem(m, "sleep 60 · ") != nil })
	trayItem(m, "Quit").Action()
	h.q.Drain()
	if quits != 1 {
		t.Fatal("Quit with a running session quit without asking")
	}
	question := func() fyne.CanvasObject {
		t.Helper()
		if u.mainWin == nil {
			t.Fatal("Quit with a running session did not open the Sandbar window")
		}
		top := u.mainWin.win.Canvas().Overlays().Top()
		if top == nil {
			t.Fatal("Quit with a running session asked nothing")
		}
		return top
	}
	if !strings.Contains(trayText(question()), "1 session is running") {
		t.Errorf("the question says %q", trayText(question()))
	}
	if !strings.Contains(trayText(question()), "Keep sessions") {
		t.Errorf("the question does not offer to keep the sessions: %q", trayText(question()))
	}
	test.Tap(trayButton(t, question(), "Cancel"))
	if quits != 1 {
		t.Fatal("Cancel quit")
	}
	trayItem(m, "Quit").Action()
	test.Tap(trayButton(t, question(), "Stop and Quit"))
	if quits != 2 {
		t.Fatalf("confirming ran quit %d times, want once more", quits-1)
	}
	if p := u.QuitPolicy(context.Background()); p != session.KeepStop {
		t.Errorf("after Stop and Quit the quit policy is %q", p)
	}
	// Keep, remembered: the answer and the setting both keep.
	trayItem(m, "Quit").Action()
	test.Tap(trayCheck(t, question(), "Remember my choice"))
	test.Tap(trayButton(t, question(), "Keep Sessions and Quit"))
	if quits != 3 {
		t.Fatalf("keeping ran quit %d times, want once more", quits-2)
	}
	if p := u.QuitPolicy(context.Background()); p != session.KeepResume {
		t.Errorf("after Keep Sessions and Quit the quit policy is %q", p)
	}
	if v, _, _ := u.Settings.Setting(context.Background(), KeyKeepSessions); v != string(session.KeepResume) {
		t.Errorf("the remembered choice is %q in Settings", v)
	}

	// A client's quit leaves the sessions running in the engine: nothing
	// to ask.
	tray.Stop()
	clientQuits := 0
	client := u.StartTray(ft, TrayOptions{Quit: func() { clientQuits++ }, Client: true})
	defer client.Stop()
	m = waitTray(t, h, ft, "the running session", func(m *fyne.Menu, _ fyne.Resource) bool { return trayItem(m, "sleep 60 · ") != nil })
	trayItem(m, "Quit").Action()
	h.q.Drain()
	if clientQuits != 1 {
		t.Errorf("a client's Quit with a session running in the engine ran quit %d times, want 1 without asking", clientQuits)
	}
}

// Template icons are themed resources (Fyne's mark for a macOS template
// image) holding the template PNG.
func TestTrayTemplateIcon(t *testing.T) {
	tr := &Tray{o: TrayOptions{Template: true}}
	r, ok := tr.icon(assets.Running).(*theme.ThemedResource)
	if !ok {
		t.Fatalf("template icon is a %T, want *theme.ThemedResource", tr.icon(assets.Running))
	}
	if !strings.HasSuffix(r.Name(), assets.TrayRunning.Name()) {
		t.Errorf("template icon %s, want %s", r.Name(), assets.TrayRunning.Name())
	}
	tr.o.Template = false
	if got := tr.icon(assets.Attention); got != assets.TrayAttentionColor {
		t.Errorf("colour icon %s, want %s", got.Name(), assets.TrayAttentionColor.Name())
	}
}

func trayWalk(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	f(o)
	switch x := o.(type) {
	case *fyne.Container:
		for _, c := range x.Objects {
			trayWalk(c, f)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(x).Objects() {
			trayWalk(c, f)
		}
	}
}

func trayButton(t *testing.T, root fyne.CanvasObject, label string) *widget.Button {
	t.Helper()
	var b *widget.Button
	trayWalk(root, func(o fyne.CanvasObject) {
		if x, ok := o.(*widget.Button); ok && x.Text == label {
			b = x
		}
	})
	if b == nil {
		t.Fatalf("no button %q", label)
	}
	return b
}

func trayText(root fyne.CanvasObject) string {
	var parts []string
	trayWalk(root, func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok {
			parts = append(parts, l.Text)
		}
	})
	return strings.Join(parts, "\n")
}

func trayCheck(t *testing.T, root fyne.CanvasObject, prefix string) *widget.Check {
	t.Helper()
	var c *widget.Check
	trayWalk(root, func(o fyne.CanvasObject) {
		if x, ok := o.(*widget.Check); ok && strings.HasPrefix(x.Text, prefix) {
			c = x
		}
	})
	if c == nil {
		t.Fatalf("no check box %q", prefix)
	}
	return c
}
