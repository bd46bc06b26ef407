package vm

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// MiB is a mebibyte, the unit memory limits are given in.
const MiB = 1 << 20

// MinMemory is the guest's floor: below it the Debian kernel, the init and
// the supervisor do not fit with room for an agent.
const MinMemory = 256 * MiB

// Network says how the guest reaches the outside.
type Network string

const (
	// NetworkOff gives the guest no NIC at all.
	NetworkOff Network = "off"
	// NetworkNAT gives the guest one NIC behind the hypervisor's own NAT
	// (QEMU's user-mode network, Virtualization.framework's NAT). Sessions
	// never use it: it reaches the host's loopback and local network.
	NetworkNAT Network = "nat"
	// NetworkSocket gives the guest one NIC whose frames travel through
	// Spec.NIC's socket, to a network the caller runs (Sandbar's own, see
	// app/net/netstack).
	NetworkSocket Network = "socket"
)

// Framing is how a NIC's socket carries Ethernet frames; each backend
// takes one (Info.SocketFraming).
type Framing int

const (
	// FramingStream is a SOCK_STREAM socket carrying each frame behind
	// its length as a 32-bit big-endian number (QEMU's -netdev socket).
	FramingStream Framing = iota
	// FramingDatagram is a SOCK_DGRAM socket carrying one frame per
	// datagram (VZFileHandleNetworkDeviceAttachment).
	FramingDatagram
)

// NIC is the guest's network card when Spec.Network is NetworkSocket.
type NIC struct {
	// File is the hypervisor's end of a socket pair of the backend's
	// Framing. The hypervisor process inherits it (QEMU) or the
	// framework reads it (vz); the caller keeps the other end and closes
	// this one once Boot returns.
	File *os.File
	// MAC is the card's Ethernet address; stable per session, so a
	// guest asking DHCP keeps its lease.
	MAC net.HardwareAddr
	// MTU is the largest frame payload the network takes (68–65535).
	MTU int
}

// Disk is a block device; its position in Spec.Disks fixes its guest name
// (vda, vdb, ...).
type Disk struct {
	Path     string
	ReadOnly bool
}

// Share is a host directory the guest mounts by Tag (virtio-fs or 9p).
type Share struct {
	Tag      string
	HostPath string
	ReadOnly bool
}

// DefaultConsoleMax caps a console log whose Spec names no cap.
const DefaultConsoleMax = 8 * MiB

// Spec is everything needed to boot one VM.
type Spec struct {
	// Name identifies the VM in logs and process titles.
	Name string
	// Kernel is the file the hypervisor boots directly (an ELF vmlinux for
	// QEMU microvm on x86-64, a raw arm64 Image for Virtualization.framework).
	Kernel string
	// Initramfs is the guest's initial RAM filesystem holding sandbar-init.
	Initramfs string
	// CommandLine is the guest kernel's arguments that are the same on every
	// hypervisor (see GuestArgs); backends add their console and clock ones.
	CommandLine []string
	Disks       []Disk
	Shares      []Share
	CPUs        int
	// Memory in bytes.
	Memory  uint64
	Network Network
	// NIC is the socket-attached card of NetworkSocket; nil otherwise.
	NIC *NIC
	// ConsoleLog receives the guest's serial console. The backend reads
	// the console itself and writes this file, capped at ConsoleMax bytes
	// together with ConsoleLog.1 (see vm/caplog); the guest can write its
	// console as fast as its CPU runs.
	ConsoleLog string
	// ConsoleMax caps the console log (DefaultConsoleMax when 0).
	ConsoleMax int64
	// Dir is the directory the VM owns: sockets, pid file.
	Dir string
}

// Host is the capacity Validate checks a Spec against.
type Host struct {
	CPUs   int
	Memory uint64
}

// Validate rejects a Spec that cannot boot, with a message naming the
// limit and what to do.
func (s Spec) Validate(h Host) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if s.Kernel == "" {
		add("no kernel: build the guest image with `sandbar image build`")
	}
	if s.Initramfs == "" {
		add("no initramfs: build the guest image with `sandbar image build`")
	}
	switch {
	case s.CPUs < 1:
		add("vCPUs is %d: give at least 1", s.CPUs)
	case h.CPUs > 0 && s.CPUs > h.CPUs:
		add("vCPUs is %d but this machine has %d: give at most %d", s.CPUs, h.CPUs, h.CPUs)
	}
	switch {
	case s.Memory < MinMemory:
		add("memory is %d MiB, below the guest's floor of %d MiB", s.Memory/MiB, MinMemory/MiB)
	case h.Memory > 0 && s.Memory > h.Memory:
		add("memory is %d MiB but this machine has %d MiB: give less", s.Memory/MiB, h.Memory/MiB)
	}
	switch s.Network {
	case NetworkOff, NetworkNAT:
		if s.NIC != nil {
			add("a NIC socket is given but the network is %q: use %q", s.Network, NetworkSocket)
		}
	case NetworkSocket:
		switch {
		case s.NIC == nil || s.NIC.File == nil:
			add("network %q needs a NIC socket", NetworkSocket)
		case len(s.NIC.MAC) != 6:
			add("the NIC's MAC address %q is not an Ethernet address", s.NIC.MAC)
		case s.NIC.MAC[0]&1 != 0:
			add("the NIC's MAC address %s is a multicast address: use a unicast one", s.NIC.MAC)
		case s.NIC.MTU < 68 || s.NIC.MTU > 65535:
			add("the NIC's MTU %d is outside 68–65535", s.NIC.MTU)
		}
	default:
		add("network %q is unknown: use %q, %q or %q", s.Network, NetworkOff, NetworkNAT, NetworkSocket)
	}
	if len(s.Disks) > 20 {
		add("%d disks: at most 20 are supported", len(s.Disks))
	}
	for i, d := range s.Disks {
		if d.Path == "" {
			add("disk %d has no path", i)
		}
	}
	tags := map[string]bool{}
	for _, sh := range s.Shares {
		switch {
		case sh.Tag == "" || len(sh.Tag) > 36 || strings.ContainsAny(sh.Tag, " ,=/\x00"):
			add("share tag %q is not valid: use up to 36 letters, digits, - or _", sh.Tag)
		case tags[sh.Tag]:
			add("share tag %q is used twice", sh.Tag)
		}
		tags[sh.Tag] = true
		if !filepath.IsAbs(sh.HostPath) {
			add("share %q: host path %q is not absolute", sh.Tag, sh.HostPath)
		}
	}
	if s.Dir == "" {
		add("no VM directory")
	}
	if len(problems) > 0 {
		return &SpecError{Problems: problems}
	}
	return nil
}

// DiskName is the guest's name for the i-th disk: vda, vdb, ..., vdz.
func DiskName(i int) string { return "vd" + string(rune('a'+i)) }
