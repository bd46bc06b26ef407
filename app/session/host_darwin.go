package session

import (
	"strings"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a process that exited and is not reaped yet
// (<sys/proc.h>).
const szomb = 5

// zombie reports whether pid has exited but is not reaped yet.
func zombie(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && kp.Proc.P_stat == szomb
}

// procStart is a process's start time in microseconds since the epoch
// (kern.proc.pid's p_starttime), or 0 where unknown.
func procStart(pid int) int64 {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0
	}
	t := kp.Proc.P_starttime
	return t.Sec*1e6 + int64(t.Usec)
}

// bootID identifies this boot of the kernel (kern.bootsessionuuid), ""
// where unknown.
func bootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(id)
}

// pidNamespace is "": macOS has one pid space.
func pidNamespace() string { return "" }
