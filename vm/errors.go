package vm

import (
	"errors"
	"strings"
)

var (
	// ErrUnavailable means the hypervisor cannot run here (not installed, no
	// permission); Check says why and what to do.
	ErrUnavailable = errors.New("hypervisor unavailable")
	// ErrInvalidSpec means a Spec failed validation.
	ErrInvalidSpec = errors.New("invalid VM spec")
	// ErrNotRunning means the machine has already stopped.
	ErrNotRunning = errors.New("VM is not running")
	// ErrBootTimeout means the guest did not get ready in time.
	ErrBootTimeout = errors.New("guest did not become ready in time")
	// ErrNotFound means no such VM, image file or backend.
	ErrNotFound = errors.New("not found")
	// ErrHostLost means the connection to the machine the VM ran on
	// (a remote host) was lost, and the VM was stopped with it; its disks
	// are kept there, so the session can restart.
	ErrHostLost = errors.New("the connection to the VM's host was lost")
	// ErrUnsupported means this backend, or this VM, cannot do what was
	// asked (a resume of a machine whose channel is vsock, say).
	ErrUnsupported = errors.New("not supported by this VM")
)

// SpecError lists every problem of a Spec; errors.Is(err, ErrInvalidSpec).
type SpecError struct{ Problems []string }

func (e *SpecError) Error() string { return "invalid VM spec: " + strings.Join(e.Problems, "; ") }

// Is makes errors.Is(err, ErrInvalidSpec) hold.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }
