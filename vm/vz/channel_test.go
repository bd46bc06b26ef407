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
	info := h.Info()
	if info.Channel != vm.ChannelVsock {
		t.Fatalf("Info().Channel = %q, want vsock", info.Channel)
	}
	args := vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: 1, Scratch: -1, Workspace: -1, Channel: info.Channel})
	if !slices.Contains(args, "sandbar.channel=vsock") {
		t.Errorf("guest arguments %v lack sandbar.channel=vsock", args)
	}
	if VsockPort != vm.VsockPort {
		t.Errorf("vz listens on %d, the guest on %d", VsockPort, vm.VsockPort)
	}
}

// TestInfo: what the backend tells callers matches what its plan does.
func TestInfo(t *testing.T) {
	info := New(Config{}).Info()
	if info.Share() != vm.ShareVirtiofs || info.NATNet != GuestNet || info.SocketFraming != vm.FramingDatagram {
		t.Errorf("Info() = %+v: want virtio-fs shares, %q on NAT, datagram NIC sockets", info, GuestNet)
	}
	for _, n := range []vm.Network{vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket} {
		if !info.Supports(n) {
			t.Errorf("Info() lacks network %q", n)
		}
	}
	if info.Features.OwnProcess || !info.Features.DiesWithOwner {
		t.Errorf("Features = %+v: the VM lives in this process and dies with it", info.Features)
	}
}
