package vm

import (
	"context"
	"io"
	"time"
)

// Machine is one running VM, owned by the process that booted it.
type Machine interface {
	// Conn is the protocol byte stream to the guest supervisor.
	Conn() io.ReadWriteCloser
	// Wait blocks until the VM has stopped (or ctx is done) and returns why
	// it stopped: nil for a clean power-off.
	Wait(ctx context.Context) error
	// Stop presses the hypervisor's power button, then kills the VM when
	// ctx's deadline nears, and returns once it has stopped. Asking the
	// guest supervisor to shut down first is the caller's: it is the
	// guest protocol, which app/sandbox speaks and vm never does.
	Stop(ctx context.Context) error
	// Kill ends the VM at once.
	Kill() error
	// Stats is the host-side cost of the VM.
	Stats() (Stats, error)
	// PID is the hypervisor process (0 where the VM runs in-process).
	PID() int
}

// Stats is what the hypervisor costs the host.
type Stats struct {
	// CPUTime is user+system time consumed so far.
	CPUTime time.Duration
	// RSS is resident memory in bytes.
	RSS uint64
}
