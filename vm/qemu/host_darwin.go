package qemu

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"sandbar/vm"
)

// parentDeath is false: macOS has no parent-death signal, so a QEMU
// outlives a Sandbar that crashed and is found by its pid file instead
// (Hypervisor.ReapOrphan).
const parentDeath = false

// procAttr puts the child in a process group of its own; macOS cannot
// tie its life to ours.
func procAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

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

// startWithoutTHP starts cmd: macOS has no transparent huge pages to turn
// off (see the Linux version).
func startWithoutTHP(cmd *exec.Cmd) error { return cmd.Start() }
