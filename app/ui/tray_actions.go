package ui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

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
		open := fyne.NewMenuItem("Open", func() { t.u.openSession(id) })
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

// stop and merge run off the UI goroutine (a stop waits for the agent
// and the VM); the tray has no window, so what happened comes back as a
// notification.
func (t *Tray) stop(id string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := t.u.Backend.Stop(ctx, id)
		switch {
		case errors.Is(err, session.ErrNotSaved):
			// It stopped; the notification of its state says the work
			// was not saved, and why.
		case err != nil:
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
			msg += "; " + plural(n, "uncommitted file was", "uncommitted files were") + " left out"
		}
		t.tell("Merged", msg)
	}()
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

// confirmQuit asks, in the Sandbar window, what becomes of n running
// sessions: kept (suspended, to go on where they were) or stopped, their
// work saved; the person's setting is the answer offered first, and
// "Remember" makes the answer the setting (what a logout, or a quit of
// the headless engine, does). The answer is QuitPolicy's.
func (u *UI) confirmQuit(n int, quit func()) {
	u.ShowMain()
	msg := "1 session is running."
	if n > 1 {
		msg = fmt.Sprintf("%d sessions are running.", n)
	}
	msg += " Keep sessions: each is suspended, memory and all, and its agent goes on where it was when Sandbar starts again. Stop: their work stays on their branches, and Restart starts the agent anew."
	text := widget.NewLabel(msg)
	text.Wrapping = fyne.TextWrapWord
	remember := widget.NewCheck("Remember my choice (Settings, General)", nil)
	var d *dialog.CustomDialog
	answer := func(policy session.KeepPolicy) func() {
		return func() {
			d.Hide()
			u.quitPolicy = policy
			if remember.Checked && u.Settings != nil {
				b := u.Settings
				// This quit goes by the answer whatever becomes of the
				// setting; one that cannot be written (a full disk) is
				// seen in Settings, as it was, at the next start.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				b.SetSetting(ctx, KeyKeepSessions, string(policy))
				cancel()
			}
			quit()
		}
	}
	keepPolicy := session.KeepResume
	current := session.KeepStop
	if u.Settings != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, _, _ := u.Settings.Setting(ctx, KeyKeepSessions)
		cancel()
		if current = session.ParseKeepPolicy(v); current == session.KeepSuspended {
			keepPolicy = current
		}
	}
	keep := widget.NewButton("Keep Sessions and Quit", nil)
	stop := widget.NewButton("Stop and Quit", nil)
	keep.OnTapped, stop.OnTapped = answer(keepPolicy), answer(session.KeepStop)
	if current == session.KeepStop {
		stop.Importance = widget.HighImportance
	} else {
		keep.Importance = widget.HighImportance
	}
	cancelBtn := widget.NewButton("Cancel", func() { d.Hide() })
	d = dialog.NewCustomWithoutButtons("Quit Sandbar?", container.NewVBox(text, remember), u.mainWin.win)
	d.SetButtons([]fyne.CanvasObject{cancelBtn, stop, keep})
	d.Show()
}

// QuitPolicy is what the person chose at the quit question, or, when
// nothing asked (a logout, a quit with no session running), their
// setting: what main's stop does with the sessions (session.Quit).
func (u *UI) QuitPolicy(ctx context.Context) session.KeepPolicy {
	if u.quitPolicy != "" {
		return u.quitPolicy
	}
	if u.Settings == nil {
		return session.KeepStop
	}
	v, _, _ := u.Settings.Setting(ctx, KeyKeepSessions)
	return session.ParseKeepPolicy(v)
}
