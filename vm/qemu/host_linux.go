package qemu

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbar/vm"
)

// parentDeath is true: Linux can end a child when its parent dies.
const parentDeath = true

// procAttr puts the child in a process group of its own and, with
// parentDeath, ties its life to ours: if Sandbar dies, however it dies,
// the kernel kills it.
func procAttr(parentDeath bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if parentDeath {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
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

// thpMu keeps startWithoutTHP's setting of this process's flag to one
// start at a time.
var thpMu sync.Mutex

// startWithoutTHP starts cmd with transparent huge pages off in its
// memory: QEMU asks for them on guest RAM (MADV_HUGEPAGE), and the host
// then zeroes 2 MiB at each first touch of a region. Under emulation that
// cost a boot 0.2-0.5 s of host CPU, varying with how many huge pages the
// host had free at the moment (a floor boot's median went from 1.76 s to
// 1.97 s with two disks attached, which moved the RAM's alignment; with
// huge pages off the two were the same, 1.76-1.80 s). The flag
// (PR_SET_THP_DISABLE) belongs to a process's memory and passes to
// children across fork and exec, so it is set on this process for the
// moment of the start and put back after; Start returns once the child
// has exec'd.
func startWithoutTHP(cmd *exec.Cmd) error {
	thpMu.Lock()
	defer thpMu.Unlock()
	was, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	if err == nil && was == 0 {
		if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err == nil {
			defer unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0)
		}
	}
	return cmd.Start()
}
