package qemu

import "sandbar/vm"

// Info implements vm.Hypervisor. Shares go over virtio-fs where a usable
// virtiofsd is installed (found once, see virtiofsd), else 9p; the
// guest's channel is the virtio-serial port ChannelName; the NIC's
// socket (-netdev socket) takes a stream of length-prefixed frames. A
// machine of ShapeVZ has vsock and the user-mode network's DHCP instead,
// as Virtualization.framework's guests do.
func (h *Hypervisor) Info() vm.Info {
	i := vm.Info{
		Channel:       vm.ChannelSerial,
		ShareKinds:    []vm.ShareKind{vm.Share9p},
		Networks:      []vm.Network{vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket},
		NATNet:        GuestNet,
		SocketFraming: vm.FramingStream,
		Features: vm.Features{
			OwnProcess:    true,
			DiesWithOwner: parentDeath && !h.cfg.NoParentDeath,
			// Sandbar's own machine has a reporting balloon (buildPlan);
			// the vz shape has vz's traditional one.
			FreePageReporting: h.cfg.Shape != ShapeVZ,
		},
	}
	if h.virtiofsd() != "" {
		i.ShareKinds = []vm.ShareKind{vm.ShareVirtiofs, vm.Share9p}
	}
	if h.cfg.Shape == ShapeVZ {
		i.Channel, i.NATNet = vm.ChannelVsock, "dhcp"
	}
	return i
}

var (
	_ vm.Hypervisor   = (*Hypervisor)(nil)
	_ vm.OrphanReaper = (*Hypervisor)(nil)
)
