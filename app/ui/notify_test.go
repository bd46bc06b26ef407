package ui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

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
		{"a stop that could not save is news, even one the person asked for", []step{
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, true},
			{state(session.StateStopping, "", "stopped by the user", nil), noticeNone, false},
			{state(session.StateStopped, "", session.ReasonNotSaved+"git in the VM exited 128", trayExitCode(143)), noticeNotSaved, true},
		}},
		{"a pause on a full disk is news once, however its free space changes", []step{
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, true},
			{state(session.StateRunning, session.ActivityPaused, "paused: the disk holding Sandbar's data is full (16 MB free)", nil), noticePaused, true},
			{state(session.StateRunning, session.ActivityPaused, "paused: the disk holding Sandbar's data is full (9 MB free)", nil), noticePaused, false},
			{state(session.StateRunning, session.ActivityWorking, "working", nil), noticeNone, true},
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

// TestNotificationText: a notification says the session's title and
// what happened on its first line, and where the session works beneath.
func TestNotificationText(t *testing.T) {
	tests := []struct {
		n           notice
		reason      string
		title, body string
	}{
		{noticeFinished, "agent finished", "Fix the login bug — finished", "app · sandbar/1"},
		{noticeWaiting, "waiting for your message", "Fix the login bug — waiting for you", "app · sandbar/1"},
		{noticeFailed, "the API key was refused", "Fix the login bug — failed: the API key was refused", "app · sandbar/1"},
		{noticeFailed, "the VM stopped unexpectedly\nlast console lines:\npanic", "Fix the login bug — failed: the VM stopped unexpectedly", "app · sandbar/1"},
		{noticeFailed, "", "Fix the login bug — failed", "app · sandbar/1"},
		{noticeNotSaved, "the save in the VM made no progress for 1m30s", "Fix the login bug — stopped, work not saved: the save in the VM made no progress for 1m30s", "app · sandbar/1"},
		{noticePaused, "paused: the disk holding Sandbar's data is full (16 MB free)", "Fix the login bug — paused: the disk holding Sandbar's data is full (16 MB free)", "app · sandbar/1"},
		{noticeFailed, strings.Repeat("x", 300), "Fix the login bug — failed: " + strings.Repeat("x", 99) + "…", "app · sandbar/1"},
	}
	for _, tc := range tests {
		got := notification(tc.n, "s1", "Fix the login bug", "app · sandbar/1", tc.reason)
		if got.Title != tc.title || got.Body != tc.body || got.Session != "s1" {
			t.Errorf("notification(%d, %q) = %+v, want %q / %q for s1", tc.n, tc.reason, *got, tc.title, tc.body)
		}
	}
	if notification(noticeNone, "s1", "x", "", "") != nil {
		t.Error("noticeNone gave a notification")
	}
}

// noteRecorder records notifications.
type noteRecorder struct {
	mu    sync.Mutex
	notes []sessionNote
	added chan struct{}
}

func newNoteRecorder() *noteRecorder { return &noteRecorder{added: make(chan struct{}, 100)} }

func (s *noteRecorder) send(n sessionNote) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
	s.added <- struct{}{}
}

func (s *noteRecorder) all() []sessionNote {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sessionNote(nil), s.notes...)
}

// wait waits for the count-th notification titled title.
func (s *noteRecorder) wait(t *testing.T, title string, count int) sessionNote {
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

func noteTitles(ns []sessionNote) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Title+": "+n.Body)
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

	ok, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("echo done"), Prompt: "Write the notes\nin Markdown"})
	if err != nil {
		t.Fatal(err)
	}
	got := rec.wait(t, "Write the notes — finished", 1)
	if want := "notes app · " + ok.Branch; got.Body != want || got.Session != ok.ID {
		t.Errorf("finished says %q about %s, want %q about %s", got.Body, got.Session, want, ok.ID)
	}

	bad, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("exit 3"), Title: "Break things"})
	if err != nil {
		t.Fatal(err)
	}
	var failed sessionNote
	found := func() bool {
		for _, n := range rec.all() {
			if strings.HasPrefix(n.Title, "Break things — failed: ") {
				failed = n
				return true
			}
		}
		return false
	}
	for deadline := time.After(30 * time.Second); !found(); {
		select {
		case <-rec.added:
		case <-deadline:
			t.Fatalf("no failure notification within 30 s; got %v", noteTitles(rec.all()))
		}
	}
	if !strings.Contains(failed.Title, "the agent quit with error code 3") || failed.Body != "notes app · "+bad.Branch {
		t.Errorf("failed says %q / %q, want the title and exit code, then the project and branch", failed.Title, failed.Body)
	}

	// A session renamed while it works is notified by its new name.
	idle, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("sleep 60"), IdleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Manager.Rename(ctx, idle.ID, "Wait for me"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "Wait for me — waiting for you", 1)
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
	rec.wait(t, "true — finished", 1)
	n.Stop()
	counts := map[string]int{}
	for _, x := range rec.all() {
		counts[x.Title]++
	}
	want := map[string]int{"Write the notes — finished": 1, failed.Title: 1, "Wait for me — waiting for you": 1, "true — finished": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%d notifications %q, want %d (all: %v)", counts[k], k, v, noteTitles(rec.all()))
		}
	}
	if len(counts) != len(want) {
		t.Errorf("unexpected notifications: %v", noteTitles(rec.all()))
	}
}

// TestNotifierOncePerStateChange: a session that finished before Sandbar
// started is not told of again when a merge or an Undo of its delete
// publishes its state anew, nor one that finished while it ran (each
// notification fired again after every restart of the app).
func TestNotifierOncePerStateChange(t *testing.T) {
	e := sessiontest.New(t)
	repo := e.Repo(t, "notes app")
	ctx := context.Background()
	before, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("echo done > done.txt"), Title: "Before"})
	if err != nil {
		t.Fatal(err)
	}
	e.WaitState(t, before.ID, session.StateStopped, 30*time.Second)

	u := New(test.NewTempApp(t), e.Manager, nil)
	rec := newNoteRecorder()
	n := u.StartNotifications(rec.send)
	defer n.Stop()

	during, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("echo x > during.txt"), Title: "During"})
	if err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "During — finished", 1)
	for _, id := range []string{before.ID, during.ID} {
		if _, err := e.Manager.Merge(ctx, id, session.MergeOptions{}); err != nil {
			t.Fatalf("merge %s: %v", id, err)
		}
		if err := e.Manager.Remove(ctx, id, false); err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
		if _, err := e.Manager.Restore(ctx, id); err != nil {
			t.Fatalf("restore %s: %v", id, err)
		}
	}
	// Events reach the notifier in order: once a later session's
	// notification is in, the merges and restores have been seen.
	if _, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("true"), Title: "After"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "After — finished", 1)
	n.Stop()
	if got := rec.all(); len(got) != 2 || got[0].Title != "During — finished" || got[1].Title != "After — finished" {
		t.Errorf("notifications %v, want During's and After's once each", noteTitles(got))
	}
}
