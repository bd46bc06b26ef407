package vz

import "sandbar/vm"

// Info implements vm.Hypervisor, on every platform (off macOS it says
// what the backend would offer; Check says it cannot run). The framework
// gives guests no virtio-serial port, only vsock, so the guest listens
// there at once; shares are virtio-fs; a socket NIC
// (VZFileHandleNetworkDeviceAttachment) takes a connected datagram
// socket, one frame per datagram. The VM runs inside this process's
// framework service, which ends with it: there is no process to reap.
func (h *Hypervisor) Info() vm.Info {
	return vm.Info{
		Channel:       vm.ChannelVsock,
		ShareKinds:    []vm.ShareKind{ShareKind},
		Networks:      []vm.Network{vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket},
		NATNet:        GuestNet,
		SocketFraming: vm.FramingDatagram,
		Features:      vm.Features{OwnProcess: false, DiesWithOwner: true},
	}
}

var _ vm.Hypervisor = (*Hypervisor)(nil)
