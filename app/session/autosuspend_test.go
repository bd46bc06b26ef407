package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

func TestParseAutoSuspend(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", DefaultAutoSuspend, false},
		{"15", 15 * time.Minute, false},
		{" 2 ", 2 * time.Minute, false},
		{"90s", 90 * time.Second, false},
		{"1h", time.Hour, false},
		{"off", 0, false},
		{"OFF", 0, false},
		{"0", 0, false},
		{"-5", 0, true},
		{"-1m", 0, true},
		{"soon", 0, true},
	} {
		got, err := ParseAutoSuspend(tc.in)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "minutes") {
				t.Errorf("%q: %v, %v: want an error that says what to give", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if ParseKeepPolicy("resume") != KeepResume || ParseKeepPolicy("suspended") != KeepSuspended ||
		ParseKeepPolicy("") != KeepStop || ParseKeepPolicy("keep") != KeepStop {
		t.Error("ParseKeepPolicy: only resume and suspended keep sessions")
	}
}

// TestAutoSuspendTimer: on a fake clock, a session that waits for the
// person is due for suspend once it has waited the setting's time, not a
// moment before; working again starts the wait over; off, and a session
// that works, are never due. The fake backend cannot save a VM: the
// suspend fails, the session runs on, and it is not tried again at every
// check until it has worked and waited again.
func TestAutoSuspendTimer(t *testing.T) {
	clock := &fakeNow{now: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}
	f := newFixtureWith(t, func(c *Config) { c.Now = clock.Now })
	ctx := context.Background()
	if err := f.st.SetSetting(ctx, store.SettingAutoSuspend, "15"); err != nil {
		t.Fatal(err)
	}
	// A custom agent works until interrupted; then it waits (SIGINT is
	// ignored, so it runs on).
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "trap '' INT; while :; do sleep 1; done"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitState(t, s.ID, 20*time.Second, "the session running, its agent started", func(cur store.Session) bool {
		return cur.State == StateRunning && cur.Activity == ActivityWorking
	})
	after := f.m.autoSuspendAfter(ctx)
	if after != 15*time.Minute {
		t.Fatalf("auto-suspend after %v, want 15m", after)
	}
	due := func() bool { return len(f.m.dueForSuspend(clock.Now(), after)) == 1 }

	clock.add(time.Hour)
	if due() {
		t.Fatal("a working session is due for suspend")
	}
	if err := f.m.Interrupt(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	clock.add(14*time.Minute + 59*time.Second)
	if due() {
		t.Fatal("due after 14m59s of waiting, with the setting at 15 minutes")
	}
	clock.add(time.Second)
	if !due() {
		t.Fatal("not due after 15 minutes of waiting")
	}
	if due := f.m.dueForSuspend(clock.Now(), 0); len(due) != 0 {
		t.Fatal("due with auto-suspend off")
	}

	// Working again starts the wait over.
	r := f.m.running(s.ID)
	r.setActivity(ctx, ActivityWorking, "working")
	r.setActivity(ctx, ActivityWaiting, "waiting for your message")
	clock.add(10 * time.Minute)
	if due() {
		t.Fatal("due 10 minutes after it began to wait again")
	}
	clock.add(5 * time.Minute)

	// The fake backend cannot save: the session runs on, marked.
	if got := f.m.autoSuspendOnce(ctx); len(got) != 0 {
		t.Fatalf("suspended %v on a backend that cannot save", got)
	}
	if cur, _ := f.st.Session(ctx, s.ID); cur.State != StateRunning {
		t.Fatalf("after a failed auto-suspend: %s %q", cur.State, cur.Reason)
	}
	clock.add(time.Hour)
	if due() {
		t.Fatal("a session that could not be suspended is tried again at every check")
	}
	r.setActivity(ctx, ActivityWorking, "working")
	r.setActivity(ctx, ActivityWaiting, "waiting for your message")
	clock.add(15 * time.Minute)
	if !due() {
		t.Fatal("after working and waiting again, the session is not tried anew")
	}
	f.m.Stop(ctx, s.ID)
}

// TestQuitKeepingFallsBackToStop: quitting with "keep sessions" on a
// backend that cannot save a VM stops the session as a plain quit does,
// its work saved, rather than leaving it running or losing it; and a
// ResumeKept then finds nothing of its own to resume.
func TestQuitKeepingFallsBackToStop(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "while :; do sleep 1; done"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitState(t, s.ID, 20*time.Second, "the session running, its agent started", func(cur store.Session) bool {
		return cur.State == StateRunning && cur.Activity == ActivityWorking
	})
	if err := f.m.Quit(ctx, KeepResume, 30*time.Second); err != nil {
		t.Fatalf("quit: %v", err)
	}
	cur, err := f.st.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.State != StateStopped || cur.Reason != ReasonQuit {
		t.Errorf("after a keeping quit on a backend that cannot save: %s %q, want stopped %q", cur.State, cur.Reason, ReasonQuit)
	}
	if ids := f.m.ResumeKept(ctx); len(ids) != 0 {
		t.Errorf("ResumeKept resumed %v", ids)
	}
}
