//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loopbackUp brings up lo in the background and returns a channel that
// says how that went. The kernel takes ~20 ms of a boot under emulation
// to bring it up (IPv6 address configuration, per-device sysctls), none
// of which needs the modules or the disks, so it runs while those load.
func loopbackUp() <-chan error {
	done := make(chan error, 1)
	go func() {
		if err := linkUp("lo"); err != nil {
			done <- fmt.Errorf("bring up lo: %w", err)
			return
		}
		done <- nil
	}()
	return done
}

// dhcpTimeout bounds the DHCP exchange. A guest whose DHCP server does
// not answer boots without network (see networkOrWhy); Sandbar's own
// network answers at once, and the hosts give a static address anyway.
const dhcpTimeout = 3 * time.Second

// networkOrWhy brings the network up (setupNetwork) and returns "", or
// why it is not up: a failed network is not fatal. The guest boots
// without it and the supervisor tells the host (system:ready's
// net_error), so a session still starts and says what went wrong
// rather than the VM powering off with the reason only on its console.
func networkOrWhy(c *console, n netConfig, loopback <-chan error, sysNet string) string {
	err := setupNetwork(c, n, loopback, sysNet)
	if err == nil {
		return ""
	}
	c.mark("network: %v: going on without it", err)
	return err.Error()
}

// setupNetwork waits for loopback (see loopbackUp) and, unless the host
// asked for no network, brings up the first ethernet interface under
// sysNet (/sys/class/net), statically or by DHCP, and writes
// /etc/resolv.conf.
func setupNetwork(c *console, n netConfig, loopback <-chan error, sysNet string) error {
	if err := <-loopback; err != nil {
		return err
	}
	if n.mode == "none" {
		return nil
	}
	ifname, err := findEthernet(sysNet)
	if err != nil {
		return err
	}
	if len(n.mac) == 6 {
		// A VM started from a template: its device still has the
		// template's address, and the host's network drops frames from
		// any but the VM's own.
		if err := setMAC(ifname, n.mac); err != nil {
			return fmt.Errorf("set the address of %s to %s: %w", ifname, n.mac, err)
		}
	}
	if n.mtu > 0 {
		// Before the link is up, so no packet leaves at the old size.
		if err := setMTU(ifname, n.mtu); err != nil {
			return fmt.Errorf("set the MTU of %s to %d (sandbar.net's mtu=): %w", ifname, n.mtu, err)
		}
	}
	if err := linkUp(ifname); err != nil {
		return fmt.Errorf("bring up %s: %w", ifname, err)
	}
	if n.mode == "dhcp" {
		start := time.Now()
		lease, err := dhcpLease(ifname, dhcpTimeout)
		if err != nil {
			return fmt.Errorf("DHCP on %s: %w", ifname, err)
		}
		n.addr, n.gateway, n.dns = lease.addr, lease.router, lease.dns
		c.mark("DHCP lease %s via %s in %dms", n.addr, n.gateway, time.Since(start).Milliseconds())
	}
	idx, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	if err := addAddress(idx.Index, n.addr); err != nil {
		return fmt.Errorf("address %s on %s: %w", n.addr, ifname, err)
	}
	if n.gateway.IsValid() {
		if err := addDefaultRoute(idx.Index, n.gateway); err != nil {
			return fmt.Errorf("default route via %s: %w", n.gateway, err)
		}
	}
	if n.dns.IsValid() {
		if err := writeResolvConf("/etc/resolv.conf", n.dns); err != nil {
			return err
		}
	}
	c.mark("network up (%s %s, gateway %s, dns %s, mtu %s)", ifname, n.addr, n.gateway, n.dns, mtuText(n.mtu))
	return nil
}

// findEthernet returns the first (by name) interface of type ARPHRD_ETHER.
func findEthernet(sysNet string) (string, error) {
	entries, err := os.ReadDir(sysNet)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		typ, err := os.ReadFile(sysNet + "/" + e.Name() + "/type")
		if err == nil && strings.TrimSpace(string(typ)) == "1" {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", errors.New("no ethernet interface: attach a virtio-net device or pass sandbar.net=none")
	}
	sort.Strings(names)
	return names[0], nil
}

// linkUp sets IFF_UP on an interface.
func linkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// setMTU sets an interface's MTU. virtio-net takes 68 to 65535, or up to
// the device's own MTU when it offers one (VIRTIO_NET_F_MTU); past that
// the kernel says EINVAL. Frames past 1500 bytes are received only when
// the device offers mergeable receive buffers (VIRTIO_NET_F_MRG_RXBUF,
// QEMU's default) or guest TSO (then the driver posts 64 KiB buffers):
// otherwise the driver drops them, so the host asks for a large MTU only
// with one of those.
func setMTU(name string, mtu int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	ifr.SetUint32(uint32(mtu))
	return unix.IoctlIfreq(fd, unix.SIOCSIFMTU, ifr)
}

// setMAC sets an interface's Ethernet address (SIOCSIFHWADDR); the
// virtio-net driver passes it on to the device.
func setMAC(name string, mac []byte) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// struct ifreq: the name, then struct sockaddr (family, 14 bytes).
	var ifr [40]byte
	if len(name) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q is too long", name)
	}
	copy(ifr[:], name)
	binary.NativeEndian.PutUint16(ifr[unix.IFNAMSIZ:], unix.ARPHRD_ETHER)
	copy(ifr[unix.IFNAMSIZ+2:], mac)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCSIFHWADDR, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	return nil
}

func mtuText(mtu int) string {
	if mtu == 0 {
		return "the driver's"
	}
	return strconv.Itoa(mtu)
}

// netlinkRequest sends one rtnetlink request and waits for its ack.
func netlinkRequest(typ uint16, body []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(body))
	msg = append(msg, body...)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < unix.NLMSG_HDRLEN+4 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return errors.New("unexpected netlink reply")
	}
	if errno := int32(binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN:])); errno != 0 {
		return unix.Errno(-errno)
	}
	return nil
}

// rtattr encodes one route attribute, padded to 4 bytes.
func rtattr(typ uint16, data []byte) []byte {
	l := unix.SizeofRtAttr + len(data)
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[unix.SizeofRtAttr:], data)
	return b
}

func addAddress(ifindex int, p netip.Prefix) error {
	a := p.Addr().As4()
	body := make([]byte, unix.SizeofIfAddrmsg)
	body[0] = unix.AF_INET
	body[1] = byte(p.Bits())
	body[3] = unix.RT_SCOPE_UNIVERSE
	binary.NativeEndian.PutUint32(body[4:], uint32(ifindex))
	body = append(body, rtattr(unix.IFA_LOCAL, a[:])...)
	body = append(body, rtattr(unix.IFA_ADDRESS, a[:])...)
	if bc := broadcast(p); bc.IsValid() {
		b := bc.As4()
		body = append(body, rtattr(unix.IFA_BROADCAST, b[:])...)
	}
	return netlinkRequest(unix.RTM_NEWADDR, body)
}

func broadcast(p netip.Prefix) netip.Addr {
	if p.Bits() >= 31 {
		return netip.Addr{}
	}
	a := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(a[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a)
}

func addDefaultRoute(ifindex int, gw netip.Addr) error {
	g := gw.As4()
	body := make([]byte, unix.SizeofRtMsg)
	body[0] = unix.AF_INET
	body[4] = unix.RT_TABLE_MAIN
	body[5] = unix.RTPROT_BOOT
	body[6] = unix.RT_SCOPE_UNIVERSE
	body[7] = unix.RTN_UNICAST
	body = append(body, rtattr(unix.RTA_GATEWAY, g[:])...)
	idx := make([]byte, 4)
	binary.NativeEndian.PutUint32(idx, uint32(ifindex))
	body = append(body, rtattr(unix.RTA_OIF, idx)...)
	return netlinkRequest(unix.RTM_NEWROUTE, body)
}

// writeResolvConf replaces the root image's resolv.conf (possibly a link
// to a resolver the guest does not run).
func writeResolvConf(p string, dns netip.Addr) error {
	os.Remove(p)
	if err := os.WriteFile(p, []byte("nameserver "+dns.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// setHostname sets the kernel's hostname and makes it resolve locally, as
// tools such as sudo expect.
func setHostname(name, hostsFile string) error {
	if err := unix.Sethostname([]byte(name)); err != nil {
		return err
	}
	hosts, err := os.ReadFile(hostsFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if hostsHas(hosts, name) {
		return nil
	}
	if len(hosts) == 0 {
		hosts = []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	}
	if hosts[len(hosts)-1] != '\n' {
		hosts = append(hosts, '\n')
	}
	hosts = append(hosts, "127.0.1.1\t"+name+"\n"...)
	os.Remove(hostsFile) // may be a link into the read-only image
	return os.WriteFile(hostsFile, hosts, 0o644)
}

// hostsHas reports whether an /etc/hosts text maps name.
func hostsHas(hosts []byte, name string) bool {
	for _, line := range strings.Split(string(hosts), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		for _, f := range fields[min(1, len(fields)):] {
			if f == name {
				return true
			}
		}
	}
	return false
}
