package vm

import (
	"context"
	"sync"
	"time"
)

// Exit is a Machine's end, as its backend learns of it: told once (End),
// with why, and waited for by any number of goroutines. Each backend
// (vm/qemu, vm/vz, vm/libvirt) learns of the end its own way (a process's
// wait, a framework's state, a host's event) and tells its Exit; Wait,
// Exited and Stop's deadline are then the same for all of them.
type Exit struct {
	done chan struct{}
	once sync.Once
	err  error
}

// NewExit returns an Exit not yet ended.
func NewExit() *Exit { return &Exit{done: make(chan struct{})} }

// End records why the machine ended (nil for a clean power-off) and
// wakes every waiter; only the first call counts. It reports whether it
// was that first call.
func (e *Exit) End(err error) bool {
	first := false
	e.once.Do(func() {
		e.err = err
		close(e.done)
		first = true
	})
	return first
}

// Done is closed once the machine has ended.
func (e *Exit) Done() <-chan struct{} { return e.done }

// Err is why the machine ended; nil before it has (or after a clean
// power-off).
func (e *Exit) Err() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// Wait is Machine.Wait: it blocks until the machine has ended or ctx is
// done, and returns why it ended (or ctx's error).
func (e *Exit) Wait(ctx context.Context) error {
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exited reports whether the machine has ended, without waiting.
func (e *Exit) Exited() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// WaitFor waits at most d for the end and reports whether it came; with
// d <= 0 it only looks.
func (e *Exit) WaitFor(d time.Duration) bool {
	if d <= 0 {
		return e.Exited()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.done:
		return true
	case <-t.C:
		return false
	}
}

// StopTimeout is how long Machine.Stop gives a guest to power off when
// its ctx has no deadline.
const StopTimeout = 15 * time.Second

// killMargin is what Stop keeps of ctx's deadline to kill a guest that
// did not power off, so that it has stopped by the deadline.
const killMargin = 200 * time.Millisecond

// PowerOff is the first half of Machine.Stop: it presses the power
// button (press) and reports whether the machine ended by ctx's deadline
// (StopTimeout from now where ctx has none) less a margin left for the
// kill, which is the caller's when it did not. A machine already ended
// is not pressed; a press that fails is not waited on.
func (e *Exit) PowerOff(ctx context.Context, press func() error) bool {
	if e.Exited() {
		return true
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(StopTimeout)
	}
	if err := press(); err != nil {
		return false
	}
	return e.WaitFor(time.Until(deadline.Add(-killMargin)))
}
