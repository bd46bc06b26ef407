package qemu

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbar/vm"
)

// procAttr ties QEMU's life to ours: if Sandbar dies, the kernel kills it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

func hostMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// tscKHz is the host TSC frequency, which the guest is told under
// emulation (tsc_early_khz) because it cannot calibrate against TCG.
func tscKHz() int {
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/tsc_freq_khz"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return v
		}
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(mhz * 1000)
			}
		}
	}
	return 0
}

// procStats reads a process's CPU time and RSS from /proc.
func procStats(pid int) (vm.Stats, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return vm.Stats{}, vm.ErrNotRunning
	}
	// Fields after the parenthesised command name, which may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+2:]))
	if len(f) < 22 {
		return vm.Stats{}, vm.ErrNotRunning
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	rssPages, _ := strconv.ParseUint(f[21], 10, 64)
	const ticks = 100 // USER_HZ on every Linux we run on
	return vm.Stats{
		CPUTime: time.Duration(utime+stime) * time.Second / ticks,
		RSS:     rssPages * uint64(os.Getpagesize()),
	}, nil
}

// procStart is the process's start time in clock ticks since boot; with
// the pid it identifies a process across pid reuse.
func procStart(pid int) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+2:]))
	if len(f) < 20 {
		return 0, os.ErrInvalid
	}
	return strconv.ParseUint(f[19], 10, 64)
}
