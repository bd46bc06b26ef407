package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"

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
)

// noticeFor says what a state event asks of the person.
func noticeFor(ev session.Event) notice {
	if ev.Kind != session.EventState {
		return noticeNone
	}
	switch ev.State {
	case session.StateRunning:
		if ev.Activity == session.ActivityWaiting {
			return noticeWaiting
		}
	case session.StateStopped:
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

// notification is the desktop notification for notice n of the session
// described by what ("project · branch"); reason is its state's reason,
// in plain words (sessionStatus).
func notification(n notice, what, reason string) *fyne.Notification {
	switch n {
	case noticeWaiting:
		return fyne.NewNotification("Session waiting for you", what)
	case noticeFinished:
		return fyne.NewNotification("Session finished", what)
	case noticeFailed:
		// A failure's reason can hold console lines: the first line is the
		// gist, the session window has the rest.
		first, _, _ := strings.Cut(strings.TrimSpace(reason), "\n")
		if first == "" {
			return fyne.NewNotification("Session failed", what)
		}
		return fyne.NewNotification("Session failed", what+": "+first)
	}
	return nil
}

// Notifier sends a desktop notification when a session finishes, fails
// or waits for input: once per change of state.
type Notifier struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartNotifications follows every session and sends notifications
// through send (nil: the app's SendNotification, on the UI goroutine).
// Stop ends it.
func (u *UI) StartNotifications(send func(*fyne.Notification)) *Notifier {
	if send == nil {
		send = func(n *fyne.Notification) { u.post(func() { u.App.SendNotification(n) }) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{cancel: cancel, done: make(chan struct{})}
	events := u.Backend.Subscribe(ctx, "")
	go func() {
		defer close(n.done)
		tr := newTransitions()
		for ev := range events {
			k, changed := tr.step(ev)
			if !changed || k == noticeNone {
				continue
			}
			_, why := sessionStatus(store.Session{State: ev.State, Activity: ev.Activity, Reason: ev.Reason, ExitCode: ev.ExitCode})
			if note := notification(k, u.describe(ctx, ev.Session), why); note != nil {
				send(note)
			}
		}
	}()
	return n
}

// Stop ends the notifications and waits for their goroutine.
func (n *Notifier) Stop() {
	n.cancel()
	<-n.done
}

// describe names a session for a person: "project · branch", or its id
// when the store cannot say more.
func (u *UI) describe(ctx context.Context, id string) string {
	s, err := u.Backend.Get(ctx, id)
	if err != nil {
		return id
	}
	p, err := u.Backend.Project(ctx, s.ProjectID)
	if err != nil {
		return s.Branch
	}
	return fmt.Sprintf("%s · %s", p.Name, s.Branch)
}
