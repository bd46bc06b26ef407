//go:build linux

package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/vm"
	"sandbar/vm/qemu"
)

// TestVZShapedGuest boots the real image under QEMU on a machine shaped
// like Virtualization.framework's (qemu.ShapeVZ): only virtio-PCI
// devices, the console a virtio console (hvc0, whose driver is a module),
// no org.sandbar.0 port, DHCP from the user-mode network, vz's entropy
// and balloon devices, and vsock where this host has /dev/vhost-vsock.
// It is the Linux check of what a Mac's first boot meets: the console log
// has the guest's lines from its very first (kept until the console
// existed), the supervisor's start and a DHCP lease, the entropy and
// balloon drivers load, and, with vsock, the host channel opens and
// system:ready arrives. Without vsock nothing can carry the channel: the
// test says so and checks what the console shows.
func TestVZShapedGuest(t *testing.T) {
	img := guestImage(t)
	hypervisor(t, img) // the KVM verdict, cached in hvState for this one too
	h := qemu.New(qemu.Config{
		StateDir:   hvState,
		Accel:      os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil },
		Shape:      qemu.ShapeVZ,
	})
	vsock := qemu.VhostVsock()
	if !vsock {
		t.Log("no usable /dev/vhost-vsock on this host: the guest gets no vsock device and the host channel cannot open; checking what its console shows")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	sb, err := sandbox.Boot(ctx, h, img, sandbox.Options{
		Dir: dir, CPUs: 1, Memory: 1024 * vm.MiB, ScratchSize: 1 << 30,
		Network: true, ReadyTimeout: time.Minute,
		KernelArgs: []string{"sandbar.debug=1"}, // the console names each module loaded
	})
	took := time.Since(start)
	consoleLog, _ := os.ReadFile(filepath.Join(dir, sandbox.ConsoleFile))
	console := strings.ReplaceAll(string(consoleLog), "\r", "") // the tty's ONLCR
	t.Logf("boot took %s", took.Round(time.Millisecond))
	defer func() {
		if t.Failed() {
			t.Logf("boot error: %v\nconsole:\n%s", err, console)
		}
	}()

	if vsock {
		if err != nil {
			t.Fatalf("boot with vsock: %v", err)
		}
		defer func() {
			sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer scancel()
			if err := sb.Shutdown(sctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		}()
		if sb.Ready.NetError != "" {
			t.Errorf("system:ready says the network failed: %s", sb.Ready.NetError)
		}
		mods := run(t, sb, "", "cat", "/proc/modules")
		for _, m := range []string{"virtio_rng", "virtio_balloon", "virtio_pci", "vmw_vsock_virtio_transport"} {
			if !strings.Contains(mods, m+" ") {
				t.Errorf("module %s is not loaded:\n%s", m, mods)
			}
		}
		if got := run(t, sb, "", "cat", "/sys/devices/virtual/misc/hw_random/rng_current"); !strings.Contains(got, "virtio_rng") {
			t.Errorf("the kernel's hardware RNG is %q, want virtio_rng", got)
		}
	} else if err == nil {
		sb.Kill()
		sb.Wait(context.Background())
		t.Fatal("the guest got ready with no vsock device and no org.sandbar.0 port: which channel did it use?")
	}

	want := []string{
		"] started\n",                                // PID 1's first line, kept until hvc0 existed
		"] supervisor started (pid ",                 // the supervisor's start
		"] loaded virtio_pci in ",                    // virtio over PCI ...
		"] loaded virtio_console in ",                // ... the console's driver ...
		"] loaded virtio_rng in ",                    // ... and vz's entropy
		"] loaded virtio_balloon in ",                // and balloon devices
		"] DHCP lease 10.0.2.15/24 via 10.0.2.2 in ", // the user-mode network's DHCP
	}
	if vsock {
		want = append(want, "] host channel open (vsock)")
	} else {
		// The supervisor went straight to vsock (sandbar.channel=vsock)
		// and said so on the console it was handed; the guest, without
		// a channel, powered off.
		want = append(want, "sandbar-init: open the host channel: no vsock (", "] powering off")
	}
	for _, w := range want {
		if !strings.Contains(console, w) {
			t.Errorf("the console lacks %q", w)
		}
	}
	for _, bad := range []string{"loaded virtio_mmio", "network: "} {
		if strings.Contains(console, bad) {
			t.Errorf("the console has %q", bad)
		}
	}
	if took > time.Minute {
		t.Errorf("the vz-shaped boot took %s, over a minute", took)
	}
}
