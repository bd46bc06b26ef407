package netstack

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// This file sends the network what a guest with root can: any frame at
// all, and any byte stream.

var (
	strangerMAC  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x66}
	broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func ethFrame(dst, src net.HardwareAddr, typ tcpip.NetworkProtocolNumber, payload []byte) []byte {
	b := make([]byte, header.EthernetMinimumSize+len(payload))
	header.Ethernet(b).Encode(&header.EthernetFields{DstAddr: tcpip.LinkAddress(dst), SrcAddr: tcpip.LinkAddress(src), Type: typ})
	copy(b[header.EthernetMinimumSize:], payload)
	return b
}

// ipv4Packet is an IPv4 packet around a transport header and payload.
func ipv4Packet(src, dst netip.Addr, proto tcpip.TransportProtocolNumber, transport []byte) []byte {
	b := make([]byte, header.IPv4MinimumSize+len(transport))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(proto),
		SrcAddr: tcpAddr(src), DstAddr: tcpAddr(dst),
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	copy(b[header.IPv4MinimumSize:], transport)
	return b
}

func udpPacket(src, dst netip.Addr, sport, dport uint16, payload []byte) []byte {
	u := make([]byte, header.UDPMinimumSize+len(payload))
	header.UDP(u).Encode(&header.UDPFields{SrcPort: sport, DstPort: dport, Length: uint16(len(u))})
	copy(u[header.UDPMinimumSize:], payload)
	return ipv4Packet(src, dst, header.UDPProtocolNumber, u)
}

func tcpSYN(src, dst netip.Addr, sport, dport uint16) []byte {
	b := make([]byte, header.TCPMinimumSize)
	header.TCP(b).Encode(&header.TCPFields{SrcPort: sport, DstPort: dport, SeqNum: 1, DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagSyn, WindowSize: 65535})
	return ipv4Packet(src, dst, header.TCPProtocolNumber, b)
}

func arpPacket(op header.ARPOp, senderMAC net.HardwareAddr, sender, target netip.Addr) []byte {
	b := make([]byte, header.ARPSize)
	h := header.ARP(b)
	h.SetIPv4OverEthernet()
	h.SetOp(op)
	copy(h.HardwareAddressSender(), senderMAC)
	copy(h.ProtocolAddressSender(), sender.AsSlice())
	copy(h.ProtocolAddressTarget(), target.AsSlice())
	return b
}

// fromGuest is a frame from the guest's NIC to the gateway.
func fromGuest(typ tcpip.NetworkProtocolNumber, payload []byte) []byte {
	return ethFrame(testGatewayMAC, testGuestMAC, typ, payload)
}

// dnsFrame is a whole frame carrying a DNS query for name to the gateway.
func dnsFrame(t testing.TB, name string) []byte {
	return fromGuest(header.IPv4ProtocolNumber, udpPacket(GuestIP, GatewayIP, 5353, 53, dnsQuery(t, 9, name, dnsmessage.TypeA)))
}

// hostileFrames are frames no honest NIC sends. dropped says the link
// drops it before the stack sees it (and counts it in RxDropped); the
// rest the stack must take apart without harm.
func hostileFrames(t testing.TB, mtu int) []struct {
	name    string
	frame   []byte
	dropped bool
} {
	ip := udpPacket(GuestIP, GatewayIP, 5353, 53, dnsQuery(t, 9, "hostile.test.", dnsmessage.TypeA))
	withIP := func(edit func(header.IPv4)) []byte {
		p := append([]byte(nil), ip...)
		edit(header.IPv4(p))
		return fromGuest(header.IPv4ProtocolNumber, p)
	}
	return []struct {
		name    string
		frame   []byte
		dropped bool
	}{
		{"zero length", []byte{}, true},
		{"one byte", []byte{0x42}, true},
		{"13 bytes", fromGuest(header.IPv4ProtocolNumber, nil)[:13], true},
		{"one byte past the MTU", fromGuest(header.IPv4ProtocolNumber, make([]byte, mtu+1)), true},
		{"100 KiB", fromGuest(header.IPv4ProtocolNumber, make([]byte, 100<<10)), true},
		{"from another MAC", ethFrame(testGatewayMAC, strangerMAC, header.IPv4ProtocolNumber, ip), true},
		{"from the gateway's MAC", ethFrame(testGatewayMAC, testGatewayMAC, header.IPv4ProtocolNumber, ip), true},
		{"to another MAC", ethFrame(strangerMAC, testGuestMAC, header.IPv4ProtocolNumber, ip), true},
		{"to a multicast MAC", ethFrame(net.HardwareAddr{0x01, 0, 0x5e, 0, 0, 1}, testGuestMAC, header.IPv4ProtocolNumber, ip), true},
		{"IPv6", fromGuest(header.IPv6ProtocolNumber, make([]byte, 60)), true},
		{"unknown EtherType", fromGuest(0x88b5, ip), true},
		{"VLAN tag", fromGuest(0x8100, ip), true},
		{"Ethernet header only", fromGuest(header.IPv4ProtocolNumber, nil), false},
		{"truncated IPv4 header", fromGuest(header.IPv4ProtocolNumber, ip[:10]), false},
		{"IPv4 header length under 20", withIP(func(h header.IPv4) { h[0] = 0x43 }), false},
		{"IPv4 header length past the packet", withIP(func(h header.IPv4) { h[0] = 0x4f }), false},
		{"IPv4 total length past the packet", withIP(func(h header.IPv4) { h.SetTotalLength(9000) }), false},
		{"IPv4 total length under the header", withIP(func(h header.IPv4) { h.SetTotalLength(4) }), false},
		{"IPv4 version 6", withIP(func(h header.IPv4) { h[0] = 0x65 }), false},
		{"IPv4 first fragment of many", withIP(func(h header.IPv4) { h.SetFlagsFragmentOffset(header.IPv4FlagMoreFragments, 0) }), false},
		{"IPv4 fragment past 64 KiB", withIP(func(h header.IPv4) { h.SetFlagsFragmentOffset(0, 65528) }), false},
		{"UDP length past the packet", withIP(func(h header.IPv4) { header.UDP(h.Payload()).SetLength(4000) }), false},
		{"UDP length under its header", withIP(func(h header.IPv4) { header.UDP(h.Payload()).SetLength(3) }), false},
		{"from a spoofed source address", fromGuest(header.IPv4ProtocolNumber, udpPacket(netip.MustParseAddr("10.9.9.9"), GatewayIP, 5353, 53, ip[28:])), false},
		{"from the gateway's address", fromGuest(header.IPv4ProtocolNumber, udpPacket(GatewayIP, GatewayIP, 53, 53, ip[28:])), false},
		{"to the broadcast address", fromGuest(header.IPv4ProtocolNumber, udpPacket(GuestIP, netip.MustParseAddr("255.255.255.255"), 9, 9, nil)), false},
		{"SYN from the gateway's address", fromGuest(header.IPv4ProtocolNumber, tcpSYN(GatewayIP, netip.MustParseAddr("198.19.255.254"), 1, 443)), false},
		{"truncated ARP", ethFrame(broadcastMAC, testGuestMAC, header.ARPProtocolNumber, arpPacket(header.ARPRequest, testGuestMAC, GuestIP, GatewayIP)[:7]), false},
		{"ARP claiming the gateway's address", ethFrame(broadcastMAC, testGuestMAC, header.ARPProtocolNumber, arpPacket(header.ARPReply, testGuestMAC, GatewayIP, GatewayIP)), false},
	}
}

// TestHostileFrames writes every hostile frame raw to the socket, in
// both framings: the network drops what it must, counts it, and still
// answers a DNS query afterwards.
func TestHostileFrames(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			tn := newTestNet(t, netOptions{framing: f})
			before := tn.Stats().RxDropped.Load()
			want := uint64(0)
			for _, c := range hostileFrames(t, tn.cfg.MTU) {
				if err := tn.guest.writeFrame(c.frame); err != nil {
					t.Fatalf("%s: write: %v", c.name, err)
				}
				if c.dropped {
					want++
				}
			}
			// Frames are checked in order: once this is answered, every
			// frame before it has been.
			tn.lookup(t, "after.hostile.test")
			if got := tn.Stats().RxDropped.Load() - before; got != want {
				t.Errorf("RxDropped went up by %d, want %d", got, want)
			}
			if !tn.serving() {
				t.Errorf("Serve ended: %v", tn.link.err)
			}
		})
	}
}

// TestRandomFrames sends seeded random frames, a third of them behind a
// header the link lets through, then checks the network still answers.
func TestRandomFrames(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			tn := newTestNet(t, netOptions{framing: f})
			r := rand.New(rand.NewPCG(1, uint64(f)))
			for i := range 2000 {
				frame := randomBytes(r.IntN(1600), uint64(i))
				if i%3 == 0 && len(frame) >= 34 {
					types := []tcpip.NetworkProtocolNumber{header.IPv4ProtocolNumber, header.ARPProtocolNumber}
					copy(frame, fromGuest(types[i%2], nil))
					if i%2 == 0 {
						frame[14] = 0x45 // an IPv4 header, for the parser to go further
					}
				}
				if err := tn.guest.writeFrame(frame); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			tn.lookup(t, "after.random.test")
			if !tn.serving() {
				t.Errorf("Serve ended: %v", tn.link.err)
			}
		})
	}
}

// FuzzFrames feeds Serve any byte stream (stream framing) or any run of
// datagrams (datagram framing, cut where the input's 16-bit lengths
// say): it never panics and Serve returns.
func FuzzFrames(f *testing.F) {
	frames := [][]byte{
		dnsFrame(f, "seed.test."),
		ethFrame(broadcastMAC, testGuestMAC, header.ARPProtocolNumber, arpPacket(header.ARPRequest, testGuestMAC, GuestIP, GatewayIP)),
		fromGuest(header.IPv4ProtocolNumber, tcpSYN(GuestIP, netip.MustParseAddr("198.18.0.1"), 40000, 443)),
		fromGuest(header.IPv4ProtocolNumber, tcpSYN(GuestIP, netip.MustParseAddr("10.0.2.2"), 40000, 80)),
		fromGuest(header.IPv4ProtocolNumber, udpPacket(GuestIP, netip.MustParseAddr("198.18.0.1"), 40000, 443, []byte("quic"))),
	}
	for _, fr := range frames {
		f.Add(binary.BigEndian.AppendUint32(nil, uint32(len(fr)))[:4:4], false)
		f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(fr))), fr...), false)
		f.Add(append(binary.BigEndian.AppendUint16(nil, uint16(len(fr))), fr...), true)
	}
	f.Add([]byte{0x80, 0, 0, 0}, false)
	f.Add([]byte{}, true)
	// Everything is allowed, so that what the fuzzer finds reaches the
	// forwarders, but nothing leaves the machine.
	allow := func(Dest) Verdict { return Verdict{Allow: true} }
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
	}
	dial := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no dialing in a fuzz test")
	}
	f.Fuzz(func(t *testing.T, data []byte, datagram bool) {
		n, err := New(Config{Decide: allow, Resolve: resolve, Dial: dial, GuestMAC: testGuestMAC})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		framing := Stream
		if datagram {
			framing = Datagram
		}
		host, guest := socketPair(t, framing)
		defer guest.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		served := make(chan error, 1)
		go func() { served <- n.Serve(ctx, host, framing) }()

		if !datagram {
			guest.Write(data)
			// Serve reads to the end of the stream, delivering as it
			// goes, and returns.
			guest.(*net.UnixConn).CloseWrite()
			recv(t, served, "Serve returning at the stream's end")
			return
		}
		sent := uint64(0)
		for rest := data; len(rest) > 0; sent++ {
			k := len(rest)
			if k >= 2 {
				k = min(int(binary.BigEndian.Uint16(rest)), len(rest)-2)
				rest = rest[2:]
			}
			if _, err := guest.Write(rest[:k]); err != nil {
				t.Fatalf("write a datagram of %d bytes: %v", k, err)
			}
			rest = rest[k:]
		}
		// A datagram link never sees its peer close: wait until each
		// datagram has been taken or dropped, then end it.
		st := n.Stats()
		deadline := time.Now().Add(wait)
		for st.RxFrames.Load()+st.RxDropped.Load() < sent {
			if time.Now().After(deadline) {
				t.Fatalf("Serve took %d of %d datagrams", st.RxFrames.Load()+st.RxDropped.Load(), sent)
			}
			runtime.Gosched()
		}
		cancel()
		if err := recv(t, served, "Serve returning when cancelled"); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
