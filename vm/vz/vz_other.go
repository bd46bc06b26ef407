//go:build !darwin

package vz

import (
	"context"
	"fmt"

	"sandbar/vm"
)

// Hypervisor is the Virtualization.framework backend; off macOS it only
// says it cannot run, so main can register it on every platform.
type Hypervisor struct{ cfg Config }

// New returns the backend.
func New(cfg Config) *Hypervisor { return &Hypervisor{cfg: cfg.withDefaults()} }

// Name implements vm.Hypervisor.
func (h *Hypervisor) Name() string { return "vz" }

const offMacOS = "Virtualization.framework exists only on macOS: use the qemu backend"

// Check implements vm.Hypervisor.
func (h *Hypervisor) Check(context.Context) vm.Status { return vm.Status{Detail: offMacOS} }

// Boot implements vm.Hypervisor.
func (h *Hypervisor) Boot(context.Context, vm.Spec) (vm.Machine, error) {
	return nil, fmt.Errorf("%s: %w", offMacOS, vm.ErrUnavailable)
}
