//go:build linux

package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/vm"
	"sandbar/vm/qemu"
)

// counterScript counts in the background, five times a second, into
// /tmp/counter (in the guest's memory), and prints its pid.
const counterScript = `setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/counter.new; mv /tmp/counter.new /tmp/counter; sleep 0.2; done' </dev/null >/dev/null 2>&1 & echo $!`

func guestCounter(t *testing.T, sb *sandbox.Sandbox) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(run(t, sb, "", "cat", "/tmp/counter")))
	if err != nil {
		t.Fatalf("counter: %v", err)
	}
	return n
}

// TestSuspendResume: a running guest saved to a file and ended comes back
// from it in a new QEMU, started by a new backend value as a new engine
// would, with its processes alive: a counter loop goes on from where it
// was, not from 1. A state file that is truncated, not a state, or gone
// is refused as vm.ErrBadState, and the session's disk it leaves is whole:
// a cold boot finds what the guest wrote.
func TestSuspendResume(t *testing.T) {
	img := guestImage(t)
	h := hypervisor(t, img)
	dir := t.TempDir()
	opts := sandbox.Options{Dir: dir, CPUs: 1, Memory: 1024 * vm.MiB, ScratchSize: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, err := sandbox.Boot(ctx, h, img, opts)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	defer func() {
		if sb != nil {
			sb.Kill()
			sb.Wait(context.Background())
		}
	}()
	pid := strings.TrimSpace(run(t, sb, "", "sh", "-c", counterScript))
	run(t, sb, "", "sh", "-c", "echo kept > ~/marker && sync")
	waitCounter(t, sb, 3)
	n1 := guestCounter(t, sb)
	qemuPID := sb.PID()

	state := filepath.Join(dir, "state")
	start := time.Now()
	if err := sb.Suspend(ctx, state); err != nil {
		t.Fatalf("suspend: %v", err)
	}
	t.Logf("suspended in %s", time.Since(start).Round(time.Millisecond))
	if err := sb.Wait(ctx); err != nil {
		t.Errorf("the suspended VM ended with %v, want a clean end", err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(qemuPID)); err == nil {
		t.Errorf("QEMU (pid %d) still runs after suspend", qemuPID)
	}
	if fi, err := os.Stat(state); err != nil || fi.Size() == 0 {
		t.Fatalf("state file: %v", err)
	} else {
		t.Logf("state file: %d MiB", fi.Size()/vm.MiB)
	}
	if _, err := os.Stat(state + ".part"); err == nil {
		t.Error("the temporary state file was left")
	}

	// A new backend value: nothing of the first QEMU's is kept in memory.
	// The first backend's state directory: a new engine finds the KVM
	// verdict cached there too, and the trial boot is not what is tested.
	h2 := qemu.New(qemu.Config{StateDir: hvState, Accel: os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil }})
	start = time.Now()
	sb, err = sandbox.Resume(ctx, h2, img, opts, state)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	t.Logf("resumed in %s", time.Since(start).Round(time.Millisecond))
	if _, _, code := try(t, sb, "", "kill", "-0", pid); code != 0 {
		t.Fatalf("the counter loop (pid %s) did not survive the suspend", pid)
	}
	n2 := guestCounter(t, sb)
	if n2 < n1 {
		t.Fatalf("counter %d after resume, %d before: it started over", n2, n1)
	}
	waitCounter(t, sb, n2+3)
	if got := run(t, sb, "", "cat", "/home/agent/marker"); got != "kept\n" {
		t.Errorf("marker after resume: %q", got)
	}
	t.Logf("counter %d before suspend, %d after resume, and counting", n1, n2)

	// Bad states: a truncated one, one that is not a state, and none.
	if err := sb.Suspend(ctx, state); err != nil {
		t.Fatalf("second suspend: %v", err)
	}
	sb.Wait(ctx)
	good, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		data []byte
	}{
		{"truncated", good[:len(good)/2]},
		{"not a state", []byte(strings.Repeat("not a VM state\n", 100))},
		{"missing", nil},
	} {
		os.Remove(state)
		if bad.data != nil {
			if err := os.WriteFile(state, bad.data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		rsb, err := sandbox.Resume(ctx, h2, img, opts, state)
		if err == nil {
			rsb.Kill()
			rsb.Wait(ctx)
			t.Fatalf("%s state: resumed", bad.name)
		}
		if !errors.Is(err, vm.ErrBadState) {
			t.Errorf("%s state: %v, want vm.ErrBadState", bad.name, err)
		}
		t.Logf("%s state: %v", bad.name, firstLine(err.Error()))
	}
	// What the guest wrote is on its disk for a cold boot.
	sb, err = sandbox.Boot(ctx, h2, img, opts)
	if err != nil {
		t.Fatalf("cold boot after the failed resumes: %v", err)
	}
	if got := run(t, sb, "", "cat", "/home/agent/marker"); got != "kept\n" {
		t.Errorf("marker after a cold boot: %q", got)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// waitCounter waits until the guest's counter is at least n.
func waitCounter(t *testing.T, sb *sandbox.Sandbox, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, _, code := try(t, sb, "", "cat", "/tmp/counter")
		if v, err := strconv.Atoi(strings.TrimSpace(out)); code == 0 && err == nil && v >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest's counter did not reach %d within a minute (last %q)", n, strings.TrimSpace(out))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSessionSuspendResume: a session whose agent is a counter loop is
// suspended (`sandbar suspend`: suspended in ls, no QEMU left), its engine
// stopped, and resumed by a new engine (`sandbar resume`): the counter
// goes on from where it was, the commit made before is in its clone, and
// the network works again. Then a truncated state: the resume falls back
// to interrupted with the reason in words, and a restart boots the
// session on its disk with the commit there.
func TestSessionSuspendResume(t *testing.T) {
	w := newWorld(t)
	counter := `i=0; while :; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.2; done`
	id := w.startID("--repo", w.repo, "--agent", counter, "--cpus", "1", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	w.ok("exec", id, "--", "git", "commit", "-q", "--allow-empty", "-m", "made before the suspend")
	count := func() int {
		t.Helper()
		var n int
		out := w.ok("exec", id, "--", "cat", "/tmp/counter")
		if _, err := fmt.Sscan(out, &n); err != nil {
			t.Fatalf("counter %q: %v", out, err)
		}
		return n
	}
	waitUntil(time.Minute, 200*time.Millisecond, func() bool { return count() >= 5 })
	n1 := count()

	out := w.ok("suspend", id)
	if !strings.Contains(out, "suspended") {
		t.Errorf("suspend printed %q", out)
	}
	if s := w.session(id); s.State != "suspended" {
		t.Fatalf("after suspend: %+v", s)
	}
	if n := qemuUnder(w.home); n != 0 {
		t.Fatalf("%d QEMU processes left after suspend", n)
	}
	state := filepath.Join(w.home, "sessions", id, "vm.state")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no saved state: %v", err)
	}
	w.stopEngine()
	if s := w.session(id); s.State != "suspended" { // ls starts no engine
		t.Fatalf("after the engine stopped: %+v", s)
	}

	w.ok("resume", id)
	w.waitState(id, "running")
	n2 := count()
	if n2 < n1 {
		t.Fatalf("counter %d after resume, %d before the suspend: the agent started over", n2, n1)
	}
	if !waitUntil(time.Minute, 200*time.Millisecond, func() bool { return count() > n2 }) {
		t.Fatal("the counter does not go on after the resume")
	}
	if log := w.ok("exec", id, "--", "git", "log", "--format=%s"); !strings.Contains(log, "made before the suspend") {
		t.Errorf("the commit made before the suspend is gone: %q", log)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("the loaded state file was kept: a second resume from it would find the disks moved on")
	}
	t.Logf("counter %d at the suspend, %d after the resume by a new engine", n1, n2)

	// A truncated state falls back to interrupted, losing nothing.
	w.ok("suspend", id)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(state, b[:len(b)/3], 0o600)
	w.ok("resume", id)
	s := w.waitState(id, "interrupted")
	if !strings.Contains(s.Reason, "could not be restored") || !strings.Contains(s.Reason, "restart") {
		t.Errorf("reason %q: want what happened and what to do", s.Reason)
	}
	w.ok("restart", id)
	w.waitState(id, "running")
	if log := w.ok("exec", id, "--", "git", "log", "--format=%s"); !strings.Contains(log, "made before the suspend") {
		t.Errorf("after the fallback and a restart the commit is gone: %q", log)
	}
	w.ok("stop", id)
}
