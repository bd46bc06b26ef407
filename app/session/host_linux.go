package session

import (
	"os"
	"strconv"
	"strings"
)

// procStat is the fields of /proc/PID/stat after the command name, or nil.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// zombie reports whether pid has exited but is not reaped yet.
func zombie(pid int) bool {
	f := procStat(pid)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// procStart is a process's start time in clock ticks since boot, or 0
// where unknown.
func procStart(pid int) int64 {
	f := procStat(pid)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseInt(f[19], 10, 64)
	return n
}

// bootID identifies this boot of the kernel, "" where unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNamespace identifies this process's pid namespace ("pid:[4026531836]"),
// "" where unknown.
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
