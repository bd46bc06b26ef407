package qemu

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"sandbar/guest/image"
	"sandbar/vm"
)

// TestFloorPlanMatchesBoot: the floor differs from a real boot only in
// what the comparison needs (no disks, trial mode, console on stdout), so
// its time is a fair floor for system:ready.
func TestFloorPlanMatchesBoot(t *testing.T) {
	for _, kvm := range []bool{false, true} {
		st := settings{Binary: "qemu", Arch: "amd64", KVM: kvm, TSCkHz: 2445426, SocketDir: "/s"}
		spec := testSpec()
		spec.CommandLine = vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: -1, Scratch: 1, Workspace: -1, Share: "9p", Net: "none"})
		boot, err := buildPlan(spec, st)
		if err != nil {
			t.Fatal(err)
		}
		floor, err := floorPlan("/img/kernel", "/img/initramfs", spec.CPUs, spec.Memory, "/s", st)
		if err != nil {
			t.Fatal(err)
		}
		for _, flag := range []string{"-M", "-accel", "-cpu", "-smp", "-m", "-kernel", "-initrd"} {
			if b, f := argsOf(boot.Args, flag), argsOf(floor.Args, flag); !slices.Equal(b, f) {
				t.Errorf("kvm=%v: %s is %v in the floor, %v in a boot", kvm, flag, f, b)
			}
		}
		app := argsOf(floor.Args, "-append")[0]
		for _, want := range []string{"console=ttyS0", "panic=-1", "quiet", "sandbar.trial=1"} {
			if !strings.Contains(app, want) {
				t.Errorf("kvm=%v: floor -append %q lacks %s", kvm, app, want)
			}
		}
		if got := strings.Contains(app, "tsc_early_khz="); got == kvm {
			t.Errorf("kvm=%v: floor -append %q: tsc_early_khz present = %v", kvm, app, got)
		}
		if strings.Contains(app, "sandbar.root") || len(argsOf(floor.Args, "-drive")) != 0 {
			t.Errorf("kvm=%v: the floor boots no disks: %v", kvm, floor.Args)
		}
		if got := argsOf(floor.Args, "-serial"); !slices.Equal(got, []string{"stdio"}) {
			t.Errorf("kvm=%v: floor -serial = %v, want stdio", kvm, got)
		}
	}
}

// TestBootFloor boots the real guest kernel in trial mode.
func TestBootFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a real VM; skipped with -short")
	}
	dir := os.Getenv("SANDBAR_IMAGE_DIR")
	if dir == "" {
		t.Skip("SANDBAR_IMAGE_DIR is not set: run `make test`, which builds the guest image")
	}
	img, err := image.Latest(dir)
	if err != nil {
		t.Skipf("SANDBAR_IMAGE_DIR=%s holds no usable image: %v (run `make image`)", dir, err)
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	h := New(Config{
		StateDir:   t.TempDir(),
		Accel:      os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ft, err := h.BootFloor(ctx, img.Kernel, img.Initramfs, 1, 512*vm.MiB)
	if err != nil {
		t.Fatal(err)
	}
	if ft.Marker <= 0 || ft.Exit < ft.Marker {
		t.Errorf("floor times %+v: want 0 < marker <= exit", ft)
	}
	t.Logf("floor: marker after %s, qemu exited after %s (%s)", ft.Marker.Round(time.Millisecond), ft.Exit.Round(time.Millisecond), h.Check(ctx).Detail)
}
