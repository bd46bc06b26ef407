package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/assets"
)

// TrayOptions configure the tray (menu bar) menu.
type TrayOptions struct {
	// Template asks for template icons, which the macOS menu bar
	// recolours for light, dark and highlighted; elsewhere the coloured
	// icons are shown as drawn.
	Template bool
	// Quit stops the sessions and quits the app. The tray calls it on the
	// UI goroutine, after the person confirmed when sessions run.
	Quit func()
	// Client says the sessions run in another Sandbar process (the app is
	// that engine's client): quitting leaves them running, so Quit is
	// called without asking.
	Client bool
	// Tick is how often elapsed times are brought up to date; default
	// 15 s (labels show whole minutes).
	Tick time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Tooltip shows its text when the pointer rests on the tray icon
	// (the StatusNotifierItem's ToolTip on Linux, the status item's
	// toolTip on macOS). Fyne 2.8's desktop.App has no call for it, so
	// main hands in fyne.io/systray's SetTooltip, the tray Fyne's GLFW
	// driver runs; nil: no tooltip.
	Tooltip func(string)

	// afterUpdate, when set, runs after each look at the sessions (tests).
	afterUpdate func()
}

// recentProjects is how many projects the Recent Projects submenu lists.
const recentProjects = 8

// Tray keeps the system tray's icon and menu in step with the sessions.
// It holds a model of what the menu shows and touches the tray only when
// the model changed: rebuilding a tray menu makes it flicker in some
// desktops, and labels change at most once a minute (elapsed times).
type Tray struct {
	u    *UI
	d    desktop.App
	o    TrayOptions
	wake chan struct{}

	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	attention map[string]notice // sessions that need the person, until they look
	applied   *trayModel        // what the tray shows; nil before the first
	running   int               // live sessions, for Quit
	tipSent   int               // times applied.Tooltip was handed to o.Tooltip
}

// StartTray puts Sandbar in the system tray (the menu bar on macOS) and
// keeps its icon and menu up to date until Stop. It hands d the first
// menu before it returns: call it before the app runs, since Fyne's GLFW
// driver starts its tray only when it has a menu as Run begins (a later
// menu replaces that one).
func (u *UI) StartTray(d desktop.App, o TrayOptions) *Tray {
	if o.Tick <= 0 {
		o.Tick = 15 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tray{u: u, d: d, o: o, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		attention: map[string]notice{}}
	events := u.Backend.Subscribe(ctx, "")
	t.update(ctx)
	go t.loop(ctx, events)
	return t
}

// Stop ends the updates and waits for them; the tray keeps what it shows.
func (t *Tray) Stop() {
	t.cancel()
	<-t.done
}

func (t *Tray) loop(ctx context.Context, events <-chan session.Event) {
	defer close(t.done)
	tick := time.NewTicker(t.o.Tick)
	defer tick.Stop()
	tr := newTransitions()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if !t.apply(ev, tr) {
				continue
			}
			// A burst of changes (several sessions stopping at once) is
			// read in one go.
			t.drain(events, tr)
		case <-t.wake:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		t.update(ctx)
	}
}

// apply notes what ev means for the sessions that need the person, and
// reports whether it may change what the tray shows: a change of state
// may, log lines and stats may not.
func (t *Tray) apply(ev session.Event, tr *transitions) bool {
	if ev.Kind == session.EventTitle {
		return true // the label changes, no one needs telling
	}
	if ev.Kind != session.EventState && ev.Kind != session.EventRemoved {
		return false
	}
	if n, changed := tr.step(ev); changed {
		t.mu.Lock()
		if n == noticeNone {
			delete(t.attention, ev.Session)
		} else {
			t.attention[ev.Session] = n
		}
		t.mu.Unlock()
	}
	return true
}

// drain applies the events already queued, without waiting for more.
func (t *Tray) drain(events <-chan session.Event, tr *transitions) {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			t.apply(ev, tr)
		default:
			return
		}
	}
}

// poke asks the loop to look again soon.
func (t *Tray) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// seen records that the person looked at a session (all when id is "").
func (t *Tray) seen(id string) {
	t.mu.Lock()
	if id == "" {
		clear(t.attention)
	} else {
		delete(t.attention, id)
	}
	t.mu.Unlock()
	t.poke()
}

// update reads the sessions and projects and hands the tray a new icon
// or menu where the model changed.
func (t *Tray) update(ctx context.Context) {
	if t.o.afterUpdate != nil {
		defer t.o.afterUpdate()
	}
	sessions, err := t.u.Backend.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fyne.LogError("tray: list sessions", err)
		}
		return
	}
	projects, err := t.u.Backend.Projects(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fyne.LogError("tray: list projects", err)
		}
		return
	}
	t.mu.Lock()
	attention := make(map[string]notice, len(t.attention))
	for id, n := range t.attention {
		attention[id] = n
	}
	t.mu.Unlock()
	m := buildTrayModel(sessions, projects, attention, t.o.Now())

	t.mu.Lock()
	prev := t.applied
	t.applied = &m
	t.running = m.Live
	// The tooltip is sent again once after the first time: macOS drops
	// one set before Fyne's tray has made its status item.
	tipChanged := t.o.Tooltip != nil && (prev == nil || prev.Tooltip != m.Tooltip || t.tipSent < 2)
	if prev != nil && prev.Tooltip != m.Tooltip {
		t.tipSent = 0
	}
	if tipChanged {
		t.tipSent++
	}
	t.mu.Unlock()
	if tipChanged {
		t.o.Tooltip(m.Tooltip)
	}
	iconChanged := prev == nil || prev.State != m.State
	menuChanged := prev == nil || !prev.sameMenu(m)
	if !iconChanged && !menuChanged {
		return
	}
	// The menu first: the first menu is what starts Fyne's tray.
	t.u.post(func() {
		if menuChanged {
			t.d.SetSystemTrayMenu(t.menu(m))
		}
		if iconChanged {
			t.d.SetSystemTrayIcon(t.icon(m.State))
		}
	})
}

// icon is the tray icon for a state. Fyne v2.8 marks a tray icon as a
// macOS template image only when it is a *theme.ThemedResource; its
// content is then the PNG as drawn (the menu bar uses only its alpha).
func (t *Tray) icon(s assets.TrayState) fyne.Resource {
	r := assets.Tray(s, t.o.Template)
	if t.o.Template {
		return theme.NewThemedResource(r)
	}
	return r
}

// trayModel is what the tray shows: everything the menu's labels and
// actions depend on, and nothing else.
type trayModel struct {
	State     assets.TrayState
	Live      int // sessions with a VM
	Attention int // sessions that need the person
	Sessions  []traySession
	Projects  []trayProject
	// Tooltip is the glance in one line: "Sandbar — 2 running, 1
	// waiting for you".
	Tooltip string
}

type traySession struct {
	ID     string
	Label  string // its title, state and time
	Where  string // its project and branch
	Live   bool
	Branch string
	// Merged says where the session's work went ("Merged into main
	// (1a2b3c4)") when it was merged after its last run; "" otherwise.
	Merged string
}

type trayProject struct {
	ID   int64
	Name string
}

func (m trayModel) sameMenu(o trayModel) bool {
	return m.Live == o.Live && m.Attention == o.Attention &&
		slices.Equal(m.Sessions, o.Sessions) && slices.Equal(m.Projects, o.Projects)
}

// buildTrayModel says what the tray shows for these sessions (newest
// first) and projects (most recently used first) at now: every live
// session, and every other one that needs the person.
func buildTrayModel(sessions []store.Session, projects []store.Project, attention map[string]notice, now time.Time) trayModel {
	names := make(map[int64]string, len(projects))
	for _, p := range projects {
		names[p.ID] = p.Name
	}
	var m trayModel
	var glance trayGlance
	for _, s := range sessions {
		live := session.Live(s.State)
		n, needs := attention[s.ID]
		glance.add(s, n)
		if !live && !needs {
			continue
		}
		if live {
			m.Live++
		}
		if needs {
			m.Attention++
		}
		m.Sessions = append(m.Sessions, traySession{ID: s.ID, Live: live, Label: sessionLabel(s, n, now),
			Where: sessionWhere(s, names[s.ProjectID]), Branch: s.Branch, Merged: trayMerged(s)})
	}
	m.Tooltip = glance.String()
	for _, p := range projects {
		if len(m.Projects) == recentProjects {
			break
		}
		m.Projects = append(m.Projects, trayProject{ID: p.ID, Name: p.Name})
	}
	switch {
	case m.Attention > 0:
		m.State = assets.Attention
	case m.Live > 0:
		m.State = assets.Running
	default:
		m.State = assets.Idle
	}
	return m
}

// sessionLabel is "title · state · 12m".
func sessionLabel(s store.Session, n notice, now time.Time) string {
	state, _ := sessionStatus(s)
	switch {
	case s.State == session.StateRunning && s.Activity == session.ActivityRetrying, s.State == session.StateFailed:
		state = healthWords(s)
	case n == noticeFinished:
		state = "finished"
	}
	from := s.Started
	if from.IsZero() {
		from = s.Created
	}
	to := now
	if !s.Ended.IsZero() {
		to = s.Ended
	}
	return strings.Join([]string{clipTitle(session.Title(s), trayTitle), state, elapsed(to.Sub(from))}, " · ")
}

// trayTitle is the most of a title a tray item shows: menus do not cut
// long items, they widen.
const trayTitle = 48

// sessionWhere is "project · branch", a tray item's secondary text.
func sessionWhere(s store.Session, project string) string {
	if project == "" {
		project = fmt.Sprintf("project %d", s.ProjectID)
	}
	return project + " · " + s.Branch
}

// clipTitle cuts a title to n characters, marking the cut.
func clipTitle(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}

// elapsed is a duration in whole minutes: "<1m", "12m", "2h05m", "3d4h".
func elapsed(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m < 1:
		return "<1m"
	case m < 60:
		return fmt.Sprintf("%dm", m)
	case m < 24*60:
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
	return fmt.Sprintf("%dd%dh", m/(24*60), m%(24*60)/60)
}

// header is the menu's first line: the glance, in words.
func (m trayModel) header() string {
	var parts []string
	switch m.Live {
	case 0:
		parts = append(parts, "No sessions running")
	case 1:
		parts = append(parts, "1 session running")
	default:
		parts = append(parts, fmt.Sprintf("%d sessions running", m.Live))
	}
	if m.Attention > 0 {
		parts = append(parts, fmt.Sprintf("%d need%s you", m.Attention, map[bool]string{true: "s", false: ""}[m.Attention == 1]))
	}
	return strings.Join(parts, " · ")
}

// menu builds the tray menu for m. Its actions run on the UI goroutine.
func (t *Tray) menu(m trayModel) *fyne.Menu {
	header := fyne.NewMenuItem(m.header(), nil)
	header.Disabled = true
	items := []*fyne.MenuItem{header}
	if len(m.Sessions) > 0 {
		items = append(items, fyne.NewMenuItemSeparator())
	}
	for _, s := range m.Sessions {
		id := s.ID
		open := fyne.NewMenuItem("Open", func() { t.open(id) })
		stop := fyne.NewMenuItem("Stop", func() { t.stop(id) })
		stop.Disabled = !s.Live
		// The tray creates the session's branch; merging into the
		// current branch, which may refuse, is the session window's.
		merge := fyne.NewMenuItem("Create branch "+s.Branch, func() { t.merge(id) })
		if s.Merged != "" {
			merge = fyne.NewMenuItem(s.Merged, nil)
			merge.Disabled = true
		}
		where := fyne.NewMenuItem(s.Where, nil)
		where.Disabled = true
		item := fyne.NewMenuItem(s.Label, nil)
		item.ChildMenu = fyne.NewMenu("", where, fyne.NewMenuItemSeparator(), open, stop, merge)
		items = append(items, item)
	}
	items = append(items, fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("New Session…", func() { t.u.ShowNewSession(0) }),
		fyne.NewMenuItem("Add Repository…", t.addRepository))
	if len(m.Projects) > 0 {
		var recent []*fyne.MenuItem
		for _, p := range m.Projects {
			id := p.ID
			recent = append(recent, fyne.NewMenuItem(p.Name, func() { t.u.ShowNewSession(id) }))
		}
		item := fyne.NewMenuItem("Recent Projects", nil)
		item.ChildMenu = fyne.NewMenu("", recent...)
		items = append(items, item)
	}
	items = append(items, fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Open Sandbar", func() {
			t.seen("")
			t.u.ShowMain()
		}),
		fyne.NewMenuItem("Settings…", t.u.ShowSettings),
		fyne.NewMenuItemSeparator(),
		// Labelled "Quit" and last, Fyne's tray takes it as the app's quit
		// item rather than adding its own.
		fyne.NewMenuItem("Quit", t.quit),
	)
	return fyne.NewMenu("Sandbar", items...)
}

// addRepository asks for a repository from the tray; what happened shows
// in the Sandbar window.
func (t *Tray) addRepository() {
	t.u.ShowMain()
	t.u.AddRepository(t.u.mainWin.added)
}

func (t *Tray) open(id string) {
	t.seen(id)
	if t.u.OpenSession != nil {
		t.u.OpenSession(id)
		return
	}
	t.u.ShowMain()
}

// stop and merge run off the UI goroutine (a stop waits for the agent
// and the VM); the tray has no window, so what happened comes back as a
// notification.
func (t *Tray) stop(id string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := t.u.Backend.Stop(ctx, id); err != nil {
			t.tell("Could not stop the session", err.Error())
		}
	}()
}

func (t *Tray) merge(id string) {
	t.seen(id)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		title, where := t.u.describe(ctx, id)
		what := fmt.Sprintf("“%s” (%s)", title, where)
		res, err := t.u.Backend.Merge(ctx, id, session.MergeOptions{})
		if err != nil {
			t.tell("Could not merge "+what, err.Error())
			return
		}
		t.poke()
		msg := fmt.Sprintf("%s is in the repository at %.8s", what, res.Commit)
		if n := len(res.Uncommitted); n > 0 {
			msg += fmt.Sprintf("; %d uncommitted file(s) were left out", n)
		}
		t.tell("Merged", msg)
	}()
}

// trayMerged is the tray's line for a session whose work was merged
// after it last ran, "" for any other.
func trayMerged(s store.Session) string {
	m := s.Merged
	if m.IsZero() || session.Live(s.State) || m.Time.Before(s.Ended) {
		return ""
	}
	if m.Branch {
		return fmt.Sprintf("Branch %s created (%.7s)", m.Into, m.Commit)
	}
	return fmt.Sprintf("Merged into %s (%.7s)", m.Into, m.Commit)
}

func (t *Tray) tell(title, content string) {
	n := fyne.NewNotification(title, content)
	t.u.post(func() { t.u.App.SendNotification(n) })
}

// quit quits at once when no session runs, or when they run in another
// process, and asks first when quitting stops some.
func (t *Tray) quit() {
	t.mu.Lock()
	running := t.running
	t.mu.Unlock()
	quit := t.o.Quit
	if quit == nil {
		quit = t.u.App.Quit
	}
	if running == 0 || t.o.Client {
		quit()
		return
	}
	t.u.confirmQuit(running, quit)
}

// confirmQuit asks, in the Sandbar window, whether to stop n running
// sessions and quit.
func (u *UI) confirmQuit(n int, quit func()) {
	u.ShowMain()
	msg := "1 session is running. Quitting stops it; its work stays on its branch, and Restart goes on from there."
	if n > 1 {
		msg = fmt.Sprintf("%d sessions are running. Quitting stops them; their work stays on their branches, and Restart goes on from there.", n)
	}
	d := dialog.NewConfirm("Quit Sandbar?", msg, func(ok bool) {
		if ok {
			quit()
		}
	}, u.mainWin.win)
	d.SetConfirmText("Stop and Quit")
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}
