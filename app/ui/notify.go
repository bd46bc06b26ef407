package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
)

// notice is what a session's latest state asks of the person.
type notice int

const (
	noticeNone     notice = iota
	noticeWaiting         // the agent finished a turn and waits for input
	noticeFinished        // the agent exited 0 on its own
	noticeFailed
	noticeNotSaved // stopped, and its work could not be saved
	noticePaused   // its VM paused: the disk holding Sandbar's data is full
)

// noticeFor says what a state event asks of the person.
func noticeFor(ev session.Event) notice {
	if ev.Kind != session.EventState {
		return noticeNone
	}
	switch ev.State {
	case session.StateRunning:
		switch ev.Activity {
		case session.ActivityWaiting:
			return noticeWaiting
		case session.ActivityPaused:
			return noticePaused
		}
	case session.StateStopped:
		if _, ok := session.NotSaved(ev.Reason); ok {
			return noticeNotSaved // also after a stop the person asked for
		}
		if session.StoppedByPerson(ev.Reason) {
			return noticeNone // nobody needs to be told what they just did
		}
		if ev.ExitCode != nil && *ev.ExitCode == 0 {
			return noticeFinished
		}
	case session.StateFailed:
		return noticeFailed
	}
	return noticeNone
}

// transitions remembers each session's last notice so that each change
// is told once: a session may publish the same state more than once
// (stopping, then stopped with the same reason; a waiting agent's idle
// timer), and only a change is news.
type transitions struct {
	last map[string]notice
}

func newTransitions() *transitions { return &transitions{last: map[string]notice{}} }

// step records ev and returns the session's notice after it, and
// whether that is a change (news); events that are not about state are
// never news.
func (t *transitions) step(ev session.Event) (notice, bool) {
	switch ev.Kind {
	case session.EventRemoved:
		_, known := t.last[ev.Session]
		delete(t.last, ev.Session)
		return noticeNone, known
	case session.EventState:
	default:
		return t.last[ev.Session], false
	}
	n := noticeFor(ev)
	if prev, ok := t.last[ev.Session]; ok && prev == n {
		return n, false
	}
	t.last[ev.Session] = n
	return n, true
}

// sessionNote is a desktop notification about one session; clicking it
// opens the session's window.
type sessionNote struct {
	Session string // its id
	Title   string // the session's title and what happened: "Fix the login bug — finished"
	Body    string // where it works: "shop front · sandbar/3fe3b76afb"
}

// noteReason is the most of a failure's reason a notification's title
// holds; the session window has all of it.
const noteReason = 100

// notification is the desktop notification for notice n of session id,
// called title, working where ("project · branch"); reason is its
// state's reason.
func notification(n notice, id, title, where, reason string) *sessionNote {
	note := &sessionNote{Session: id, Body: where}
	switch n {
	case noticeWaiting:
		note.Title = title + " — waiting for you"
	case noticeFinished:
		note.Title = title + " — finished"
	case noticeFailed:
		// A failure's reason can hold console lines: the first line is the
		// gist, the session window has the rest.
		first, _, _ := strings.Cut(strings.TrimSpace(reason), "\n")
		note.Title = title + " — failed"
		if first = strings.TrimSpace(first); first != "" {
			note.Title += ": " + clipTitle(first, noteReason)
		}
	case noticePaused:
		// "paused: the disk holding Sandbar's data is full (12 MB free)":
		// told once, however the free space it says changes.
		note.Title = title + " — " + clipTitle(reason, noteReason)
	case noticeNotSaved:
		why, _ := session.NotSaved(reason)
		first, _, _ := strings.Cut(strings.TrimSpace(why), "\n")
		note.Title = title + " — stopped, work not saved: " + clipTitle(first, noteReason)
	default:
		return nil
	}
	return note
}

// Notifier sends a desktop notification when a session finishes, fails
// or waits for input: once per change of state.
type Notifier struct {
	cancel  context.CancelFunc
	done    chan struct{}
	desktop desktopNotifier // nil: Fyne's notifications (or a test's)
}

// StartNotifications follows every session and sends notifications
// through send. With a nil send they go to the desktop's notification
// server, where clicking one opens its session (newDesktopNotifier), or,
// where there is none, through Fyne's SendNotification. Stop ends it.
func (u *UI) StartNotifications(send func(sessionNote)) *Notifier {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{cancel: cancel, done: make(chan struct{})}
	if send == nil {
		send = u.desktopSend(n)
	}
	started := time.Now()
	events := u.Backend.Subscribe(ctx, "")
	go func() {
		defer close(n.done)
		tr := newTransitions()
		// A session that ended before this start was told of then (or by
		// the Sandbar that ran then): the state events a merge, a rename
		// or a restore publish for it again are no news. Those that run
		// are left to their events, which may already be queued.
		if ss, err := u.Backend.List(ctx); err == nil {
			for _, s := range ss {
				if !session.Live(s.State) && !s.Ended.IsZero() && s.Ended.Before(started) {
					tr.step(session.Event{Session: s.ID, Kind: session.EventState, State: s.State, Activity: s.Activity, Reason: s.Reason, ExitCode: s.ExitCode})
				}
			}
		}
		for ev := range events {
			if ev.Kind == session.EventRemoved {
				// Kept: a session back from the trash (Undo) publishes the
				// state it had, which was told already.
				continue
			}
			k, changed := tr.step(ev)
			if !changed || k == noticeNone {
				continue
			}
			_, why := sessionStatus(store.Session{State: ev.State, Activity: ev.Activity, Reason: ev.Reason, ExitCode: ev.ExitCode})
			title, where := u.describe(ctx, ev.Session)
			if note := notification(k, ev.Session, title, where, why); note != nil {
				send(*note)
			}
		}
	}()
	return n
}

// Stop ends the notifications and waits for their goroutine.
func (n *Notifier) Stop() {
	n.cancel()
	<-n.done
	if n.desktop != nil {
		n.desktop.Close()
	}
}

// describe names a session for a person: its title, and "project ·
// branch"; its id when the store cannot say more.
func (u *UI) describe(ctx context.Context, id string) (title, where string) {
	s, err := u.Backend.Get(ctx, id)
	if err != nil {
		return id, ""
	}
	p, err := u.Backend.Project(ctx, s.ProjectID)
	if err != nil {
		return session.Title(s), s.Branch
	}
	return session.Title(s), fmt.Sprintf("%s · %s", p.Name, s.Branch)
}
