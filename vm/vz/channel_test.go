package vz

import (
	"slices"
	"testing"

	"sandbar/vm"
)

// TestGuestsUseVsock: a vz guest is told its channel is vsock, so it does
// not look for the virtio-serial port the framework never gives it.
func TestGuestsUseVsock(t *testing.T) {
	h := New(Config{})
	if got := h.ChannelKind(); got != vm.ChannelVsock {
		t.Fatalf("ChannelKind = %q, want vsock", got)
	}
	args := vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: 1, Scratch: -1, Workspace: -1, Channel: h.ChannelKind()})
	if !slices.Contains(args, "sandbar.channel=vsock") {
		t.Errorf("guest arguments %v lack sandbar.channel=vsock", args)
	}
	if VsockPort != vm.VsockPort {
		t.Errorf("vz listens on %d, the guest on %d", VsockPort, vm.VsockPort)
	}
}
