package vm

import (
	"context"
	"time"
)

// DiskPauser is a Machine whose hypervisor pauses the guest when a write
// to one of its writable disks finds the host's disk full, rather than
// failing the guest's write (which the guest's file system would take as
// a broken disk), and that can run it again once there is room. A backend
// asserts it at compile time (var _ vm.DiskPauser = (*machine)(nil));
// a caller finds it with a type assertion on this interface.
type DiskPauser interface {
	// DiskEvents delivers the guest's latest pause or resume: a new event
	// replaces one not yet received, so a slow reader sees where the VM
	// is now, never a queue of where it was. The channel is closed when
	// the VM has stopped.
	DiskEvents() <-chan DiskEvent
	// Resume runs a guest paused on a disk error again (QEMU's cont).
	// Where the host's disk is still full, the hypervisor pauses it again
	// at its next write, with a new DiskEvent.
	Resume(ctx context.Context) error
}

// DiskEvent is a change of a DiskPauser's guest: paused on a disk error,
// or running again.
type DiskEvent struct {
	// Paused is true when the hypervisor paused the guest; false when it
	// runs again.
	Paused bool
	// NoSpace: the error that paused it is the host's disk being full
	// (ENOSPC), the one Sandbar resumes from by itself once there is room.
	NoSpace bool
	// Disk is the drive that failed (DiskName), "" when not known.
	Disk string
	// Time is when the hypervisor paused or resumed the guest (QEMU's
	// event timestamp), or when the backend saw it where the hypervisor
	// says no time: DiskEvent's receiver measures its delay from it.
	Time time.Time
}

// SendLatest puts ev on ch, a channel of capacity 1 with one sender,
// replacing an event the reader has not taken yet (see DiskEvents).
func SendLatest(ch chan DiskEvent, ev DiskEvent) {
	for {
		select {
		case ch <- ev:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
