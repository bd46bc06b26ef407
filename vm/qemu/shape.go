package qemu

import "math/rand/v2"

// ShapeVZ is a Config.Shape that boots the guest on a machine shaped like
// Virtualization.framework's, so that Linux CI meets the guest as a Mac
// does: only virtio-PCI devices (microvm with PCIe on x86-64, virt on
// arm64), the console a virtconsole on its own virtio-serial-pci with
// console=hvc0 and no serial console, no org.sandbar.0 port, the host channel on
// vsock (sandbar.channel=vsock, a vhost-vsock-pci device that the host
// connects to at the guest's CID), the user-mode network's DHCP
// (sandbar.net=dhcp), and the entropy and balloon devices vz attaches.
//
// Where this host has no usable /dev/vhost-vsock (see VhostVsock), the
// guest gets no vsock device, so nothing can carry the host channel:
// Boot still returns, and the machine's Conn carries nothing and ends
// when QEMU does. Its guest shows on the console how far it got (its
// supervisor finds no vsock and the guest powers off). Sessions never use
// this shape.
const ShapeVZ = "vz"

// guestCID picks a vsock context ID for a guest: unique on the host while
// the guest runs, which QEMU checks (it fails to start on a CID in use).
// 0-2 are reserved and 0xffffffff is "any".
func guestCID() uint32 { return 1<<16 + rand.Uint32N(1<<30) }
