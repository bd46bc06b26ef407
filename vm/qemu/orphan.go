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
// command name as hostproc gives them, and on a second line "owner <pid>
// <start>", the process that booted it. With the pid, the start time names
// one process across pid reuse; the name says it is still the QEMU that
// was started; the owner says whether anyone still runs it.
const PIDFile = "vm.pid"

// reapWait bounds how long ReapOrphan waits for a killed QEMU to go.
const reapWait = 10 * time.Second

// pidRecord is what a pid file says.
type pidRecord struct {
	PID   int
	Start int64
	// Name is "" in a record written before names were kept.
	Name string
	// OwnerPID and OwnerStart are the process that booted the QEMU; 0 in
	// a record written before owners were kept.
	OwnerPID   int
	OwnerStart int64
}

func (r pidRecord) String() string {
	s := fmt.Sprintf("%d %d %s\n", r.PID, r.Start, r.Name)
	if r.OwnerPID > 0 {
		s += fmt.Sprintf("owner %d %d\n", r.OwnerPID, r.OwnerStart)
	}
	return s
}

// parsePIDFile reads a pid file's record.
func parsePIDFile(data []byte) (pidRecord, error) {
	first, rest, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(first)
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
	rec := pidRecord{PID: pid, Start: start, Name: strings.Join(f[2:], " ")}
	if o := strings.Fields(rest); len(o) > 0 {
		if len(o) != 3 || o[0] != "owner" {
			return pidRecord{}, fmt.Errorf("second line %q, want \"owner <pid> <start>\"", strings.TrimSpace(rest))
		}
		rec.OwnerPID, err = strconv.Atoi(o[1])
		if err != nil || rec.OwnerPID <= 0 {
			return pidRecord{}, fmt.Errorf("owner pid %q is not a process id", o[1])
		}
		if rec.OwnerStart, err = strconv.ParseInt(o[2], 10, 64); err != nil || rec.OwnerStart < 0 {
			return pidRecord{}, fmt.Errorf("owner start time %q is not a number", o[2])
		}
	}
	return rec, nil
}

// writePIDFile records process pid, which this process has just started,
// in path.
func writePIDFile(path string, pid int) error {
	self, err := hostproc.Lookup(os.Getpid())
	if err != nil {
		return err
	}
	return writePIDRecord(path, pid, self)
}

// writePIDRecord records process pid, started by owner, in path: written
// aside and renamed, so that a crash never leaves half a record.
func writePIDRecord(path string, pid int, owner hostproc.Process) error {
	p, err := hostproc.Lookup(pid)
	if err != nil {
		return err
	}
	rec := pidRecord{PID: pid, Start: p.Start, Name: p.Name, OwnerPID: owner.PID, OwnerStart: owner.Start}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(rec.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ours reports whether a process named name is the one rec recorded: the
// same name, or, for a record without one, a QEMU system emulator.
func (r pidRecord) ours(name string) bool {
	if r.Name != "" {
		return name == r.Name
	}
	return strings.HasPrefix(name, "qemu-system")
}

// running reports whether the QEMU rec names still runs: the pid names a
// live process of the recorded start time and name.
func (r pidRecord) running() bool {
	p, err := hostproc.Lookup(r.PID)
	return err == nil && !p.Zombie && p.Start == r.Start && r.ours(p.Name)
}

// ownerRunning reports whether the process that booted rec's QEMU still
// runs, and is not this one: it runs that VM, so it is no orphan. A record
// without an owner (an older one) has none to ask about.
func (r pidRecord) ownerRunning() bool {
	if r.OwnerPID <= 0 || r.OwnerPID == os.Getpid() {
		return false
	}
	return hostproc.Running(r.OwnerPID, r.OwnerStart)
}

// checkPIDFile refuses to boot a VM in the directory whose pid file path
// names a QEMU that still runs: booting would forget it (the file is
// rewritten) while it holds the session's disk. Anything else the file
// says (nothing, a process that is gone or another one now, a malformed
// record) is replaced by the new record.
func checkPIDFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil // none (or unreadable: writing it will say so)
	}
	rec, err := parsePIDFile(data)
	if err != nil || !rec.running() {
		return nil
	}
	return fmt.Errorf("the VM directory %s records QEMU process %d (%s), which still runs: a VM of this session was left running; end it (kill %d) and try again",
		filepath.Dir(path), rec.PID, rec.Name, rec.PID)
}

// ReapOrphan implements vm.OrphanReaper. A QEMU outlives the process that
// booted it where nothing killed it at that process's death: on macOS,
// which has no parent-death signal, or with Config.NoParentDeath. It ends
// the QEMU recorded in vmDir's pid file when that pid still names the same
// process (same start time) under the same name and the process that
// booted it is gone, and waits, within ctx and reapWait, until it is gone.
// The pid file is removed once its process is known to be gone; it stays
// while the QEMU may still run (its owner runs it, the kill failed or the
// wait ran out) and when it is malformed (then an error says where), so
// that nothing forgets a VM that may hold a session's disk.
func (h *Hypervisor) ReapOrphan(ctx context.Context, vmDir string) (bool, error) {
	killed, err := reapOrphan(ctx, filepath.Join(vmDir, PIDFile), sigkill)
	if killed {
		h.log.Info("ended an orphan qemu", "dir", vmDir)
	}
	return killed, err
}

func sigkill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// reapOrphan is ReapOrphan of the pid file path, ending the process with
// kill.
func reapOrphan(ctx context.Context, path string, kill func(pid int) error) (bool, error) {
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
	if !rec.running() {
		os.Remove(path) // gone, or the pid is another process's now
		return false, nil
	}
	if rec.ownerRunning() {
		return false, nil // not an orphan: its owner runs it
	}
	if err := kill(rec.PID); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			os.Remove(path)
			return false, nil
		}
		return false, fmt.Errorf("end orphan qemu %d (recorded in %s): %w", rec.PID, path, err)
	}
	if err := waitGone(ctx, rec); err != nil {
		return true, fmt.Errorf("%w (its pid file %s is kept)", err, path)
	}
	os.Remove(path)
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
