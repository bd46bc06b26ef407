package vz

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"sandbar/vm"
)

// VsockPort is where the guest supervisor listens when it finds no
// virtio-serial port, which is always the case under Virtualization.framework.
const VsockPort = vm.VsockPort

// GuestNet is the kernel argument that configures the guest NIC behind the
// framework's NAT (`sandbar vm run --network`): it runs a DHCP server, and
// its subnet is not ours to fix. Sessions' NICs are on Sandbar's own
// network and get a static address from it instead.
const GuestNet = "dhcp"

// ShareKind is how the guest mounts shares under this backend.
const ShareKind = vm.ShareVirtiofs

// maxTagBytes is the framework's limit on a virtio-fs tag
// (VZVirtioFileSystemDeviceConfiguration validateTag), counted in UTF-8 bytes.
const maxTagBytes = 36

// Caching and synchronisation modes of a disk, named as the framework names
// them; the darwin layer maps them to vz constants.
const (
	CachingCached = "cached"
	SyncFull      = "full"
)

// Limits are the framework's bounds on a VM; on macOS they come from
// VZVirtualMachineConfiguration's minimum and maximum allowed values.
type Limits struct {
	MinCPUs, MaxCPUs     uint
	MinMemory, MaxMemory uint64
}

// Plan is everything Boot decided before calling the framework: plain
// data, so the translation from a Spec is tested on any platform.
type Plan struct {
	Kernel      string
	Initrd      string
	CommandLine string
	CPUs        uint
	// Memory in bytes, a whole number of MiB as the framework requires.
	Memory uint64
	// Disks in Spec order: the i-th is the guest's vm.DiskName(i).
	Disks     []Disk
	Shares    []Share
	VsockPort uint32
	NAT       bool
	// NIC is the guest's card on Sandbar's own network (vm.NetworkSocket):
	// a VZFileHandleNetworkDeviceAttachment over a datagram socket.
	NIC        *NIC
	ConsoleLog string // "" means no console device
	// ConsoleMax caps the console log with its older copy (see
	// vm/caplog): Sandbar writes it from a pipe the framework writes.
	ConsoleMax int64
	Entropy    bool
	Balloon    bool
	// Adjusted says, in words for the log, where the Spec was clamped to
	// the framework's limits.
	Adjusted []string
}

// NIC is a virtio-net device attached to a connected datagram socket.
type NIC struct {
	File *os.File
	MAC  string
	// MTU is the attachment's maximumTransmissionUnit: the framework takes
	// 1500–65535 (macOS 13 and newer; 1500 before).
	MTU int
}

// Bounds of VZFileHandleNetworkDeviceAttachment.maximumTransmissionUnit.
const (
	MinMTU = 1500
	MaxMTU = 65535
)

// Disk is one virtio-blk device.
type Disk struct {
	Path     string
	ReadOnly bool
	Caching  string // CachingCached
	Sync     string // SyncFull
}

// Share is one virtio-fs device holding a single directory.
type Share struct {
	Tag      string
	Path     string
	ReadOnly bool
}

// buildPlan translates spec for the framework. CPUs and memory are clamped
// to limits rather than refused: the framework's bounds depend on the Mac,
// and a Spec that asks a little too much should still boot.
func buildPlan(spec vm.Spec, limits Limits) (Plan, error) {
	var problems []string
	if spec.Kernel == "" {
		problems = append(problems, "no kernel: build the guest image with `sandbar image build`")
	}
	if spec.Initramfs == "" {
		problems = append(problems, "no initramfs: build the guest image with `sandbar image build`")
	}
	var nic *NIC
	switch spec.Network {
	case vm.NetworkOff, vm.NetworkNAT:
	case vm.NetworkSocket:
		switch n := spec.NIC; {
		case n == nil || n.File == nil:
			problems = append(problems, fmt.Sprintf("network %q needs a NIC socket", vm.NetworkSocket))
		case len(n.MAC) != 6 || n.MAC[0]&1 != 0:
			problems = append(problems, fmt.Sprintf("the NIC's MAC address %q is not a unicast Ethernet address", n.MAC))
		case n.MTU < MinMTU || n.MTU > MaxMTU:
			problems = append(problems, fmt.Sprintf("the NIC's MTU %d is outside the %d–%d Virtualization.framework takes", n.MTU, MinMTU, MaxMTU))
		default:
			nic = &NIC{File: n.File, MAC: n.MAC.String(), MTU: n.MTU}
		}
	default:
		problems = append(problems, fmt.Sprintf("network %q is unknown: use %q, %q or %q", spec.Network, vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket))
	}
	if limits.MaxCPUs > 0 && limits.MinCPUs > limits.MaxCPUs || limits.MaxMemory > 0 && limits.MinMemory > limits.MaxMemory {
		problems = append(problems, fmt.Sprintf("the framework's limits are inconsistent (%+v): update macOS", limits))
	}
	p := Plan{
		Kernel:     spec.Kernel,
		Initrd:     spec.Initramfs,
		VsockPort:  VsockPort,
		NAT:        spec.Network == vm.NetworkNAT,
		NIC:        nic,
		ConsoleLog: spec.ConsoleLog,
		ConsoleMax: spec.ConsoleMax,
		Entropy:    true,
		Balloon:    true,
	}
	if p.ConsoleMax <= 0 {
		p.ConsoleMax = vm.DefaultConsoleMax
	}
	// hvc0 is the virtio console; the framework has no emulated UART for
	// Linux guests, and no TSC calibration flag is needed on hardware.
	p.CommandLine = strings.Join(append([]string{"console=hvc0"}, spec.CommandLine...), " ")

	p.CPUs = clampCPUs(spec.CPUs, limits, &p.Adjusted)
	p.Memory = clampMemory(spec.Memory, limits, &p.Adjusted)

	for i, d := range spec.Disks {
		if d.Path == "" {
			problems = append(problems, fmt.Sprintf("disk %d has no path", i))
		}
		p.Disks = append(p.Disks, Disk{Path: d.Path, ReadOnly: d.ReadOnly, Caching: CachingCached, Sync: SyncFull})
	}
	tags := map[string]bool{}
	for _, sh := range spec.Shares {
		if err := checkTag(sh.Tag); err != "" {
			problems = append(problems, err)
		} else if tags[sh.Tag] {
			problems = append(problems, fmt.Sprintf("share tag %q is used twice: give each share its own tag", sh.Tag))
		}
		tags[sh.Tag] = true
		if sh.HostPath == "" {
			problems = append(problems, fmt.Sprintf("share %q has no host directory", sh.Tag))
		}
		p.Shares = append(p.Shares, Share{Tag: sh.Tag, Path: sh.HostPath, ReadOnly: sh.ReadOnly})
	}
	if len(problems) > 0 {
		return Plan{}, &vm.SpecError{Problems: problems}
	}
	return p, nil
}

func clampCPUs(n int, l Limits, notes *[]string) uint {
	c := uint(max(n, 1))
	if n < 1 {
		*notes = append(*notes, fmt.Sprintf("vCPUs %d raised to 1", n))
	}
	if l.MinCPUs > 0 && c < l.MinCPUs {
		*notes = append(*notes, fmt.Sprintf("vCPUs %d raised to the framework's minimum %d", c, l.MinCPUs))
		c = l.MinCPUs
	}
	if l.MaxCPUs > 0 && c > l.MaxCPUs {
		*notes = append(*notes, fmt.Sprintf("vCPUs %d lowered to the framework's maximum %d", c, l.MaxCPUs))
		c = l.MaxCPUs
	}
	return c
}

func clampMemory(m uint64, l Limits, notes *[]string) uint64 {
	// The framework only takes whole MiB; the bounds are rounded inwards so
	// the result stays within them.
	lo := (l.MinMemory + vm.MiB - 1) / vm.MiB * vm.MiB
	hi := l.MaxMemory / vm.MiB * vm.MiB
	r := m / vm.MiB * vm.MiB
	if r != m {
		*notes = append(*notes, fmt.Sprintf("memory %d bytes rounded down to %d MiB", m, r/vm.MiB))
	}
	if r < lo {
		*notes = append(*notes, fmt.Sprintf("memory %d MiB raised to the framework's minimum %d MiB", r/vm.MiB, lo/vm.MiB))
		r = lo
	}
	if hi > 0 && r > hi {
		*notes = append(*notes, fmt.Sprintf("memory %d MiB lowered to the framework's maximum %d MiB", r/vm.MiB, hi/vm.MiB))
		r = hi
	}
	if r == 0 {
		*notes = append(*notes, fmt.Sprintf("memory 0 raised to the guest's floor %d MiB", vm.MinMemory/vm.MiB))
		r = vm.MinMemory
	}
	return r
}

// sectorSize is what a disk image's size must be a multiple of: the
// framework refuses any other size.
const sectorSize = 512

// diskSizeProblem returns why the framework would refuse disk i, at path,
// of size bytes, or "".
func diskSizeProblem(i int, path string, size int64) string {
	if size%sectorSize != 0 {
		return fmt.Sprintf("disk %s (%s) is %d bytes, not a whole number of %d-byte sectors, and Virtualization.framework refuses it: Sandbar makes its disks in whole MiB, so rebuild the guest image (`sandbar image build`) if it is one of the image's, else report this", vm.DiskName(i), path, size, sectorSize)
	}
	return ""
}

// checkTag returns why the framework would refuse tag, or "".
func checkTag(tag string) string {
	switch {
	case tag == "":
		return "a share has an empty tag: name it, e.g. \"workspace\""
	case len(tag) > maxTagBytes:
		return fmt.Sprintf("share tag %q is %d bytes, over the %d Virtualization.framework allows: shorten it", tag, len(tag), maxTagBytes)
	case strings.ContainsAny(tag, " ,=/\x00"):
		return fmt.Sprintf("share tag %q has a space, comma, '=', '/' or NUL: use letters, digits, - or _", tag)
	}
	return ""
}

// posixDomain is the NSError domain whose codes are errno values.
const posixDomain = "NSPOSIXErrorDomain"

// connectRetryable reports whether a failed vsock connect means only that
// the guest is not listening yet: the framework answers ECONNRESET while
// the port is closed and ENODEV before the guest driver is up; a refusal or
// a timeout is the same situation seen differently.
func connectRetryable(domain string, code int) bool {
	if domain != posixDomain {
		return false
	}
	for _, e := range []syscall.Errno{syscall.ECONNRESET, syscall.ENODEV, syscall.ECONNREFUSED, syscall.ETIMEDOUT} {
		if syscall.Errno(code) == e {
			return true
		}
	}
	return false
}
