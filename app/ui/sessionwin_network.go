package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// maxDeniedRows bounds the denied destinations the tab keeps, as the
// store does per session: a guest trying a million names costs a
// bounded list.
const maxDeniedRows = store.MaxNetAttempts

// netKey is a destination: what the tab dedupes denials by.
type netKey struct {
	proto, host string
	port        int
}

func keyOf(a store.NetAttempt) netKey { return netKey{proto: a.Proto, host: a.Host, port: a.Port} }

// deniedRow is one denied destination and what the person did about it.
type deniedRow struct {
	a store.NetAttempt
	// busy: an Allow is on its way to the backend.
	busy bool
	// allowedAt is when an Allow of the tab's took; a denial after it
	// puts the row back as it was.
	allowedAt time.Time
	// note replaces the reason: what the Allow did, or why it failed.
	note    string
	noteImp widget.Importance
}

// netPanel is the session window's Network tab: the mode and its rules,
// each destination the guest was denied (with Allow for this session and
// for the project), how many connections were allowed, and the ports
// published on this machine. Its fields belong to the UI goroutine but
// for pending and portsSeq.
type netPanel struct {
	w *sessionWindow

	summary  *widget.Label
	notes    *widget.Label
	counts   *widget.Label
	project  *widget.Button
	loadNote *widget.Label

	denied []*deniedRow // the latest first
	byKey  map[netKey]*deniedRow
	// reached is, per destination, the last time a connection to it was
	// allowed and made (from the store).
	reached map[netKey]time.Time
	// allowed and failed count the connections allowed (failed: allowed
	// but not made), to dests destinations, from the store.
	allowed, failed, dests int
	list                   *widget.List
	empty                  *widget.Label
	detail                 *widget.Label

	// failedOnes are the destinations allowed but not reached, the
	// latest first; showFailed lists them in detail.
	failedOnes []store.NetAttempt
	showFailed *widget.Button

	ports       []netstack.Port
	portList    *widget.List
	portsNote   *widget.Label
	guestPort   *entry
	publish     *widget.Button
	portsStatus *widget.Label
	// look finds the desktop's opener (tests replace it).
	look func(string) (string, error)

	content fyne.CanvasObject

	// mu guards pending: denials from the events goroutine, shown by one
	// post however many arrive meanwhile.
	mu      sync.Mutex
	pending []store.NetAttempt
	// portsSeq counts the ports events received, so a list read before
	// one arrived does not replace it.
	portsSeq atomic.Int64
	// reloading is set while a reload runs; again asks it for another
	// once it is done.
	reloading, again atomic.Bool
	// loaded: the first reload has been shown (the window's events
	// goroutine makes it).
	loaded bool
}

func newNetPanel(w *sessionWindow) *netPanel {
	p := &netPanel{w: w, byKey: map[netKey]*deniedRow{}, reached: map[netKey]time.Time{}, look: lookPath}
	p.summary = widget.NewLabel("Reading the session's network…")
	p.summary.Wrapping = fyne.TextWrapWord
	p.notes = note("")
	p.notes.Hide()
	p.counts = widget.NewLabelWithStyle("", fyne.TextAlignTrailing, fyne.TextStyle{})
	p.counts.Importance = widget.LowImportance
	p.counts.Truncation = fyne.TextTruncateEllipsis
	p.loadNote = statusLabel()
	p.project = widget.NewButtonWithIcon("Project Settings…", theme.SettingsIcon(), func() { w.u.ShowProjectSettings(w.sess.ProjectID) })

	p.list = widget.NewList(
		func() int { return len(p.denied) },
		func() fyne.CanvasObject { return newDeniedItem(p) },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(p.denied) {
				o.(*deniedItem).set(p.denied[i])
			}
		})
	p.list.OnSelected = func(i widget.ListItemID) {
		p.list.UnselectAll()
		if i < len(p.denied) {
			p.showDetail(p.denied[i])
		}
	}
	p.empty = widget.NewLabelWithStyle("No connection was denied.", fyne.TextAlignCenter, fyne.TextStyle{Italic: true})
	p.detail = note("Select a destination to read why it was denied, in full.")
	p.showFailed = widget.NewButton("Show failed", p.listFailed)
	p.showFailed.Importance = widget.LowImportance
	p.showFailed.Hide()

	head := container.NewBorder(nil, nil, nil, container.NewVBox(p.project), container.NewVBox(p.summary, p.notes, p.loadNote))
	// The detail shows two lines, and scrolls for more.
	detail := container.NewVScroll(p.detail)
	detail.SetMinSize(fyne.NewSize(0, widget.NewLabel("1\n2").MinSize().Height))
	denied := container.NewBorder(container.NewBorder(nil, nil, heading("Denied connections"), p.showFailed, p.counts), detail, nil, nil,
		container.NewStack(p.list, container.NewCenter(p.empty)))
	split := container.NewVSplit(denied, p.portsPane())
	split.Offset = 0.75
	p.content = container.NewBorder(head, nil, nil, nil, split)
	p.setPortsNote()
	return p
}

// reload reads the attempts, the policy and the ports off the UI
// goroutine and shows them.
func (p *netPanel) reload(ctx context.Context) {
	p.reloading.Store(true)
	defer func() {
		p.reloading.Store(false)
		if p.again.Swap(false) {
			p.w.ui(p.reloadSoon)
		}
	}()
	as, aerr := p.w.u.Backend.NetAttempts(ctx, p.w.id)
	sum, serr := p.w.u.Backend.NetSummary(ctx, p.w.id)
	seq := p.portsSeq.Load()
	var ports []netstack.Port
	var perr error
	// Only a running session has ports: asking about another would,
	// beside another process's engine, start one for nothing.
	if s, err := p.w.u.Backend.Get(ctx, p.w.id); err == nil && s.State == session.StateRunning {
		ports, perr = p.w.u.Backend.Ports(ctx, p.w.id)
	}
	if ctx.Err() != nil {
		return
	}
	p.w.ui(func() {
		p.loaded = true
		var problems []string
		if aerr != nil {
			problems = append(problems, "Cannot read what the session tried: "+sentence(aerr.Error()))
		} else {
			p.setAttempts(as)
		}
		if serr != nil {
			problems = append(problems, "Cannot read the session's network rules: "+sentence(serr.Error()))
		} else {
			p.setSummary(sum)
		}
		setStatus(p.loadNote, widget.DangerImportance, strings.Join(problems, "\n"))
		if p.portsSeq.Load() == seq {
			p.setPorts(ports, perr)
		}
	})
}

// reloadSoon reloads unless a reload is under way (after events were
// dropped, or when the tab is shown). It runs on the UI goroutine.
func (p *netPanel) reloadSoon() {
	if p.reloading.CompareAndSwap(false, true) {
		p.w.spawn(p.reload)
	} else {
		p.again.Store(true) // what is under way may have read too early
	}
}

func (p *netPanel) setSummary(sum session.NetSummary) {
	p.summary.SetText(summaryText(sum, p.w.sess))
	var notes []string
	for i, n := range sum.Notes {
		if i == 3 {
			notes = append(notes, fmt.Sprintf("And %d more notes: see the Log.", len(sum.Notes)-i))
			break
		}
		notes = append(notes, sentence(sbwidget.ClipRunes(displayLine(n), 300)))
	}
	p.notes.SetText(strings.Join(notes, "\n"))
	if len(notes) > 0 {
		p.notes.Show()
	} else {
		p.notes.Hide()
	}
}

// setAttempts merges what the store holds: its counts, and the
// destinations reached. A live denial the store has not caught up with
// stays.
func (p *netPanel) setAttempts(as []store.NetAttempt) {
	p.allowed, p.failed, p.dests = 0, 0, 0
	p.failedOnes = p.failedOnes[:0]
	clear(p.reached)
	for _, a := range as {
		k := keyOf(a)
		if a.Allowed {
			p.dests++
			p.allowed += a.Count
			if a.Error != "" {
				p.failed += a.Count
				p.failedOnes = append(p.failedOnes, a)
			} else if a.Last.After(p.reached[k]) {
				p.reached[k] = a.Last
			}
			continue
		}
		if r := p.byKey[k]; r != nil {
			if !r.a.Last.After(a.Last) {
				r.a = a
			}
			continue
		}
		if len(p.denied) < maxDeniedRows {
			r := &deniedRow{a: a}
			p.denied = append(p.denied, r)
			p.byKey[k] = r
		}
	}
	slices.SortStableFunc(p.denied, func(x, y *deniedRow) int { return y.a.Last.Compare(x.a.Last) })
	slices.SortStableFunc(p.failedOnes, func(x, y store.NetAttempt) int { return y.Last.Compare(x.Last) })
	p.refreshList()
}

// event takes the network's events (denials, ports, and events dropped)
// from the window's events goroutine.
func (p *netPanel) event(ev session.Event) {
	switch ev.Kind {
	case session.EventNet:
		if ev.Net != nil {
			p.queue(*ev.Net)
		}
	case session.EventPorts:
		p.portsSeq.Add(1)
		ports := slices.Clone(ev.Ports)
		p.w.ui(func() { p.setPorts(ports, nil) })
	case session.EventDropped:
		// Denials may have been among the events missed: the store has
		// them.
		p.w.ui(p.reloadSoon)
	}
}

// queue takes a denial from the events goroutine; one post shows every
// denial queued until it runs.
func (p *netPanel) queue(a store.NetAttempt) {
	p.mu.Lock()
	first := len(p.pending) == 0
	if len(p.pending) < maxDeniedRows {
		p.pending = append(p.pending, a)
	}
	p.mu.Unlock()
	if first {
		p.w.ui(p.drain)
	}
}

// drain shows the queued denials.
func (p *netPanel) drain() {
	p.mu.Lock()
	as := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, a := range as {
		p.add(a)
	}
	if len(as) > 0 {
		p.refreshList()
	}
}

// add shows one live denial: a destination already listed counts it and
// moves to the top, unless the store's count already holds it.
func (p *netPanel) add(a store.NetAttempt) {
	if a.Allowed {
		return
	}
	k := keyOf(a)
	r := p.byKey[k]
	switch {
	case r == nil:
		if len(p.denied) >= maxDeniedRows {
			return
		}
		r = &deniedRow{a: a}
		if r.a.Count < 1 {
			r.a.Count = 1
		}
		p.byKey[k] = r
		p.denied = append([]*deniedRow{r}, p.denied...)
		return
	case !a.Last.After(r.a.Last):
		return // counted already
	}
	r.a.Count += max(a.Count, 1)
	r.a.Last, r.a.Reason, r.a.Rule, r.a.Addr = a.Last, a.Reason, a.Rule, a.Addr
	if !r.allowedAt.IsZero() && a.Last.After(r.allowedAt) {
		// Denied again after the Allow: the rule did not open it.
		r.allowedAt, r.note = time.Time{}, ""
	}
	if i := slices.Index(p.denied, r); i > 0 {
		copy(p.denied[1:i+1], p.denied[:i])
		p.denied[0] = r
	}
}

// refreshList redraws the rows and the counts above them.
func (p *netPanel) refreshList() {
	counts := []string{fmt.Sprintf("%d allowed %s to %d %s", p.allowed, pluralWord(p.allowed, "connection", "connections"), p.dests, pluralWord(p.dests, "destination", "destinations"))}
	if p.failed > 0 {
		counts = append(counts, fmt.Sprintf("%d of them failed", p.failed))
		p.showFailed.Show()
	} else {
		p.showFailed.Hide()
	}
	counts = append(counts, fmt.Sprintf("%d %s denied", len(p.denied), pluralWord(len(p.denied), "destination", "destinations")))
	p.counts.SetText(strings.Join(counts, " · "))
	if len(p.denied) == 0 {
		p.empty.Show()
	} else {
		p.empty.Hide()
	}
	p.list.Refresh()
}

// showDetail shows one denial in full below the list.
func (p *netPanel) showDetail(r *deniedRow) {
	a := r.a
	verb := "denied"
	if a.Proto == session.ProtoWrite {
		verb = "a write refused"
	}
	text := fmt.Sprintf("%s (%s): %s %s, first at %s. Why: %s", destText(a), a.Proto, verb, strings.TrimPrefix(timesText(a), "once · "),
		a.First.Local().Format("15:04:05"), sbwidget.ClipRunes(displayLine(a.Reason), 600))
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	if a.Addr != "" && a.Addr != a.Host {
		text += " It resolved to " + a.Addr + "."
	}
	if session.ProxyRefused(a) {
		text += " Sandbar's rules allow it; this machine's proxy refused it, so Allow changes nothing."
	} else if rule := allowRule(a, policy.SourceSession); rule.Action != "" {
		text += " Allow adds “" + rule.String() + "” to the session's rules, or to the project's."
	}
	p.detail.SetText(text)
}

// allow adds the rule for r's destination to the session's or the
// project's rules; running sessions follow it at once.
func (p *netPanel) allow(r *deniedRow, scope session.NetScope) {
	if r.busy {
		return
	}
	where := "this session"
	if scope == session.ScopeProject {
		where = "this project"
	}
	if session.ProxyRefused(r.a) {
		r.note, r.noteImp = "Sandbar's rules already allow "+destText(r.a)+": this machine's proxy refused it, and no rule of Sandbar's changes that. Ask whoever runs the proxy.", widget.WarningImportance
		p.list.Refresh()
		return
	}
	rule := allowRule(r.a, policy.SourceSession)
	if rule.Action == "" {
		r.note, r.noteImp = "Sandbar cannot write a rule for "+destText(r.a)+": it names no host it can read.", widget.DangerImportance
		p.list.Refresh()
		return
	}
	target := strings.TrimPrefix(rule.String(), "allow ")
	r.busy, r.note, r.noteImp = true, "Allowing "+target+" for "+where+"…", widget.MediumImportance
	p.list.Refresh()
	p.w.spawn(func(ctx context.Context) {
		_, err := p.w.u.Backend.AddNetRule(ctx, p.w.id, scope, string(policy.Allow), target)
		if ctx.Err() != nil {
			return
		}
		p.w.ui(func() {
			r.busy = false
			if err != nil {
				r.note, r.noteImp = "Not allowed: "+sentence(err.Error()), widget.DangerImportance
			} else {
				r.allowedAt = time.Now()
				r.note, r.noteImp = "Allowed for "+where+" — try again ("+rule.String()+").", widget.SuccessImportance
			}
			p.list.Refresh()
			p.reloadSoon()
		})
	})
}
