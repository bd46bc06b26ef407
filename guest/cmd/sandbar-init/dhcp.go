//go:build linux

package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A minimal DHCPv4 client (RFC 2131): DISCOVER, OFFER, REQUEST, ACK, with
// the broadcast flag set so replies reach an interface with no address
// yet. It takes the address, router and DNS server, and does not renew: a
// session is shorter than the leases of QEMU's and macOS's NAT servers.

const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpAck      = 5
	dhcpNak      = 6

	optSubnetMask = 1
	optRouter     = 3
	optDNS        = 6
	optHostname   = 12
	optRequestIP  = 50
	optLeaseTime  = 51
	optMsgType    = 53
	optServerID   = 54
	optParamList  = 55
	optEnd        = 255
	optPad        = 0
)

// dhcpMagic is the cookie that starts DHCP options.
const dhcpMagic = "\x63\x82\x53\x63"

// dhcpPacket is the part of a DHCP message this client reads or writes.
type dhcpPacket struct {
	op      byte
	xid     uint32
	flags   uint16
	yiaddr  netip.Addr
	chaddr  net.HardwareAddr
	msgType byte
	// options other than the message type, by code
	options map[byte][]byte
}

func (p dhcpPacket) marshal() []byte {
	b := make([]byte, 236, 300)
	b[0] = p.op
	b[1] = 1 // ethernet
	b[2] = 6
	binary.BigEndian.PutUint32(b[4:], p.xid)
	binary.BigEndian.PutUint16(b[10:], p.flags)
	if p.yiaddr.Is4() {
		a := p.yiaddr.As4()
		copy(b[16:], a[:])
	}
	copy(b[28:44], p.chaddr)
	b = append(b, dhcpMagic...)
	b = append(b, optMsgType, 1, p.msgType)
	for _, code := range []byte{optRequestIP, optServerID, optHostname, optParamList, optSubnetMask, optRouter, optDNS, optLeaseTime} {
		if v, ok := p.options[code]; ok {
			b = append(b, code, byte(len(v)))
			b = append(b, v...)
		}
	}
	b = append(b, optEnd)
	for len(b) < 300 { // some servers drop BOOTP-sized-less packets
		b = append(b, optPad)
	}
	return b
}

func parseDHCP(b []byte) (dhcpPacket, error) {
	var p dhcpPacket
	if len(b) < 240 || string(b[236:240]) != dhcpMagic {
		return p, errors.New("not a DHCP message")
	}
	p.op = b[0]
	p.xid = binary.BigEndian.Uint32(b[4:])
	p.flags = binary.BigEndian.Uint16(b[10:])
	p.yiaddr = netip.AddrFrom4([4]byte(b[16:20]))
	hlen := int(b[2])
	if hlen > 16 {
		return p, errors.New("bad hardware address length")
	}
	p.chaddr = net.HardwareAddr(append([]byte(nil), b[28:28+hlen]...))
	p.options = map[byte][]byte{}
	opts := b[240:]
	for len(opts) > 0 {
		code := opts[0]
		if code == optEnd {
			break
		}
		if code == optPad {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || len(opts) < 2+int(opts[1]) {
			return p, errors.New("truncated DHCP option")
		}
		v := opts[2 : 2+int(opts[1])]
		if code == optMsgType && len(v) == 1 {
			p.msgType = v[0]
		} else {
			p.options[code] = append(p.options[code], v...) // RFC 3396 concatenation
		}
		opts = opts[2+int(opts[1]):]
	}
	if p.msgType == 0 {
		return p, errors.New("DHCP message without a message type")
	}
	return p, nil
}

// lease is what the client takes from an ACK.
type lease struct {
	addr   netip.Prefix
	router netip.Addr
	dns    netip.Addr
}

func leaseFrom(ack dhcpPacket) (lease, error) {
	if !ack.yiaddr.Is4() || ack.yiaddr.IsUnspecified() {
		return lease{}, errors.New("ACK without an address")
	}
	bits := 24
	if m := ack.options[optSubnetMask]; len(m) == 4 {
		ones, size := net.IPMask(m).Size()
		if size == 32 {
			bits = ones
		}
	}
	l := lease{addr: netip.PrefixFrom(ack.yiaddr, bits)}
	if r := ack.options[optRouter]; len(r) >= 4 {
		l.router = netip.AddrFrom4([4]byte(r[:4]))
	}
	if d := ack.options[optDNS]; len(d) >= 4 {
		l.dns = netip.AddrFrom4([4]byte(d[:4]))
	}
	return l, nil
}

// dhcpLease runs the exchange on ifname within timeout.
func dhcpLease(ifname string, timeout time.Duration) (lease, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return lease{}, err
	}
	conn, err := dhcpSocket(ifname)
	if err != nil {
		return lease{}, err
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	conn.SetDeadline(deadline)

	var xidb [4]byte
	rand.Read(xidb[:])
	xid := binary.BigEndian.Uint32(xidb[:])
	params := []byte{optSubnetMask, optRouter, optDNS, optLeaseTime, optServerID}
	bcast := &net.UDPAddr{IP: net.IPv4bcast, Port: 67}
	discover := dhcpPacket{op: 1, xid: xid, flags: 0x8000, chaddr: ifi.HardwareAddr, msgType: dhcpDiscover,
		options: map[byte][]byte{optParamList: params, optHostname: []byte("sandbar")}}

	offer, err := dhcpExchange(conn, bcast, discover, dhcpOffer, deadline)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return lease{}, fmt.Errorf("no server offered an address within %v", timeout)
	}
	if err != nil {
		return lease{}, fmt.Errorf("no offer: %w", err)
	}
	yi := offer.yiaddr.As4()
	request := dhcpPacket{op: 1, xid: xid, flags: 0x8000, chaddr: ifi.HardwareAddr, msgType: dhcpRequest,
		options: map[byte][]byte{optParamList: params, optHostname: []byte("sandbar"), optRequestIP: yi[:], optServerID: offer.options[optServerID]}}
	ack, err := dhcpExchange(conn, bcast, request, dhcpAck, deadline)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return lease{}, fmt.Errorf("the server offered %s but did not acknowledge it within %v", offer.yiaddr, timeout)
	}
	if err != nil {
		return lease{}, fmt.Errorf("no acknowledgement: %w", err)
	}
	return leaseFrom(ack)
}

// dhcpExchange sends out, resending each second, until a reply of type
// want with the same transaction id arrives.
func dhcpExchange(conn net.PacketConn, to net.Addr, out dhcpPacket, want byte, deadline time.Time) (dhcpPacket, error) {
	buf := make([]byte, 1500)
	for time.Now().Before(deadline) {
		if _, err := conn.WriteTo(out.marshal(), to); err != nil {
			return dhcpPacket{}, err
		}
		resend := time.Now().Add(time.Second)
		if resend.After(deadline) {
			resend = deadline
		}
		conn.SetReadDeadline(resend)
		for {
			n, _, err := conn.ReadFrom(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return dhcpPacket{}, err
			}
			p, err := parseDHCP(buf[:n])
			if err != nil || p.op != 2 || p.xid != out.xid {
				continue
			}
			if p.msgType == dhcpNak {
				return dhcpPacket{}, errors.New("server refused (NAK)")
			}
			if p.msgType == want {
				return p, nil
			}
		}
	}
	return dhcpPacket{}, os.ErrDeadlineExceeded
}

func dhcpSocket(ifname string) (net.PacketConn, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, err
	}
	for _, opt := range []int{unix.SO_REUSEADDR, unix.SO_BROADCAST} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 1); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind to %s: %w", ifname, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: 68}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind port 68: %w", err)
	}
	f := os.NewFile(uintptr(fd), "dhcp")
	defer f.Close()
	return net.FilePacketConn(f)
}
