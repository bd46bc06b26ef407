package vz

import (
	"context"
	"errors"
	"io"
	"time"
)

// Pacing of Boot's knocks on the guest's vsock port.
const (
	// connectRetry is the pause between two attempts.
	connectRetry = 20 * time.Millisecond
	// connectAttempt bounds one attempt. The framework answers at once
	// while nobody listens, but should one completion never arrive, the
	// next attempt goes on rather than the boot waiting out its timeout.
	connectAttempt = 2 * time.Second
)

// errVMStopped is dial's answer when the VM stopped first.
var errVMStopped = errors.New("the VM stopped")

// errAttemptTimeout is an attempt whose completion did not come within
// its bound: retryable.
var errAttemptTimeout = errors.New("the connect attempt did not complete")

// dialer is how dial knocks: attempt connects once (blocking until the
// framework completes the call), retryable says which errors mean only
// that the guest is not listening yet, and stopped is closed once the VM
// has stopped.
type dialer[C io.Closer] struct {
	attempt   func() (C, error)
	retryable func(error) bool
	stopped   <-chan struct{}
	// per bounds each attempt, every is the pause between attempts;
	// zero means connectAttempt and connectRetry.
	per, every time.Duration
}

// dial calls attempt until it connects, fails for good, the VM stops
// (errVMStopped) or ctx ends (ctx's error). Each attempt runs on its own
// goroutine and is waited for at most per: an attempt given up on is left
// to complete by itself (the framework completes every pending connect
// when the VM stops), and a connection it still makes is closed.
func dial[C io.Closer](ctx context.Context, d dialer[C]) (C, error) {
	per, every := d.per, d.every
	if per <= 0 {
		per = connectAttempt
	}
	if every <= 0 {
		every = connectRetry
	}
	var zero C
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		c, err := dialOnce(ctx, per, d.attempt)
		if err == nil {
			return c, nil
		}
		switch {
		case ctx.Err() != nil:
			return zero, ctx.Err()
		case errors.Is(err, errAttemptTimeout), d.retryable(err):
		default:
			return zero, err
		}
		select {
		case <-d.stopped:
			return zero, errVMStopped
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-tick.C:
		}
	}
}

// dialOnce is one attempt, waited for at most per and no longer than ctx.
func dialOnce[C io.Closer](ctx context.Context, per time.Duration, attempt func() (C, error)) (C, error) {
	type result struct {
		c   C
		err error
	}
	ch := make(chan result)
	abandon := make(chan struct{})
	defer close(abandon)
	go func() {
		c, err := attempt()
		select {
		case ch <- result{c, err}:
		case <-abandon:
			if err == nil {
				c.Close()
			}
		}
	}()
	t := time.NewTimer(per)
	defer t.Stop()
	var zero C
	select {
	case r := <-ch:
		return r.c, r.err
	case <-t.C:
		return zero, errAttemptTimeout
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
