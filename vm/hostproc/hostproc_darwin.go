package hostproc

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a process that exited and is not reaped yet
// (<sys/proc.h>).
const szomb = 5

// lookup asks the kern.proc.pid sysctl, macOS's own account of a
// process (macOS has no /proc).
func lookup(pid int) (Process, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	switch {
	case errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EIO):
		// The kernel answers a pid nobody has with no record at all,
		// which x/sys reports as EIO (a record of the wrong size).
		return Process{}, ErrNoProcess
	case err != nil:
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return Process{}, ErrNoProcess
	}
	t := kp.Proc.P_starttime
	return Process{
		PID:    pid,
		Start:  t.Sec*1e6 + int64(t.Usec),
		Name:   cString(kp.Proc.P_comm[:]),
		Zombie: kp.Proc.P_stat == szomb,
	}, nil
}

// cString is the NUL-terminated string at the start of b.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// BootID names this boot of the kernel (kern.bootsessionuuid), "" where
// unknown.
func BootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(id)
}

// PIDNamespace is "": macOS has one pid space.
func PIDNamespace() string { return "" }
