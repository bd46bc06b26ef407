package vz

import "sandbar/vm"

// SocketFraming implements vm.SocketNetwork:
// VZFileHandleNetworkDeviceAttachment takes a connected datagram socket,
// one frame per datagram.
func (h *Hypervisor) SocketFraming() vm.Framing { return vm.FramingDatagram }

var _ vm.SocketNetwork = (*Hypervisor)(nil)

// ChannelKind implements vm.ChannelKinder: the framework gives guests no
// virtio-serial port, only vsock, so the guest listens there at once.
func (h *Hypervisor) ChannelKind() vm.Channel { return vm.ChannelVsock }

var _ vm.ChannelKinder = (*Hypervisor)(nil)
