package session

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"sandbar/app/store"
)

// selfOwner is this process as a VM owner.
func selfOwner() store.Owner {
	host, _ := os.Hostname()
	return store.Owner{PID: os.Getpid(), Start: procStart(os.Getpid()), Host: host}
}

// sameOwner reports whether two owners are the same process.
func sameOwner(a, b store.Owner) bool {
	return a.PID == b.PID && a.Start == b.Start && a.Host == b.Host
}

// ownerAlive reports whether the owner process still runs: same pid, same
// start time (pids are reused), on this host.
func ownerAlive(o store.Owner) bool {
	if o.PID <= 0 {
		return false
	}
	if host, _ := os.Hostname(); o.Host != "" && o.Host != host {
		return true // another machine sharing the directory: assume it runs
	}
	if err := syscall.Kill(o.PID, 0); err != nil && err != syscall.EPERM {
		return false
	}
	if o.Start != 0 {
		if st := procStart(o.PID); st != 0 && st != o.Start {
			return false
		}
	}
	return !zombie(o.PID)
}

// zombie reports whether pid has exited but is not reaped yet (Linux).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// procStart is a process's start time in clock ticks since boot (Linux),
// or 0 where unknown.
func procStart(pid int) int64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseInt(f[19], 10, 64)
	return n
}
