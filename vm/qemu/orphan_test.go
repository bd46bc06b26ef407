package qemu

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/vm"
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
			killed, err := reapOrphan(context.Background(), path, sigkill)
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
		killed, err := reapOrphan(context.Background(), path, sigkill)
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

// TestReapOrphanLeavesOwned: a QEMU whose recorded owner still runs is
// that owner's VM, not an orphan, whatever the store said when recovery
// looked: it runs on and its pid file stays. Once the owner is gone, it
// is ended.
func TestReapOrphanLeavesOwned(t *testing.T) {
	qcmd, _ := child(t, fakeQEMU(t))
	ocmd, owner := child(t, "sleep")
	dir := t.TempDir()
	path := filepath.Join(dir, PIDFile)
	if err := writePIDRecord(path, qcmd.Process.Pid, owner); err != nil {
		t.Fatal(err)
	}
	h := New(Config{})
	if killed, err := h.ReapOrphan(context.Background(), dir); err != nil || killed {
		t.Errorf("ReapOrphan of a QEMU whose owner runs = %v, %v; want nothing ended", killed, err)
	}
	if !running(qcmd) {
		t.Fatalf("the QEMU of a live owner was ended")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the pid file of a running QEMU was removed: %v", err)
	}

	ocmd.Process.Kill()
	ocmd.Wait()
	if killed, err := h.ReapOrphan(context.Background(), dir); err != nil || !killed {
		t.Errorf("ReapOrphan once its owner died = %v, %v; want it ended", killed, err)
	}
	if running(qcmd) {
		t.Errorf("the orphan still runs")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pid file of the ended orphan is still there: %v", err)
	}
}

// TestReapOrphanKeepsRecordUntilGone: when the kill fails, or the process
// has not gone when the wait ends, the pid file stays for the next try.
func TestReapOrphanKeepsRecordUntilGone(t *testing.T) {
	qcmd, _ := child(t, fakeQEMU(t))
	tests := []struct {
		name string
		kill func(pid int) error
	}{
		{"kill refused", func(int) error { return syscall.EPERM }},
		// A kill that has not taken effect yet (a process in an
		// uninterruptible sleep goes only when it wakes).
		{"not gone in time", func(int) error { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), PIDFile)
			if err := writePIDRecord(path, qcmd.Process.Pid, hostproc.Process{}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := reapOrphan(ctx, path, tt.kill); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("reapOrphan = %v; want an error naming the pid file", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the pid file of a QEMU that may still run was removed: %v", err)
			}
		})
	}
}

// TestBootRefusesRunningRecord: a VM directory whose pid file names a
// QEMU that still runs is not booted over (the new record would forget
// it); a record of a process that is gone, or is another one now, is.
func TestBootRefusesRunningRecord(t *testing.T) {
	qcmd, q := child(t, fakeQEMU(t))
	dir := t.TempDir()
	path := filepath.Join(dir, PIDFile)
	if err := writePIDRecord(path, qcmd.Process.Pid, hostproc.Process{}); err != nil {
		t.Fatal(err)
	}
	_, err := start(context.Background(), plan{Binary: "/bin/true", PIDFile: path}, vm.Spec{Dir: dir}, false, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(q.PID)) || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("boot over a running QEMU's record = %v; want a refusal naming process %d", err, q.PID)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), strconv.Itoa(q.PID)+" ") {
		t.Errorf("the running QEMU's record was changed: %q, %v", b, err)
	}
	if !running(qcmd) {
		t.Errorf("the running QEMU was ended")
	}

	// Stale records do not stand in a boot's way.
	os.WriteFile(path, []byte(pidRecord{PID: q.PID, Start: q.Start - 1, Name: q.Name}.String()), 0o600)
	if err := checkPIDFile(path); err != nil {
		t.Errorf("a record of a reused pid: %v", err)
	}
	os.WriteFile(path, []byte("garbage"), 0o600)
	if err := checkPIDFile(path); err != nil {
		t.Errorf("a malformed record: %v", err)
	}
}

func TestParsePIDFileOwner(t *testing.T) {
	want := pidRecord{PID: 4242, Start: 99, Name: "qemu-system-x86", OwnerPID: 17, OwnerStart: 5}
	got, err := parsePIDFile([]byte(want.String()))
	if err != nil || got != want {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"4242 99 q\nowner x 5\n", "4242 99 q\nowner 17\n", "4242 99 q\nsomething else\n"} {
		if _, err := parsePIDFile([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
