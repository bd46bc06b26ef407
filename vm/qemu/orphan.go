package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sandbar/vm/hostproc"
)

// PIDFile is the file in a VM's directory (vm.Spec.Dir) that records its
// QEMU process while it runs: "<pid> <start> <name>", the start time and
// command name as hostproc gives them. With the pid, the start time names
// one process across pid reuse; the name says it is still the QEMU that
// was started.
const PIDFile = "vm.pid"

// reapWait bounds how long ReapOrphan waits for a killed QEMU to go.
const reapWait = 10 * time.Second

// pidRecord is what a pid file says.
type pidRecord struct {
	PID   int
	Start int64
	// Name is "" in a record written before names were kept.
	Name string
}

func (r pidRecord) String() string { return fmt.Sprintf("%d %d %s\n", r.PID, r.Start, r.Name) }

// parsePIDFile reads a pid file's record.
func parsePIDFile(data []byte) (pidRecord, error) {
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return pidRecord{}, fmt.Errorf("%d fields, want a pid, a start time and a name", len(f))
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return pidRecord{}, fmt.Errorf("pid %q is not a process id", f[0])
	}
	start, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || start <= 0 {
		return pidRecord{}, fmt.Errorf("start time %q is not a positive number", f[1])
	}
	return pidRecord{PID: pid, Start: start, Name: strings.Join(f[2:], " ")}, nil
}

// writePIDFile records process pid, which has just started, in path.
func writePIDFile(path string, pid int) error {
	p, err := hostproc.Lookup(pid)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(pidRecord{PID: pid, Start: p.Start, Name: p.Name}.String()), 0o600)
}

// ours reports whether a process named name is the one rec recorded: the
// same name, or, for a record without one, a QEMU system emulator.
func (r pidRecord) ours(name string) bool {
	if r.Name != "" {
		return name == r.Name
	}
	return strings.HasPrefix(name, "qemu-system")
}

// ReapOrphan implements vm.OrphanReaper. A QEMU outlives the process that
// booted it where nothing killed it at that process's death: on macOS,
// which has no parent-death signal, or with Config.NoParentDeath. It ends
// the QEMU recorded in vmDir's pid file when that pid still names the same
// process (same start time) under the same name, and waits, within ctx and
// reapWait, until it is gone. The pid file is removed unless it is
// malformed (then it is left for a person to read, and an error says
// where).
func (h *Hypervisor) ReapOrphan(ctx context.Context, vmDir string) (bool, error) {
	killed, err := reapOrphan(ctx, filepath.Join(vmDir, PIDFile))
	if killed {
		h.log.Info("ended an orphan qemu", "dir", vmDir)
	}
	return killed, err
}

func reapOrphan(ctx context.Context, path string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	rec, err := parsePIDFile(data)
	if err != nil {
		return false, fmt.Errorf("pid file %s is malformed (%v): check for a qemu-system process of that VM by hand", path, err)
	}
	defer os.Remove(path)
	p, err := hostproc.Lookup(rec.PID)
	if err != nil || p.Zombie || p.Start != rec.Start || !rec.ours(p.Name) {
		return false, nil // gone, or the pid is another process's now
	}
	if err := syscall.Kill(rec.PID, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("end orphan qemu %d: %w", rec.PID, err)
	}
	if err := waitGone(ctx, rec); err != nil {
		return true, err
	}
	return true, nil
}

// waitGone waits until rec's process has exited (a zombie has: its
// parent, no longer us, reaps it), within ctx and reapWait.
func waitGone(ctx context.Context, rec pidRecord) error {
	ctx, cancel := context.WithTimeout(ctx, reapWait)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for hostproc.Running(rec.PID, rec.Start) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("orphan qemu %d was killed but has not exited yet: %w", rec.PID, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}
