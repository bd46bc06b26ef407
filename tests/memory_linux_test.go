//go:build linux

package tests

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/vm"
)

// vmRSS is a process's resident memory in bytes, from /proc/PID/status.
func vmRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the VM process's status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestFreedMemoryReturns: memory the guest frees goes back to the host.
// The guest allocates and touches 1 GiB (dd's 1 GiB buffer, filled from
// /dev/zero) and frees it when dd exits; its balloon driver reports the
// free pages and QEMU drops them, so the QEMU process's RSS falls back
// near where it was. The bound on the wait is generous (emulation on a
// loaded machine); the driver reports two seconds after a free.
func TestFreedMemoryReturns(t *testing.T) {
	sb := boot(t, sandbox.Options{Memory: 2048 * vm.MiB})
	pid := sb.PID()
	// The boot's own frees are reported too: start from where that settles.
	before := settledRSS(t, pid, 20*time.Second)
	run(t, sb, "", "dd", "if=/dev/zero", "of=/dev/null", "bs=1G", "count=1", "status=none")
	peakish := vmRSS(t, pid)
	t.Logf("host RSS: %d MiB before, %d MiB right after the 1 GiB allocation ended", before/vm.MiB, peakish/vm.MiB)
	if peakish < before+512*vm.MiB {
		// The allocation never reached the host's RSS (or was returned
		// before it could be read, which the driver's two-second delay
		// rules out): the wait below would prove nothing.
		t.Fatalf("host RSS %d MiB right after a 1 GiB allocation, %d MiB before: the allocation did not reach the host", peakish/vm.MiB, before/vm.MiB)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		rss := vmRSS(t, pid)
		if rss <= before+200*vm.MiB {
			t.Logf("host RSS back to %d MiB (%.2f× before)", rss/vm.MiB, float64(rss)/float64(before))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("host RSS still %d MiB 60 s after the guest freed 1 GiB (before: %d MiB): the guest's free pages were not given back", rss/vm.MiB, before/vm.MiB)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// settledRSS waits until the process's RSS has not fallen by more than
// 16 MiB for three seconds, at most bound, and returns it.
func settledRSS(t *testing.T, pid int, bound time.Duration) uint64 {
	t.Helper()
	end := time.Now().Add(bound)
	last, since := vmRSS(t, pid), time.Now()
	for time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond)
		rss := vmRSS(t, pid)
		if rss+16*vm.MiB < last {
			last, since = rss, time.Now()
			continue
		}
		if time.Since(since) >= 3*time.Second {
			return rss
		}
	}
	return vmRSS(t, pid)
}
