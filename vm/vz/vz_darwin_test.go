//go:build darwin

package vz

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/vm"
)

func TestCheckSaysWhatToDo(t *testing.T) {
	st := New(Config{}).Check(context.Background())
	t.Logf("vz: %+v", st)
	if st.Detail == "" {
		t.Error("Check gave no detail")
	}
	if !st.Available && strings.Contains(st.Detail, EntitlementKey) && !strings.Contains(st.Detail, "make build") {
		t.Errorf("entitlement problem without the fix: %q", st.Detail)
	}
}

func TestFrameworkLimits(t *testing.T) {
	l := frameworkLimits()
	if l.MinCPUs < 1 || l.MaxCPUs < l.MinCPUs || l.MinMemory == 0 || l.MaxMemory < l.MinMemory {
		t.Errorf("framework limits look wrong: %+v", l)
	}
}

// TestBootReal boots the real guest image under Virtualization.framework.
// Run it signed: go test -exec "$PWD/packaging/go-test-exec.sh" ./vm/vz
func TestBootReal(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a VM")
	}
	img := os.Getenv("SANDBAR_IMAGE_DIR")
	if img == "" {
		t.Skip("SANDBAR_IMAGE_DIR is not set: run `make test`, which builds the guest image")
	}
	h := New(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if st := h.Check(ctx); !st.Available {
		t.Skipf("vz unavailable: %s", st.Detail)
	}
	dir, work := t.TempDir(), t.TempDir()
	scratch := filepath.Join(dir, "scratch.img")
	if err := exec.Command("mkfile", "-n", "1g", scratch).Run(); err != nil {
		t.Fatalf("create scratch disk: %v", err)
	}
	spec := vm.Spec{
		Name: "vz-test", Kernel: filepath.Join(img, "kernel"), Initramfs: filepath.Join(img, "initramfs"),
		CommandLine: vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: 1, Scratch: 2, Workspace: -1, Share: ShareKind, Net: GuestNet, Time: time.Now()}),
		Disks: []vm.Disk{
			{Path: filepath.Join(img, "rootfs.ext4"), ReadOnly: true},
			{Path: filepath.Join(img, "agent.ext4"), ReadOnly: true},
			{Path: scratch},
		},
		Shares: []vm.Share{{Tag: "workspace", HostPath: work}},
		CPUs:   2, Memory: 1024 * vm.MiB, Network: vm.NetworkNAT,
		ConsoleLog: filepath.Join(dir, "console.log"), Dir: dir,
	}
	start := time.Now()
	m, err := h.Boot(ctx, spec)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	defer m.Kill()
	line, err := bufio.NewReader(m.Conn()).ReadString('\n')
	if err != nil || !strings.Contains(line, "system:ready") {
		console, _ := os.ReadFile(spec.ConsoleLog)
		t.Fatalf("first line %q, %v; want system:ready. Console:\n%s", line, err, console)
	}
	t.Logf("system:ready after %v", time.Since(start))
	if st, err := m.Stats(); err != nil || st.CPUTime <= 0 {
		t.Errorf("stats %+v, %v", st, err)
	}
	// Machine.Stop is the power button, then the plug: the protocol's
	// shutdown is app/sandbox's to send, and sandbar-init does not
	// answer the button, so bound the wait.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := m.Stop(sctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := m.Wait(ctx); err != nil {
		t.Errorf("wait after stop: %v", err)
	}
	if _, err := m.Stats(); err != vm.ErrNotRunning {
		t.Errorf("stats after stop: %v, want vm.ErrNotRunning", err)
	}
}
