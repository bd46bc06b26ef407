package qemu

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// thpEnabled reads THP_enabled from a process's /proc status.
func thpEnabled(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "THP_enabled:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Skip("this kernel's /proc status has no THP_enabled line")
	return ""
}

func TestStartWithoutTHP(t *testing.T) {
	if was := thpEnabled(t, "self"); was != "1" {
		t.Skipf("huge pages are off for this test process already (THP_enabled %s)", was)
	}
	cmd := exec.Command("sleep", "30")
	if err := startWithoutTHP(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	if got := thpEnabled(t, pid); got != "0" {
		t.Errorf("child THP_enabled %s, want 0", got)
	}
	if got := thpEnabled(t, "self"); got != "1" {
		t.Errorf("this process's THP_enabled %s after the start, want 1 as before", got)
	}
	if v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); err != nil || v != 0 {
		t.Errorf("PR_GET_THP_DISABLE = %d, %v; want 0", v, err)
	}
}
