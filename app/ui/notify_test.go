package ui

import (
	"context"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

func trayExitCode(c int) *int { return &c }

func TestTransitions(t *testing.T) {
	state := func(state store.State, activity, reason string, exit *int) session.Event {
		return session.Event{Session: "s1", Kind: session.EventState, State: state, Activity: activity, Reason: reason, ExitCode: exit}
	}
	log := session.Event{Session: "s1", Kind: session.EventLog}
	removed := session.Event{Session: "s1", Kind: session.EventRemoved}
	type step struct {
		ev      session.Event
		want    notice
		changed bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"finished once", []step{
			{state(session.StateProvisioning, "", "cloning", nil), noticeNone, true},
			{state(session.StateBooting, "", "booting", nil), noticeNone, false},
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, false},
			{log, noticeNone, false},
			{state(session.StateStopping, "", "agent exited", trayExitCode(0)), noticeNone, false},
			{state(session.StateStopped, "", "agent finished", trayExitCode(0)), noticeFinished, true},
			{state(session.StateStopped, "", "agent finished", trayExitCode(0)), noticeFinished, false},
		}},
		{"failed", []step{
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, true},
			{state(session.StateFailed, "", "agent exited with code 3", trayExitCode(3)), noticeFailed, true},
		}},
		{"waiting each time it starts waiting", []step{
			{state(session.StateRunning, session.ActivityWaiting, "waiting for your message", nil), noticeWaiting, true},
			{state(session.StateRunning, session.ActivityWaiting, "idle for 5m0s", nil), noticeWaiting, false},
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, true},
			{state(session.StateRunning, session.ActivityWaiting, "waiting for your message", nil), noticeWaiting, true},
		}},
		{"stopped by the person is no news", []step{
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, true},
			{state(session.StateStopping, "", "stopped by the user", nil), noticeNone, false},
			{state(session.StateStopped, "", "stopped by the user", trayExitCode(0)), noticeNone, false},
		}},
		{"quit is no news", []step{
			{state(session.StateStopped, "", "Sandbar quit", trayExitCode(0)), noticeNone, true},
		}},
		{"stopped with a bad exit is not finished", []step{
			{state(session.StateStopped, "", "timed out after 1h0m0s", trayExitCode(143)), noticeNone, true},
		}},
		{"removed forgets", []step{
			{state(session.StateFailed, "", "boom", nil), noticeFailed, true},
			{removed, noticeNone, true},
			{removed, noticeNone, false},
			{state(session.StateFailed, "", "boom", nil), noticeFailed, true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTransitions()
			for i, s := range tc.steps {
				got, changed := tr.step(s.ev)
				if got != s.want || changed != s.changed {
					t.Errorf("step %d (%s %s %s): got notice %d changed %v, want %d %v", i, s.ev.Kind, s.ev.State, s.ev.Activity, got, changed, s.want, s.changed)
				}
			}
		})
	}
}

func TestNotificationText(t *testing.T) {
	tests := []struct {
		n             notice
		reason        string
		title, detail string
	}{
		{noticeFinished, "agent finished", "Session finished", "app · sandbar/1"},
		{noticeWaiting, "waiting for your message", "Session waiting for you", "app · sandbar/1"},
		{noticeFailed, "the VM stopped unexpectedly\nlast console lines:\npanic", "Session failed", "app · sandbar/1: the VM stopped unexpectedly"},
		{noticeFailed, "", "Session failed", "app · sandbar/1"},
	}
	for _, tc := range tests {
		got := notification(tc.n, "app · sandbar/1", tc.reason)
		if got.Title != tc.title || got.Content != tc.detail {
			t.Errorf("notification(%d, %q) = %q / %q, want %q / %q", tc.n, tc.reason, got.Title, got.Content, tc.title, tc.detail)
		}
	}
	if notification(noticeNone, "x", "") != nil {
		t.Error("noticeNone gave a notification")
	}
}

// noteRecorder records notifications.
type noteRecorder struct {
	mu    sync.Mutex
	notes []*fyne.Notification
	added chan struct{}
}

func newNoteRecorder() *noteRecorder { return &noteRecorder{added: make(chan struct{}, 100)} }

func (s *noteRecorder) send(n *fyne.Notification) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
	s.added <- struct{}{}
}

func (s *noteRecorder) all() []*fyne.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*fyne.Notification(nil), s.notes...)
}

// wait waits for the count-th notification titled title.
func (s *noteRecorder) wait(t *testing.T, title string, count int) *fyne.Notification {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		seen := 0
		for _, n := range s.all() {
			if n.Title == title {
				if seen++; seen == count {
					return n
				}
			}
		}
		select {
		case <-s.added:
		case <-deadline:
			t.Fatalf("no notification %q (#%d) within 30 s; got %v", title, count, noteTitles(s.all()))
		}
	}
}

func noteTitles(ns []*fyne.Notification) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Title+": "+n.Content)
	}
	return out
}

// Against a real Manager (VMs in-process): an agent that exits 0, one
// that fails, and one that goes idle each bring exactly one notification.
func TestNotifierRealManager(t *testing.T) {
	e := sessiontest.New(t)
	repo := e.Repo(t, "notes app")
	u := New(test.NewTempApp(t), e.Manager, nil)
	rec := newNoteRecorder()
	n := u.StartNotifications(rec.send)
	defer n.Stop()
	ctx := context.Background()

	ok, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("echo done")})
	if err != nil {
		t.Fatal(err)
	}
	got := rec.wait(t, "Session finished", 1)
	if want := "notes app · " + ok.Branch; got.Content != want {
		t.Errorf("finished says %q, want %q", got.Content, want)
	}

	bad, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("exit 3")})
	if err != nil {
		t.Fatal(err)
	}
	got = rec.wait(t, "Session failed", 1)
	if want := "notes app · " + bad.Branch + ": the agent quit with error code 3"; got.Content != want {
		t.Errorf("failed says %q, want %q", got.Content, want)
	}

	idle, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("sleep 60"), IdleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "Session waiting for you", 1)
	// Stopping it is the person's doing: no notification.
	if _, err := e.Manager.Stop(ctx, idle.ID); err != nil {
		t.Fatal(err)
	}
	e.WaitState(t, idle.ID, session.StateStopped, 30*time.Second)
	// Events reach the notifier in order: once a later session's
	// notification is in, the stop has been seen.
	if _, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("true")}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "Session finished", 2)
	n.Stop()
	counts := map[string]int{}
	for _, x := range rec.all() {
		counts[x.Title]++
	}
	want := map[string]int{"Session finished": 2, "Session failed": 1, "Session waiting for you": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%d notifications %q, want %d (all: %v)", counts[k], k, v, noteTitles(rec.all()))
		}
	}
	if len(counts) != len(want) {
		t.Errorf("unexpected notifications: %v", noteTitles(rec.all()))
	}
}
