package image

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sandbar/guest/image/npm"
	"sandbar/guest/initbin"
)

// vzDevice is one device vm/vz attaches to every guest, and the Linux
// driver that runs it.
type vzDevice struct {
	device   string // as vm/vz's Plan and configure attach it
	virtioID uint32 // its virtio device ID (virtio 1.2, section 5)
	driver   string // the module name of its Linux driver
	kconfig  string // the kernel option that builds the driver in (y) or as a module (m)
}

// vzDevices must follow vm/vz's plan (plan.go, vz_darwin.go configure): a
// device added there is a row here, or its guest has no driver for it.
// Virtualization.framework presents every one of them as a virtio-PCI
// device, so each also needs vzTransport.
func vzDevices() []vzDevice {
	return []vzDevice{
		{"virtio-blk disk (Plan.Disks)", 2, "virtio_blk", "VIRTIO_BLK"},
		{"virtio-fs share (Plan.Shares)", 26, "virtiofs", "VIRTIO_FS"},
		{"virtio socket device (Plan.VsockPort)", 19, "vmw_vsock_virtio_transport", "VIRTIO_VSOCKETS"},
		{"virtio-net NIC, file-handle or NAT attachment (Plan.NIC, Plan.NAT)", 1, "virtio_net", "VIRTIO_NET"},
		{"virtio console serial port, hvc0 (Plan.ConsoleLog)", 3, "virtio_console", "VIRTIO_CONSOLE"},
		{"virtio entropy device (Plan.Entropy)", 4, "virtio_rng", "HW_RANDOM_VIRTIO"},
		{"traditional memory balloon (Plan.Balloon)", 5, "virtio_balloon", "VIRTIO_BALLOON"},
	}
}

// vzTransport drives the PCI side of every vz device.
var vzTransport = vzDevice{"virtio-PCI transport of every device", 0, "virtio_pci", "VIRTIO_PCI"}

// vzConsoleID is the virtio ID of hvc0's device, the console= of every
// vz boot (vm/vz plan.go).
const vzConsoleID = 3

// pendingDrivers are drivers the initramfs is known to lack on main, with
// the issue item that adds them; their check still fails, saying so.
var pendingDrivers = map[string]string{
	"virtio_rng":     "issue 14 item 7: the entropy device does nothing until virtio_rng is in kernel.DefaultModules",
	"virtio_balloon": "issue 14 item 7: the balloon does nothing until virtio_balloon is in kernel.DefaultModules",
}

// problems are what a check found wrong, one sentence each.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// TestCrossBuildBootFiles builds the guest image for arm64 on any host
// (and for amd64, or takes the one `make test` built) with sandbar's own
// `image build` and checks what Virtualization.framework will boot: the
// kernel's format, a static /init for the right machine, and a driver,
// built in or in the initramfs with what it depends on, for every device
// vm/vz attaches. It reads the files written, not the builder's lists.
func TestCrossBuildBootFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds whole guest images: skipped with -short")
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("image builds are for Linux and macOS hosts")
	}
	// sandbar is built here when the first image needs it.
	sandbar := filepath.Join(t.TempDir(), "sandbar")
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			img := bootImage(t, arch, sandbar)
			kernel, err := os.ReadFile(img.Kernel)
			if err != nil {
				t.Fatal(err)
			}
			boot := readBootFiles(t, arch, img)
			found := append(checkKernel(arch, kernel), checkInit(arch, boot.files["init"])...)
			found = append(found, checkModules(arch, boot)...)
			for _, d := range vzDevices() {
				found = append(found, checkDevice(boot, d)...)
			}
			for _, p := range found {
				t.Error(p)
			}
			checkConsoleDriver(t, boot)
		})
	}
}

// bootImage returns the image for arch: the current one of
// SANDBAR_IMAGE_DIR when `make test` built it for arch, otherwise one
// that `sandbar image build` builds now in a temporary data directory.
// The builder runs in its own process because under -race, as `make test`
// runs tests, it takes about 15 times as long (200 s for one image). It
// skips only when the build fails with the archive or the registry
// unreachable: with a warm download cache a build needs no network.
func bootImage(t *testing.T, arch, sandbar string) *Image {
	t.Helper()
	if dir := os.Getenv("SANDBAR_IMAGE_DIR"); dir != "" {
		if img, err := Latest(dir); err == nil && img.Manifest.Arch == arch {
			t.Logf("checking the %s image %s from SANDBAR_IMAGE_DIR", arch, img.Manifest.Hash[:12])
			return img
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	wd, _ := os.Getwd()
	root, err := initbin.ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sandbar); err != nil {
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", sandbar, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build sandbar: %v\n%s", err, out)
		}
		t.Logf("built sandbar in %.1fs", time.Since(start).Seconds())
	}
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, sandbar, "image", "build", "--arch", arch)
	cmd.Dir = root // where it finds sandbar-init's source for another arch
	// Its own data directory, and never the shared image directory:
	// building there would make this image the current one.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "SANDBAR_HOME" && k != "SANDBAR_IMAGE_DIR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SANDBAR_HOME="+home)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		for _, u := range []string{DefaultMirror, npm.DefaultRegistry} {
			if why := unreachable(u); why != nil {
				t.Skipf("cannot build the %s image: %v, and the download cache lacks what the build needs: connect and run the test again\n%s", arch, why, out)
			}
		}
		t.Fatalf("sandbar image build --arch %s: %v\n%s", arch, err, out)
	}
	img, err := Latest(filepath.Join(home, "images"))
	if err != nil {
		t.Fatalf("sandbar image build --arch %s left no image: %v\n%s", arch, err, out)
	}
	if img.Manifest.Arch != arch {
		t.Fatalf("sandbar image build --arch %s built a %s image", arch, img.Manifest.Arch)
	}
	t.Logf("built the %s image in %.1fs (the builder's own part %.1fs, %.0f MB of downloads)", arch, time.Since(start).Seconds(),
		img.Manifest.BuildSeconds, float64(img.Manifest.Sizes["downloads"])/1e6)
	return img
}

// unreachable says why the server of rawURL cannot be reached, or nil.
func unreachable(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(u.Hostname(), port), 5*time.Second)
	if err != nil {
		return fmt.Errorf("%s is unreachable (%w)", u.Host, err)
	}
	conn.Close()
	return nil
}
