package libvirt

import (
	"context"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// Facts are what a check found on a host.
type Facts struct {
	// Libvirt is libvirtd's version ("9.0.0").
	Libvirt string
	// Emulator is the qemu-system binary libvirt runs for x86-64 guests.
	Emulator string
	// KVM: libvirt offers KVM guests there.
	KVM bool
	// Dir is Sandbar's directory on the host, absolute; FreeBytes the
	// room left on its file system.
	Dir       string
	FreeBytes uint64
	// MemoryBytes and FreeMemory are the host's, as libvirt's node info
	// says; CPUs its logical CPUs.
	MemoryBytes, FreeMemory uint64
	CPUs                    int
	// TSCkHz is the host CPU's TSC rate (the guest kernel's tsc_early_khz
	// under emulation); 0 when unknown.
	TSCkHz int
}

// MinFree is the room Sandbar needs on a host: the image (about 1 GiB)
// and a few sessions' scratch disks' first writes.
const MinFree = 4 << 30

// facts checks a host over c. A host without a usable libvirt, QEMU or
// qemu-img, or without room, is an error saying what to do; one without
// KVM is not (Facts.KVM says so).
func facts(ctx context.Context, c *conn, dir string) (Facts, error) {
	var f Facts
	v, err := c.lv.ConnectGetLibVersion()
	if err != nil {
		return f, fmt.Errorf("ask libvirt on %s its version: %w", c.t.Host, err)
	}
	f.Libvirt = fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
	capsXML, err := c.lv.ConnectGetCapabilities()
	if err != nil {
		return f, fmt.Errorf("ask libvirt on %s what it runs: %w", c.t.Host, err)
	}
	f.Emulator, f.KVM = x86Guests(capsXML)
	if f.Emulator == "" {
		return f, fmt.Errorf("libvirt on %s runs no x86-64 guests: install qemu-system-x86 there, then restart libvirtd", c.t.Host)
	}
	_, mem, cpus, _, _, _, _, _, err := c.lv.NodeGetInfo()
	if err == nil {
		f.MemoryBytes, f.CPUs = mem<<10, int(cpus)
	}
	if free, err := c.lv.NodeGetFreeMemory(); err == nil {
		f.FreeMemory = free
	}
	// One round trip for the rest: the directory (made, made absolute),
	// its free space, qemu-img, and the TSC rate.
	script := fmt.Sprintf(`set -e
d=%s
case "$d" in /*) ;; *) d="$HOME/$d" ;; esac
mkdir -p "$d/images" "$d/vms"
cd "$d"
echo "dir=$(pwd -P)"
echo "free=$(df -Pk . | awk 'NR==2 {print $4}')"
echo "qemuimg=$(command -v qemu-img || true)"
echo "tsc=$(cat /sys/devices/system/cpu/cpu0/tsc_freq_khz 2>/dev/null || awk -F: '/^cpu MHz/ {printf "%%d", $2*1000; exit}' /proc/cpuinfo 2>/dev/null || true)"
`, shq(dir))
	out, err := c.run(ctx, "sh -c "+shq(script), nil)
	if err != nil {
		return f, fmt.Errorf("prepare Sandbar's folder %s on %s: %w", dir, c.t.Host, err)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	f.Dir = kv["dir"]
	if kb, err := strconv.ParseUint(kv["free"], 10, 64); err == nil {
		f.FreeBytes = kb << 10
	}
	f.TSCkHz, _ = strconv.Atoi(kv["tsc"])
	if kv["qemuimg"] == "" {
		return f, fmt.Errorf("qemu-img is not installed on %s: install qemu-utils there (it makes the sessions' scratch disks)", c.t.Host)
	}
	if f.Dir == "" || !strings.HasPrefix(f.Dir, "/") {
		return f, fmt.Errorf("Sandbar's folder on %s could not be made: give another with --dir", c.t.Host)
	}
	// Room for a VM's name ("sandbar-" and a session id) in its
	// sockets' paths.
	if len(f.Dir)+len("/vms/")+maxNameLen+len("/channel.sock") > 107 {
		return f, fmt.Errorf("Sandbar's folder %s on %s is too long a path for the VMs' sockets: give a shorter one with --dir", f.Dir, c.t.Host)
	}
	if f.FreeBytes < MinFree {
		return f, fmt.Errorf("%s on %s has %s free; Sandbar needs at least %s there for the image and the sessions' disks: free some space, or give another folder with --dir: %w",
			f.Dir, c.t.Host, gib(f.FreeBytes), gib(MinFree), ErrDiskFull)
	}
	return f, nil
}

// maxNameLen is the longest VM name the host's folder leaves room for.
const maxNameLen = 40

// ErrDiskFull: the host has too little room.
var ErrDiskFull = fmt.Errorf("not enough disk space on the host")

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// x86Guests reads libvirt's capabilities: the emulator of x86-64 guests
// and whether KVM is among their domain types.
func x86Guests(capsXML string) (emulator string, kvm bool) {
	var caps struct {
		Guests []struct {
			OSType string `xml:"os_type"`
			Arch   struct {
				Name     string `xml:"name,attr"`
				Emulator string `xml:"emulator"`
				Domains  []struct {
					Type string `xml:"type,attr"`
				} `xml:"domain"`
			} `xml:"arch"`
		} `xml:"guest"`
	}
	if xml.Unmarshal([]byte(capsXML), &caps) != nil {
		return "", false
	}
	for _, g := range caps.Guests {
		if g.OSType != "hvm" || g.Arch.Name != "x86_64" {
			continue
		}
		emulator = g.Arch.Emulator
		for _, d := range g.Arch.Domains {
			if d.Type == "kvm" {
				kvm = true
			}
		}
	}
	return emulator, kvm
}

// Summary is the facts in a line for a person.
func (f Facts) Summary() string {
	accel := "KVM"
	if !f.KVM {
		accel = "no KVM: software emulation, ~10x slower"
	}
	return fmt.Sprintf("libvirt %s, %s, %d CPUs, %s memory (%s free), %s free in %s",
		f.Libvirt, accel, f.CPUs, gib(f.MemoryBytes), gib(f.FreeMemory), gib(f.FreeBytes), f.Dir)
}
