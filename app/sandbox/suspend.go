package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"sandbar/guest/image"
	"sandbar/vm"
)

// Suspend saves the running guest to path (see vm.Suspender) and ends
// the VM: its processes, the agent's among them, come back where they
// were with Resume. The Client ends with the VM. Where saving fails the
// guest runs on and the Sandbox is as it was.
func (s *Sandbox) Suspend(ctx context.Context, path string) error {
	sus, ok := s.Machine.(vm.Suspender)
	if !ok {
		return fmt.Errorf("this hypervisor cannot save a running VM: %w", vm.ErrUnsupported)
	}
	if err := sus.Suspend(ctx, path); err != nil {
		return err
	}
	s.Client.Close()
	return nil
}

// Resume boots img from the state Suspend saved at statePath, with the
// Options the suspended guest was booted with (Dir, disks, CPUs and
// memory the same; its NIC may be a new socket on a new network), sets
// the guest's clock to now (it stopped when the guest was saved) and
// checks that its supervisor answers. A state that cannot be loaded is
// vm.ErrBadState, with QEMU's words.
func Resume(ctx context.Context, hv vm.Hypervisor, img *image.Image, o Options, statePath string) (*Sandbox, error) {
	o.defaults()
	res, ok := hv.(vm.Resumer)
	if !ok {
		return nil, fmt.Errorf("the %s backend cannot resume a saved VM: %w", hv.Name(), vm.ErrUnsupported)
	}
	spec, err := SpecFor(img, hv.Info(), o)
	if err != nil {
		return nil, err
	}
	if o.ScratchSize > 0 {
		// The saved guest has the scratch disk's file system mounted:
		// a new, empty disk would be a corrupt one to it.
		if _, err := os.Stat(o.Scratch); err != nil {
			return nil, fmt.Errorf("%w: the session's disk %s is gone: %v", vm.ErrBadState, o.Scratch, err)
		}
	}
	start := time.Now()
	m, err := res.Resume(ctx, spec, statePath)
	if err != nil {
		return nil, err
	}
	sb := &Sandbox{Machine: m, spec: spec, Booted: time.Since(start), log: o.Logger.With("vm", o.Name)}
	sb.Client = NewClient(m.Conn(), ClientOptions{OnEvent: o.OnEvent, Logger: o.Logger})
	// The guest's supervisor still knows the ids of the execs the last
	// host ran, one of them perhaps not yet forgotten when the guest was
	// saved: this Client's ids start past any a Client counting from 0
	// in an earlier life could have reached.
	sb.Client.nextID.Store(uint64(time.Now().UnixNano()))
	if err := sb.SetTime(time.Now()); err != nil {
		sb.Kill()
		m.Wait(context.Background())
		return nil, fmt.Errorf("the resumed guest's channel: %w", err)
	}
	// The guest's supervisor answers an exec once it runs again; one
	// that never does is a resume that failed, however QEMU saw it.
	actx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	res2, err := sb.Client.Exec(actx, ExecRequest{Argv: []string{"true"}, User: UserRoot}, nil, nil)
	if err == nil && res2.Code != 0 {
		err = fmt.Errorf("exit %d", res2.Code)
	}
	if err != nil {
		sb.Kill()
		m.Wait(context.Background())
		sb.Client.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", o.ReadyTimeout)
		}
		return nil, fmt.Errorf("%w: the resumed guest's supervisor does not answer: %v", vm.ErrBadState, err)
	}
	sb.ReadyAfter = time.Since(start)
	return sb, nil
}
