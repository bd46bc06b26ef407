package vm

import (
	"context"
	"slices"
)

// Hypervisor boots Specs. What every backend does is here; what only some
// do is an optional capability declared below (OrphanReaper), which a
// backend asserts at compile time (var _ vm.OrphanReaper = ...) and a
// caller finds by type assertion on that declared interface, never on an
// anonymous one.
type Hypervisor interface {
	Name() string
	// Check says whether the backend can run here, and how fast.
	Check(ctx context.Context) Status
	// Info says what the backend offers its guests. It starts nothing
	// and is the same for the life of the value.
	Info() Info
	Boot(ctx context.Context, spec Spec) (Machine, error)
}

// Status is a Hypervisor's verdict on this machine.
type Status struct {
	Available bool
	// Accelerated is true when guests run on hardware virtualization.
	Accelerated bool
	// Detail says what was found, and when something is missing or slow,
	// what to do about it, in words a user can act on.
	Detail string
}

// Info is what a backend offers its guests: the facts a caller needs to
// write a Spec and the guest's kernel arguments (GuestOptions) for it.
type Info struct {
	// Channel is how the guest supervisor reaches the host, which the
	// guest is told (GuestOptions.Channel) so it goes straight to it.
	Channel Channel
	// ShareKinds are how guests can mount Spec.Shares, the one Boot uses
	// first; empty when the backend mounts none.
	ShareKinds []ShareKind
	// Networks are the Spec.Network kinds Boot takes.
	Networks []Network
	// NATNet is the guest's sandbar.net argument under NetworkNAT: "dhcp",
	// or "static:<ip>/<prefix>,<gateway>,<dns>" where the NAT's addresses
	// are fixed.
	NATNet string
	// SocketFraming is the socket a NetworkSocket NIC takes, when Networks
	// holds NetworkSocket.
	SocketFraming Framing
	Features      Features
}

// Features are yes/no facts about how a backend's VMs live.
type Features struct {
	// OwnProcess: each VM is a hypervisor process of its own
	// (Machine.PID is not 0), which is a process the system could leave
	// running when its owner dies.
	OwnProcess bool
	// DiesWithOwner: the system ends the VM when the process that booted
	// it dies, however it dies (Linux's parent-death signal; or the VM
	// lives inside that process). Where false, an owner that crashed
	// leaves its VMs running, and only an OrphanReaper ends them.
	DiesWithOwner bool
	// FreePageReporting: the guest's balloon driver reports the pages
	// it frees and the hypervisor drops them from its memory (QEMU's
	// virtio-balloon free-page-reporting), so memory the guest frees goes
	// back to the host within seconds with no one driving it. Where
	// false, a Machine that is a Ballooner returns memory only when its
	// owner lowers the target.
	FreePageReporting bool
}

// Supports reports whether Boot takes Specs with network n.
func (i Info) Supports(n Network) bool { return slices.Contains(i.Networks, n) }

// Share is the kind Boot mounts Spec.Shares with, ShareNone when it
// mounts none.
func (i Info) Share() ShareKind {
	if len(i.ShareKinds) == 0 {
		return ShareNone
	}
	return i.ShareKinds[0]
}

// ShareKind is how the guest mounts a Share: the kernel argument
// sandbar.share, which sandbar-init reads.
type ShareKind string

const (
	ShareVirtiofs ShareKind = "virtiofs"
	Share9p       ShareKind = "9p"
	// ShareNone means the guest has no workspace share.
	ShareNone ShareKind = "none"
)

// OrphanReaper is a Hypervisor whose VMs can outlive the process that
// booted them (a hypervisor process of their own, on a system with no
// parent-death signal, or where the signal could not fire), and that can
// find and end such an orphan from what it left in the VM's directory.
type OrphanReaper interface {
	// ReapOrphan ends the VM that was booted with Spec.Dir vmDir if it
	// still runs and is still the process recorded there, and reports
	// whether it ended one. It returns once that process is gone, or with
	// ctx's error. A directory without a record, or whose process is
	// gone or is another process now, is not an error: nothing is ended.
	ReapOrphan(ctx context.Context, vmDir string) (bool, error)
}

// HostReporter is a Hypervisor whose guests run on a machine other than
// this one (a remote host), which says what that machine has now, as its
// own hypervisor reports it. The CPU and memory limits of sessions there,
// and their memory budget, are checked against it, never this machine.
type HostReporter interface {
	HostResources(ctx context.Context) (Resources, error)
}

// Resources are a machine's CPUs and memory, and its free memory now.
type Resources struct {
	CPUs               int
	Memory, FreeMemory uint64 // bytes
}
