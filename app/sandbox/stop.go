package sandbox

import (
	"context"
	"time"

	"sandbar/guest/protocol"
)

// DefaultStopTimeout bounds Stop and Shutdown when ctx has no deadline.
const DefaultStopTimeout = 15 * time.Second

// protocolShare is the part of Stop's time the guest gets to power off
// after the protocol's shutdown; the machine's Stop (power button, then
// kill) has the rest.
const protocolShare = 0.6

// Stop shuts the guest down gracefully and returns once the VM has
// stopped: the protocol's shutdown, which has the supervisor stop the
// agent, flush and power off; then, where the guest has not powered off
// after protocolShare of ctx's time, the machine's own Stop, which
// presses the power button and kills the VM as the deadline nears.
// Without a deadline ctx gets DefaultStopTimeout.
func (s *Sandbox) Stop(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStopTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	// The line is sent aside: a guest that does not read its channel
	// must not hold Stop past its deadline.
	var sendErr error
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		sendErr = s.Client.Send(protocol.Command{Cmd: protocol.CmdShutdown})
	}()
	var err error
	if !s.poweredOff(ctx, time.Duration(float64(time.Until(deadline))*protocolShare), sent, &sendErr) {
		s.log.Info("guest ignored shutdown; stopping the machine")
		err = s.Machine.Stop(ctx)
	}
	select {
	case <-sent:
	default:
		// Still blocked on a guest that never read: the VM has stopped,
		// so its channel is done; closing it ends the write.
		s.Client.Close()
		<-sent
	}
	return err
}

// poweredOff waits up to d for the VM to stop after the shutdown line,
// and reports whether it did; it gives up at once when the line could
// not be sent (sendErr is read once sent is closed).
func (s *Sandbox) poweredOff(ctx context.Context, d time.Duration, sent <-chan struct{}, sendErr *error) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s.Machine.Wait(ctx)
	}()
	defer func() { cancel(); <-stopped }()
	for {
		select {
		case <-sent:
			if *sendErr != nil {
				s.log.Debug("shutdown not sent", "err", *sendErr)
				return false
			}
			sent = nil // sent: wait on for the VM
		case <-stopped:
			return ctx.Err() == nil
		}
	}
}

// Shutdown stops the guest gracefully (Stop) and closes the channel. ctx
// bounds it; without a deadline it takes at most DefaultStopTimeout.
func (s *Sandbox) Shutdown(ctx context.Context) error {
	err := s.Stop(ctx)
	if werr := s.Wait(ctx); err == nil && werr != nil {
		err = werr
	}
	s.Client.Close()
	return err
}
