package qemu

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"sandbar/vm"
)

// procAttr: macOS has no Pdeathsig; orphans are found by pid file instead.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func hostMemory() uint64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return n
}

// tscKHz is only needed for x86 guests under emulation; QEMU on a Mac runs
// arm64 guests with HVF.
func tscKHz() int { return 0 }

func procStats(pid int) (vm.Stats, error) {
	if unix.Kill(pid, 0) != nil {
		return vm.Stats{}, vm.ErrNotRunning
	}
	return vm.Stats{}, nil
}

// procStart is the process's start time in microseconds since the epoch
// (kern.proc.pid's p_starttime); with the pid it identifies a process
// across pid reuse.
func procStart(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	t := kp.Proc.P_starttime
	return uint64(t.Sec)*1e6 + uint64(t.Usec), nil
}

// startWithoutTHP starts cmd: macOS has no transparent huge pages to turn
// off (see the Linux version).
func startWithoutTHP(cmd *exec.Cmd) error { return cmd.Start() }
