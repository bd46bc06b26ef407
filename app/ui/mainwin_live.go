package ui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

const (
	// uiFrame is the shortest time between two updates of a window from
	// the backend's events: at most 30 a second, however busy the
	// sessions are.
	uiFrame = time.Second / 30
	// resyncEvery is how often the window rereads projects and sessions
	// from the store, for what no event reports (a project added by the
	// CLI, a session another Sandbar runs).
	resyncEvery = 5 * time.Second
	// trustEvery is how often the window rereads the projects'
	// repository settings files, to say which wait for the person's
	// trust (they change with the person's checkouts and merges, which
	// no event reports).
	trustEvery = 30 * time.Second
)

// sessionRow is one session as the window shows it.
type sessionRow struct {
	s     store.Session
	stats *session.Stats
	cells sessionCells // what its row shows now
	// diff is its changes as the row shows them (mainwin_changes.go);
	// diffAsked is the record (diffKey) the saved stat was last asked
	// for, and diffBusy is set while an ask runs.
	diff      diffView
	diffAsked string
	diffBusy  bool
}

// sessionCells are the texts of a session's row; a row is redrawn only
// when they change.
type sessionCells struct {
	title                   string
	project, branch, detail string
	state                   string
	stateImp                widget.Importance
	changes, merged         string // the diff stat; where the work went
	age                     string // since it was created
	uptime, cpu, mem        string
	canStop, canMerge       bool // the row's actions (rowactions.go)
}

func sessionHeader() fyne.CanvasObject {
	h := func(s string) fyne.CanvasObject {
		l := widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		l.SizeName = theme.SizeNameCaptionText
		return l
	}
	return withRowActions(container.New(sessionColumns, h("Session"), h("State"), h("Changes"), h("Age"), h("CPU"), h("Memory")), nil)
}

// cellsFor renders a session's row at now.
func cellsFor(s store.Session, st *session.Stats, d diffView, project string, now time.Time) sessionCells {
	c := sessionCells{title: session.Title(s), project: project, branch: s.Branch, cpu: "—", mem: "—"}
	c.changes, c.merged = changesWords(s, d)
	c.age = ageWords(now, s.Created)
	c.state, c.detail = sessionStatus(s)
	c.canStop, c.canMerge = rowActionsFor(s)
	if c.project == "" {
		c.project = fmt.Sprintf("project %d", s.ProjectID)
	}
	switch s.State {
	case session.StateRunning:
		c.stateImp = widget.SuccessImportance
		if s.Activity == session.ActivityWaiting || s.Activity == session.ActivityRetrying {
			c.stateImp = widget.WarningImportance
		}
	case session.StateFailed:
		c.stateImp = widget.DangerImportance
	case session.StateInterrupted:
		c.stateImp = widget.WarningImportance
	case session.StateStopped:
		c.stateImp = widget.LowImportance
	default:
		c.stateImp = widget.MediumImportance
	}
	if !s.Started.IsZero() {
		switch {
		case session.Live(s.State):
			c.uptime = "up " + humanDuration(now.Sub(s.Started))
		case !s.Ended.IsZero():
			c.uptime = "ran " + humanDuration(s.Ended.Sub(s.Started))
		}
	}
	if st != nil && session.Live(s.State) {
		c.cpu = fmt.Sprintf("%.0f%%", st.CPU)
		if st.MemTotal > 0 {
			c.mem = fmt.Sprintf("%s / %s", doctor.HumanBytes(int64(st.MemUsed)), doctor.HumanBytes(int64(st.MemTotal)))
		} else {
			c.mem = doctor.HumanBytes(int64(st.MemUsed))
		}
	}
	return c
}

// sessionItem is one session's row.
// Its first column is the session's title, with its project, branch and
// state's reason beneath; its actions are at its end.
type sessionItem struct {
	widget.BaseWidget
	title, state, uptime, cpu, mem *widget.Label
	// detail, the second line, shows whole when clicked if it is cut;
	// else the click opens the session, as the row does.
	detail               *readAllLabel
	changes, merged, age *widget.Label
	actions              *rowActions
	content              fyne.CanvasObject
	shown                sessionCells
	id                   string
}

func newSessionItem(mw *mainWindow) *sessionItem {
	it := &sessionItem{title: widget.NewLabel(""), detail: newReadAllLabel(), state: widget.NewLabel(""),
		uptime: widget.NewLabel(""), cpu: widget.NewLabel(""), mem: widget.NewLabel(""),
		changes: widget.NewLabel(""), merged: widget.NewLabel(""), age: widget.NewLabel("")}
	for _, l := range it.labels() {
		l.Truncation = fyne.TextTruncateEllipsis
	}
	it.title.TextStyle.Bold = true
	it.detail.tapped = func() {
		if it.id != "" && mw.u.OpenSession != nil {
			mw.u.openSession(it.id)
		}
	}
	for _, l := range []*widget.Label{&it.detail.Label, it.merged, it.uptime} {
		l.SizeName = theme.SizeNameCaptionText
		l.Importance = widget.LowImportance
	}
	it.actions = newRowActions(mw, func() string { return it.id })
	it.actions.showHints(func(hint string) {
		if hint == "" {
			hint = rowDetail(it.shown)
		}
		it.detail.SetText(hint)
	})
	it.content = withRowActions(container.New(sessionColumns, container.NewVBox(it.title, it.detail),
		vcenter(it.state), container.NewVBox(it.changes, it.merged), container.NewVBox(it.age, it.uptime), vcenter(it.cpu), vcenter(it.mem)), it.actions)
	it.ExtendBaseWidget(it)
	return it
}

// labels are the row's texts.
func (it *sessionItem) labels() []*widget.Label {
	return []*widget.Label{it.title, &it.detail.Label, it.state, it.changes, it.merged, it.age, it.uptime, it.cpu, it.mem}
}

// set shows c for session id; it reports false, and touches nothing,
// when the row shows that already. The list asks every visible row to
// update whenever one changes, so this keeps the others as they are.
func (it *sessionItem) set(id string, c sessionCells) bool {
	if id == it.id && c == it.shown {
		return false
	}
	it.id, it.shown = id, c
	it.title.SetText(c.title)
	it.detail.SetText(rowDetail(c))
	it.actions.set(c)
	it.state.Importance = c.stateImp
	it.state.SetText(c.state)
	it.changes.SetText(c.changes)
	it.merged.SetText(c.merged)
	it.age.SetText(c.age)
	it.uptime.SetText(c.uptime)
	it.cpu.SetText(c.cpu)
	it.mem.SetText(c.mem)
	return true
}

// CreateRenderer implements fyne.Widget.
func (it *sessionItem) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(it.content)
}

// mainUpdate is one batch of changes for the window, gathered off the UI
// goroutine from the backend's events.
type mainUpdate struct {
	// projects and sessions, when all is set, are everything there is.
	all      bool
	projects []store.Project
	sessions []store.Session
	changed  []store.Session // sessions whose record changed
	stats    map[string]session.Stats
	changes  map[string]workspace.Changes // live changes reported
	removed  []string
	tick     bool // uptimes moved on
	// trust, when trusted is set, is each project's repository settings
	// that wait for the person or were refused (RepoReview.Attention).
	trusted bool
	trust   []projectTrust
}

// projectTrust is what the window's trust banner says of one project.
type projectTrust struct {
	id    int64
	notes []string
}

// pending gathers events between two window updates.
type pending struct {
	states  map[string]bool
	stats   map[string]session.Stats
	changes map[string]workspace.Changes // the live changes last reported
	removed map[string]bool
	tick    bool
	resync  bool
	trust   bool // reread the projects' repository settings
}

func newPending() *pending {
	return &pending{states: map[string]bool{}, stats: map[string]session.Stats{}, changes: map[string]workspace.Changes{}, removed: map[string]bool{}}
}

func (p *pending) empty() bool {
	return len(p.states) == 0 && len(p.stats) == 0 && len(p.changes) == 0 && len(p.removed) == 0 && !p.tick && !p.resync && !p.trust
}

// add notes ev; it reports whether the window needs an update for it
// (log lines, transcripts and file changes are the session window's).
func (p *pending) add(ev session.Event) bool {
	switch ev.Kind {
	case session.EventState, session.EventTitle:
		p.states[ev.Session] = true
	case session.EventStats:
		if ev.Stats != nil {
			p.stats[ev.Session] = *ev.Stats
		}
	case session.EventChanges:
		if ev.Changes != nil {
			p.changes[ev.Session] = *ev.Changes
		}
	case session.EventRemoved:
		p.removed[ev.Session] = true
		delete(p.states, ev.Session)
		delete(p.stats, ev.Session)
		delete(p.changes, ev.Session)
	default:
		return false
	}
	return true
}

// take turns what was gathered into an update, reading the records of
// sessions whose state changed, and starts gathering anew.
func (p *pending) take(ctx context.Context, b session.Service) mainUpdate {
	up := mainUpdate{tick: p.tick, stats: p.stats, changes: p.changes}
	if p.resync {
		ps, perr := b.Projects(ctx)
		ss, serr := b.List(ctx)
		if perr == nil && serr == nil {
			up.all, up.projects, up.sessions = true, ps, ss
		}
		if perr == nil && p.trust {
			up.trusted = true
			for _, pr := range ps {
				if rev, err := b.RepoTrust(ctx, pr.Path); err == nil {
					if notes := rev.Attention(); len(notes) > 0 {
						up.trust = append(up.trust, projectTrust{id: pr.ID, notes: notes})
					}
				}
			}
		}
	}
	for id := range p.states {
		s, err := b.Get(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			up.removed = append(up.removed, id)
		case err == nil:
			up.changed = append(up.changed, s)
		}
	}
	for id := range p.removed {
		up.removed = append(up.removed, id)
	}
	*p = *newPending()
	return up
}

// follow feeds the window from the backend until ctx ends: events are
// gathered and applied at most once per uiFrame; uptimes move on each
// second and everything is reread from the store every resyncEvery.
func (mw *mainWindow) follow(ctx context.Context) {
	u := mw.u
	events := u.Backend.Subscribe(ctx, "")
	p := newPending()
	p.resync, p.trust = true, true
	flush := time.NewTimer(0)
	armed := true
	arm := func() {
		if !armed {
			flush.Reset(uiFrame)
			armed = true
		}
	}
	second := time.NewTicker(time.Second)
	defer second.Stop()
	lastSync, lastTrust := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			flush.Stop()
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if p.add(ev) {
				arm()
			}
		case now := <-second.C:
			p.tick = true
			if now.Sub(lastSync) >= resyncEvery {
				p.resync, lastSync = true, now
			}
			if now.Sub(lastTrust) >= trustEvery {
				p.resync, p.trust, lastTrust = true, true, now
			}
			arm()
		case <-mw.reloadC:
			p.resync, p.trust = true, true
			arm()
		case <-flush.C:
			armed = false
			if p.empty() {
				continue
			}
			up := p.take(ctx, u.Backend)
			if ctx.Err() != nil {
				return
			}
			u.post(func() { mw.apply(up, time.Now()) })
		}
	}
}

// reload asks follow to reread projects and sessions now.
func (mw *mainWindow) reload() {
	select {
	case mw.reloadC <- struct{}{}:
	default:
	}
}

// apply brings the window up to date with up. Rows whose texts did not
// change are not redrawn.
func (mw *mainWindow) apply(up mainUpdate, now time.Time) {
	reshaped := false // rows came or went
	if up.all {
		mw.setProjects(up.projects)
		keep := map[string]bool{}
		for _, s := range up.sessions {
			keep[s.ID] = true
		}
		for id := range mw.byID {
			if !keep[id] {
				up.removed = append(up.removed, id)
			}
		}
		up.changed = append(up.sessions, up.changed...)
	}
	for _, id := range up.removed {
		if _, ok := mw.byID[id]; ok {
			delete(mw.byID, id)
			mw.sessions = slices.DeleteFunc(mw.sessions, func(r *sessionRow) bool { return r.s.ID == id })
			reshaped = true
		}
	}
	dirty := map[*sessionRow]bool{}
	var asked []*sessionRow // rows whose record came: their saved stat may be new
	for _, s := range up.changed {
		r, ok := mw.byID[s.ID]
		if !ok {
			r = &sessionRow{}
			mw.byID[s.ID] = r
			mw.sessions = append(mw.sessions, r)
			reshaped = true
		}
		if !session.Live(s.State) {
			r.stats = nil
			if r.diff.live {
				r.diff = diffView{}
			}
		}
		r.s = s
		dirty[r] = true
		asked = append(asked, r)
	}
	for id, ch := range up.changes {
		if r, ok := mw.byID[id]; ok && session.Live(r.s.State) {
			if d, ok := liveDiff(ch); ok {
				r.diff = d
				dirty[r] = true
			}
		}
	}
	for id, st := range up.stats {
		if r, ok := mw.byID[id]; ok && session.Live(r.s.State) {
			st := st
			r.stats = &st
			dirty[r] = true
		}
	}
	if up.tick {
		for _, r := range mw.sessions {
			if session.Live(r.s.State) {
				dirty[r] = true
			}
		}
	}
	if reshaped {
		slices.SortStableFunc(mw.sessions, func(a, b *sessionRow) int { return b.s.Created.Compare(a.s.Created) })
	}
	names := map[int64]string{}
	for _, p := range mw.projects {
		names[p.ID] = p.Name
	}
	redraw := reshaped
	for _, r := range mw.sessions {
		if !dirty[r] && !reshaped {
			continue
		}
		if c := cellsFor(r.s, r.stats, r.diff, names[r.s.ProjectID], now); c != r.cells {
			r.cells, redraw = c, true
		}
	}
	// One refresh: the list asks every visible row to update for any
	// refresh, and rows whose texts did not change ignore it
	// (sessionItem.set).
	if redraw {
		mw.sessionList.Refresh()
	}
	mw.fetchDiffs(asked)
	if up.trusted {
		mw.showTrust(up.trust)
	}
	mw.updateCounts()
	mw.loaded = true
	mw.showState()
}

// redrawRow renders one row again, refreshing the list when its texts
// changed.
func (mw *mainWindow) redrawRow(r *sessionRow, now time.Time) {
	project := ""
	for _, p := range mw.projects {
		if p.ID == r.s.ProjectID {
			project = p.Name
		}
	}
	if c := cellsFor(r.s, r.stats, r.diff, project, now); c != r.cells {
		r.cells = c
		mw.sessionList.Refresh()
	}
}

// setProjects replaces the projects; rows that did not change ignore
// the refresh (projectItem.set).
func (mw *mainWindow) setProjects(ps []store.Project) {
	if slices.Equal(ps, mw.projects) {
		return
	}
	mw.projects = ps
	mw.projectList.Refresh()
}

// updateCounts recounts sessions per project, and refreshes the project
// rows when a count changed.
func (mw *mainWindow) updateCounts() {
	counts := map[int64]int{}
	for _, r := range mw.sessions {
		counts[r.s.ProjectID]++
	}
	if !maps.Equal(counts, mw.counts) {
		mw.counts = counts
		mw.projectList.Refresh()
	}
}

// showState switches between the drop zone and the lists.
func (mw *mainWindow) showState() {
	if !mw.loaded {
		return
	}
	if len(mw.projects) == 0 && len(mw.sessions) == 0 {
		mw.body.Hide()
		mw.empty.Show()
		return
	}
	mw.empty.Hide()
	mw.body.Show()
	if len(mw.sessions) == 0 {
		mw.noSessions.Show()
	} else {
		mw.noSessions.Hide()
	}
}
