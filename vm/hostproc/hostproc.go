// Package hostproc asks the operating system about a process of this
// machine, by pid, through the system's own call: /proc on Linux, the
// kern.proc.pid sysctl on macOS. It answers whether the process runs,
// when it started (which, with the pid, names one process across pid
// reuse) and its command name as the kernel keeps it. Both the QEMU
// backend (which finds its orphans by pid file) and the session manager
// (which asks whether a VM's owner still runs) use it, so the two agree
// on what a process's identity is.
//
// It is not a process table or a process manager: it starts, signals and
// waits for nothing, and it knows nothing of VMs or sessions.
package hostproc

import (
	"errors"
	"fmt"
	"os"
)

// Process is what the system says of one process.
type Process struct {
	PID int
	// Start is when the process started, in the system's own unit: clock
	// ticks since boot on Linux (/proc/PID/stat's starttime), microseconds
	// since the epoch on macOS (p_starttime). Only equality means
	// anything: the same pid with the same Start is the same process.
	Start int64
	// Name is the command name the kernel keeps, cut to its limit:
	// 15 bytes on Linux (comm), 16 on macOS (p_comm). It is the
	// executable's base name unless the process renamed itself.
	Name string
	// Zombie is true once the process has exited but its parent has not
	// reaped it yet: it holds no memory or files any more.
	Zombie bool
}

// ErrNoProcess means no process has that pid (or it cannot be seen from
// here); errors.Is(err, os.ErrNotExist) holds as well.
var ErrNoProcess = fmt.Errorf("no such process: %w", os.ErrNotExist)

// Lookup asks the system about pid. It fails with ErrNoProcess when there
// is no such process.
func Lookup(pid int) (Process, error) {
	if pid <= 0 {
		return Process{}, ErrNoProcess
	}
	return lookup(pid)
}

// Running reports whether pid names a process that has not exited (a
// zombie has) and, when start is non-zero, that started at start: a
// later process given the same pid is not it.
func Running(pid int, start int64) bool {
	p, err := Lookup(pid)
	if err != nil || p.Zombie {
		return false
	}
	return start == 0 || p.Start == start
}

// IsNoProcess reports whether err says there is no such process.
func IsNoProcess(err error) bool { return errors.Is(err, ErrNoProcess) }
