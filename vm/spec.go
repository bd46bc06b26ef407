// Package vm is the contract between Sandbar and a hypervisor: a Spec says
// what to boot, a Hypervisor boots it, a Machine is the running VM.
//
// Spec is pure data (no cgo, no OS imports), so it can be built, validated
// and tested anywhere; the backends (vm/qemu on Linux, vm/vz on macOS) only
// translate it. This package knows nothing of sessions, git or the UI.
package vm

import (
	"fmt"
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
	// NetworkNAT gives the guest one NIC behind the host's NAT.
	NetworkNAT Network = "nat"
)

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
	// ConsoleLog receives the guest's serial console.
	ConsoleLog string
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
	default:
		add("network %q is unknown: use %q or %q", s.Network, NetworkOff, NetworkNAT)
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
