package vm

// Channel is how the guest supervisor reaches the host: the kernel
// argument sandbar.channel, which sandbar-init's supervisor reads.
type Channel string

const (
	// ChannelAuto lets the guest look: the virtio-serial port
	// org.sandbar.0 when one shows up within a second, else AF_VSOCK.
	// GuestArgs then writes no sandbar.channel.
	ChannelAuto Channel = "auto"
	// ChannelSerial is the virtio-serial port org.sandbar.0 (QEMU's
	// plan); the guest waits for it and never listens on vsock.
	ChannelSerial Channel = "serial"
	// ChannelVsock is AF_VSOCK port VsockPort, where the guest listens at
	// once (Virtualization.framework, which has no virtio-serial port:
	// asking spares every boot the second the guest would wait for one).
	ChannelVsock Channel = "vsock"
)

// VsockPort is the AF_VSOCK port the guest supervisor listens on.
const VsockPort uint32 = 1024
