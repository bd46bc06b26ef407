package vz

import "sandbar/vm"

// SocketFraming implements vm.SocketNetwork:
// VZFileHandleNetworkDeviceAttachment takes a connected datagram socket,
// one frame per datagram.
func (h *Hypervisor) SocketFraming() vm.Framing { return vm.FramingDatagram }

var _ vm.SocketNetwork = (*Hypervisor)(nil)
