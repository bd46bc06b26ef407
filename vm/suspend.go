package vm

import (
	"context"
	"errors"
)

// Suspender is a Machine whose running guest can be saved, RAM and
// devices, to a file, after which the VM ends; a Resumer boots the same
// Spec from that file with the guest's processes where they were. A
// backend asserts it at compile time (var _ vm.Suspender = (*machine)(nil)).
type Suspender interface {
	// Suspend stops the guest, writes its state to path (through a
	// temporary file beside it, renamed when whole, so path is either a
	// whole state or absent) and ends the VM; Wait then returns nil.
	// Where saving fails the guest runs on, and the error says why.
	Suspend(ctx context.Context, path string) error
}

// Resumer is a Hypervisor that boots a Spec from the state a Suspender
// saved. The Spec must be the one the suspended VM was booted with, but
// for its kernel arguments and its NIC's and console's sockets (new ones
// are fine): the same disks, in the same order and with the same
// contents, the same vCPUs and memory. Its Conn is the same stream to the
// guest supervisor as before, which never saw the host leave.
type Resumer interface {
	Resume(ctx context.Context, spec Spec, statePath string) (Machine, error)
}

// ErrBadState is wrapped by Resume's error when the state file is
// missing, truncated or not a state this backend can load: the session
// can only start over from its disks.
var ErrBadState = errors.New("the saved VM state cannot be restored")
