//go:build darwin

package vz

import (
	"context"
	"errors"

	vzapi "github.com/Code-Hex/vz/v3"

	"sandbar/vm"
)

// SetMemoryTarget implements vm.Ballooner with the traditional balloon
// device every guest has (Plan.Balloon): Virtualization.framework has no
// free page reporting, so memory a guest frees stays the guest's until
// Sandbar lowers this target (app/session drives it while a session
// waits).
func (m *machine) SetMemoryTarget(ctx context.Context, target uint64) error {
	select {
	case <-m.exit.Done():
		return vm.ErrNotRunning
	default:
	}
	target = min(max(target, vm.MinMemory), m.plan.Memory)
	for _, d := range m.vm.MemoryBalloonDevices() {
		if b := vzapi.AsVirtioTraditionalMemoryBalloonDevice(d); b != nil {
			// The framework takes the size in bytes, a whole number of
			// MiB, and asks the guest's driver for the rest.
			b.SetTargetVirtualMachineMemorySize(target / vm.MiB * vm.MiB)
			return nil
		}
	}
	return errors.New("this VM has no memory balloon device")
}

var _ vm.Ballooner = (*machine)(nil)
