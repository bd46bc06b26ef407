package hostproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// lookup reads /proc/PID/stat, Linux's own account of a process.
func lookup(pid int) (Process, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) {
			return Process{}, ErrNoProcess
		}
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return parseStat(pid, b)
}

// parseStat reads the fields of a /proc/PID/stat line: the command name
// sits in parentheses and may itself hold spaces and parentheses, so the
// fields after it are counted from the last ')'.
func parseStat(pid int, b []byte) (Process, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Process{}, fmt.Errorf("process %d: /proc stat line %q is not understood", pid, b)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return Process{}, fmt.Errorf("process %d: /proc stat line has %d fields after the name, want 20 or more", pid, len(f))
	}
	start, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return Process{}, fmt.Errorf("process %d: start time %q: %w", pid, f[19], err)
	}
	return Process{PID: pid, Start: start, Name: string(b[open+1 : end]), Zombie: f[0] == "Z" || f[0] == "X"}, nil
}

// BootID names this boot of the kernel, "" where unknown.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// PIDNamespace names this process's pid namespace ("pid:[4026531836]"),
// "" where unknown: a pid means something only inside its namespace.
func PIDNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
