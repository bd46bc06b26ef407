package ui

import (
	"context"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"

	"sandbar/app/session"
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
// menu replaces that one). A session opened from anywhere (openSession)
// no longer needs the person.
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
	u.tray = t
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
