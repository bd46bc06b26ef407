//go:build linux

package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"sandbar/app/desktop/desktoptest"
	"sandbar/app/session"
	"sandbar/app/store"
)

// memoryCounter is an agent whose state lives only in its shell's memory:
// i counts five times a second, and the files are only where the test
// reads it and the shell's pid. SIGINT (an interrupt) is ignored, so that
// an interrupt leaves it counting and the session waiting.
const memoryCounter = `trap '' INT; echo $$ > /tmp/agent.pid; i=0; while :; do i=$((i+1)); echo $i > /tmp/counter.new; mv /tmp/counter.new /tmp/counter; sleep 0.2; done`

// TestKeepSessions: one session whose agent keeps a counter in memory,
// through the three ways the engine suspends on its own; after each the
// agent is the same process (same pid) and its counter went on from
// where it was, never from 1:
//   - the host's sleep: logind's PrepareForSleep(true) on a private
//     system bus suspends it, PrepareForSleep(false) resumes it;
//   - the engine's quit with keep_sessions=resume (SIGTERM, as at a
//     logout): suspended with no QEMU left, and the next engine resumes
//     it by itself;
//   - auto-suspend: once it has waited for the person longer than
//     auto_suspend (3 s here) it is suspended, its reason says so, and a
//     message resumes it.
func TestKeepSessions(t *testing.T) {
	w := newWorld(t)
	addr := desktoptest.Bus(t)
	w.env = append(w.env, "DBUS_SYSTEM_BUS_ADDRESS="+addr)
	logind, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer logind.Close()
	if reply, err := logind.RequestName("org.freedesktop.login1", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.login1: %v %v", reply, err)
	}
	setting(t, w, store.SettingKeepSessions, string(session.KeepResume))
	setting(t, w, store.SettingAutoSuspend, "3s")

	id := w.startID("--repo", w.repo, "--agent", memoryCounter, "--cpus", "1", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	counter := func() (pid string, n int) {
		t.Helper()
		out := w.ok("exec", id, "--", "sh", "-c", "cat /tmp/agent.pid /tmp/counter")
		if _, err := fmt.Sscan(out, &pid, &n); err != nil {
			t.Fatalf("agent's pid and counter %q: %v", out, err)
		}
		return pid, n
	}
	waitUntil(time.Minute, 200*time.Millisecond, func() bool { _, n := counter(); return n >= 5 })
	pid, n := counter()
	// wentOn checks the agent is the same process and counts on from n.
	wentOn := func(when string) {
		t.Helper()
		p2, n2 := counter()
		if p2 != pid {
			t.Fatalf("%s: the agent is pid %s, was %s: it started over", when, p2, pid)
		}
		if n2 < n {
			t.Fatalf("%s: counter %d, was %d: it started over", when, n2, n)
		}
		if !waitUntil(time.Minute, 200*time.Millisecond, func() bool { _, n3 := counter(); return n3 > n2 }) {
			t.Fatalf("%s: the counter does not go on", when)
		}
		t.Logf("%s: agent pid %s, counter %d then %d", when, pid, n, n2)
		n = n2
	}

	// The host's sleep.
	if err := logind.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForSleep", true); err != nil {
		t.Fatal(err)
	}
	s := w.waitState(id, "suspended")
	if s.Reason != session.ReasonSlept {
		t.Errorf("reason after the sleep %q, want %q", s.Reason, session.ReasonSlept)
	}
	if k := qemuUnder(w.home); k != 0 {
		t.Fatalf("%d QEMU processes left while the host sleeps", k)
	}
	if err := logind.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForSleep", false); err != nil {
		t.Fatal(err)
	}
	w.waitState(id, "running")
	wentOn("after the host's sleep")

	// The engine's quit, and a new engine.
	w.stopEngine()
	s = w.session(id)
	if s.State != "suspended" || s.Reason != session.ReasonKept {
		t.Fatalf("after the engine quit with keep_sessions=resume: %s %q", s.State, s.Reason)
	}
	if k := qemuUnder(w.home); k != 0 {
		t.Fatalf("%d QEMU processes left after the engine quit", k)
	}
	serve := exec.Command(w.bin, "serve", "--idle-exit", "0")
	serve.Env, serve.Dir = w.env, w.repo
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serve.Wait() }()
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		select {
		case <-served:
		case <-time.After(time.Minute):
			serve.Process.Kill()
		}
	})
	w.waitState(id, "running")
	wentOn("after the engine quit and a new one started")

	// Auto-suspend: an interrupt makes it wait for the person.
	w.ok("interrupt", id)
	s = w.waitState(id, "suspended")
	if !strings.Contains(s.Reason, "after waiting") || !strings.Contains(s.Reason, "message") {
		t.Errorf("reason after the auto-suspend %q: want why and what brings it back", s.Reason)
	}
	if _, err := os.Stat(filepath.Join(w.home, "sessions", id, "vm.state")); err != nil {
		t.Fatalf("no saved state after the auto-suspend: %v", err)
	}
	w.ok("chat", id, "back to work")
	w.waitState(id, "running")
	wentOn("after the auto-suspend and a message")
	w.ok("stop", id)
}

// setting sets one of Sandbar's settings in w's database.
func setting(t *testing.T, w *world, key store.SettingKey, value string) {
	t.Helper()
	os.MkdirAll(w.home, 0o700)
	st, err := store.Open(filepath.Join(w.home, "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSetting(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
}
