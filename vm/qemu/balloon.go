package qemu

import (
	"context"
	"fmt"
	"time"

	"sandbar/vm"
)

// SetMemoryTarget implements vm.Ballooner with QMP's balloon command. On
// Sandbar's own machine the balloon also reports free pages, so nothing
// needs to drive it; the target is there for a caller that wants a guest
// smaller still, and for the vz shape, whose balloon is vz's traditional
// one.
func (m *machine) SetMemoryTarget(ctx context.Context, target uint64) error {
	if m.exit.Exited() {
		return vm.ErrNotRunning
	}
	if m.plan.FromTemplate {
		// An inflated balloon's pages are discarded by punching holes in
		// the RAM's file under QEMU 7.2: the template's, shared by every
		// VM started from it.
		return fmt.Errorf("a VM started from a template has no balloon Sandbar may drive: %w", vm.ErrUnsupported)
	}
	target = min(max(target, vm.MinMemory), m.spec.Memory)
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	c, err := dialQMP(m.plan.QMP, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.execute("balloon", map[string]any{"value": target}, nil); err != nil {
		return fmt.Errorf("set the guest's memory target to %d MiB: %w", target/vm.MiB, err)
	}
	return nil
}

var _ vm.Ballooner = (*machine)(nil)
