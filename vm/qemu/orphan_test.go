package qemu

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/vm/hostproc"
)

// child starts a real process running exe (sleep, or a copy of it under
// another name) that lasts the test, and returns it with what the system
// says of it.
func child(t *testing.T, exe string) (*exec.Cmd, hostproc.Process) {
	t.Helper()
	cmd := exec.Command(exe, "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("start %s: %v", exe, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	p, err := hostproc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, p
}

// fakeQEMU is a copy of sleep named as QEMU is, so the system reports it
// under QEMU's name.
func fakeQEMU(t *testing.T) string {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	src, err := os.Open(sleep)
	if err != nil {
		t.Skip(err)
	}
	defer src.Close()
	exe := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	dst, err := os.OpenFile(exe, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

func running(cmd *exec.Cmd) bool {
	p, err := hostproc.Lookup(cmd.Process.Pid)
	return err == nil && !p.Zombie
}

func TestReapOrphanEndsOurs(t *testing.T) {
	cmd, p := child(t, fakeQEMU(t))
	if !strings.HasPrefix(p.Name, "qemu-system") {
		t.Fatalf("the copy runs as %q", p.Name)
	}
	dir := t.TempDir()
	if err := writePIDFile(filepath.Join(dir, PIDFile), cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	killed, err := New(Config{}).ReapOrphan(context.Background(), dir)
	if err != nil || !killed {
		t.Fatalf("ReapOrphan = %v, %v; want it to end the process", killed, err)
	}
	// ReapOrphan returned once it was gone: no waiting here.
	if running(cmd) {
		t.Errorf("process %d still runs after ReapOrphan said it ended it", cmd.Process.Pid)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the process ended with %v, want SIGKILL", err)
	}
	if _, err := os.Stat(filepath.Join(dir, PIDFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pid file is still there: %v", err)
	}
}

// TestReapOrphanLeavesOthers: whatever else a pid file names now is left
// running, and the stale file goes.
func TestReapOrphanLeavesOthers(t *testing.T) {
	qcmd, q := child(t, fakeQEMU(t))
	scmd, s := child(t, "sleep")
	tests := []struct {
		name string
		rec  pidRecord
		cmd  *exec.Cmd
	}{
		// The pid was reused: same pid and name, another start time.
		{"pid reused", pidRecord{PID: q.PID, Start: q.Start - 1, Name: q.Name}, qcmd},
		// The pid and start time match but the process is not the QEMU
		// that was recorded.
		{"not a qemu", pidRecord{PID: s.PID, Start: s.Start, Name: "qemu-system-x86"}, scmd},
		// An old record without a name: only a QEMU is ours.
		{"not a qemu, old record", pidRecord{PID: s.PID, Start: s.Start}, scmd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), PIDFile)
			os.WriteFile(path, []byte(tt.rec.String()), 0o600)
			killed, err := reapOrphan(context.Background(), path)
			if err != nil || killed {
				t.Errorf("reapOrphan = %v, %v; want nothing ended", killed, err)
			}
			if !running(tt.cmd) {
				t.Errorf("process %d was ended", tt.cmd.Process.Pid)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the stale pid file is still there: %v", err)
			}
		})
	}
}

func TestReapOrphanGoneOrMissing(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, PIDFile), []byte(pidRecord{PID: cmd.Process.Pid, Start: 1, Name: "true"}.String()), 0o600)
	h := New(Config{})
	if killed, err := h.ReapOrphan(context.Background(), dir); err != nil || killed {
		t.Errorf("a record of an exited process: %v, %v; want nothing ended", killed, err)
	}
	if killed, err := h.ReapOrphan(context.Background(), t.TempDir()); err != nil || killed {
		t.Errorf("no pid file: %v, %v; want nothing ended and no error", killed, err)
	}
}

func TestReapOrphanMalformed(t *testing.T) {
	_, s := child(t, "sleep")
	for _, data := range []string{"", "\n", "sleep", "12", "x 5 qemu-system-x86", "-3 5 qemu", "7 soon qemu", "7 0 qemu",
		"7 -5 qemu", strings.Repeat("9", 30) + " 5 qemu"} {
		path := filepath.Join(t.TempDir(), PIDFile)
		os.WriteFile(path, []byte(data), 0o600)
		killed, err := reapOrphan(context.Background(), path)
		if err == nil || killed || !strings.Contains(err.Error(), path) {
			t.Errorf("pid file %q: %v, %v; want an error naming the file", data, killed, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("pid file %q: the malformed file was removed (%v); it is left to read", data, err)
		}
	}
	if !hostproc.Running(s.PID, s.Start) {
		t.Errorf("a malformed pid file's reading ended a process")
	}
}

func TestParsePIDFile(t *testing.T) {
	want := pidRecord{PID: 4242, Start: 99, Name: "qemu-system-x86"}
	got, err := parsePIDFile([]byte(want.String()))
	if err != nil || got != want {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, want)
	}
	got, err = parsePIDFile([]byte("4242 99\n"))
	if err != nil || got != (pidRecord{PID: 4242, Start: 99}) {
		t.Errorf("a record without a name: %+v, %v", got, err)
	}
}

// TestReapOrphanWaitBounded: the wait for a killed process honours ctx.
func TestReapOrphanWaitBounded(t *testing.T) {
	_, p := child(t, "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	// A process that is not killed never goes: the wait ends with ctx.
	if err := waitGone(ctx, pidRecord{PID: p.PID, Start: p.Start}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waitGone on a live process = %v, want the deadline", err)
	}
}
