package netstack

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// This file is the test's guest: a second gVisor stack standing in for
// the VM's kernel, its NIC wired to the Network under test through a real
// socket pair in either framing, as a hypervisor would wire it.

// wait bounds every wait in these tests; far past anything that works.
const wait = 20 * time.Second

var (
	testGuestMAC      = net.HardwareAddr{0x5a, 0x94, 0xef, 0x00, 0x00, 0x02}
	testGatewayMAC, _ = net.ParseMAC(gatewayMAC)
)

// socketPair is a unix socket pair of the framing's type, with the
// buffers sandbox.NICPair asks for: a is the network's end, b the guest's.
func socketPair(t testing.TB, f Framing) (a, b net.Conn) {
	t.Helper()
	typ := syscall.SOCK_STREAM
	if f == Datagram {
		typ = syscall.SOCK_DGRAM
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, typ, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<20)
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<20)
		f := os.NewFile(uintptr(fd), "nic")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatalf("socket: %v", err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// testGuest is a userspace "VM": a gVisor stack at GuestIP whose NIC
// reads and writes frames on its end of the socket pair.
type testGuest struct {
	t       testing.TB
	stack   *stack.Stack
	nic     *channel.Endpoint
	conn    net.Conn
	framing Framing

	wmu    sync.Mutex // one frame written at a time
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func newTestGuest(t testing.TB, conn net.Conn, f Framing, mtu int) *testGuest {
	t.Helper()
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	nic := channel.New(4096, uint32(mtu), tcpip.LinkAddress(testGuestMAC))
	if err := s.CreateNIC(1, ethernet.New(nic)); err != nil {
		t.Fatalf("guest NIC: %s", err)
	}
	if err := s.AddProtocolAddress(1, tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpAddr(GuestIP), PrefixLen: Subnet.Bits()},
	}, stack.AddressProperties{}); err != nil {
		t.Fatalf("guest address: %s", err)
	}
	subnet, err := tcpip.NewSubnet(tcpAddr(Subnet.Masked().Addr()), tcpip.MaskFromBytes(net.CIDRMask(Subnet.Bits(), 32)))
	if err != nil {
		t.Fatal(err)
	}
	s.SetRouteTable([]tcpip.Route{
		{Destination: subnet, NIC: 1},
		{Destination: header.IPv4EmptySubnet, Gateway: tcpAddr(GatewayIP), NIC: 1},
	})
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4 << 10, Default: 1 << 20, Max: 8 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv)
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4 << 10, Default: 1 << 20, Max: 8 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd)

	ctx, cancel := context.WithCancel(context.Background())
	g := &testGuest{t: t, stack: s, nic: nic, conn: conn, framing: f, cancel: cancel}
	g.wg.Go(func() {
		for {
			pkt := nic.ReadContext(ctx)
			if pkt == nil {
				return
			}
			frame := pkt.ToView().AsSlice()
			pkt.DecRef()
			// The network may have gone: a lost frame is what a real
			// NIC would lose too.
			g.writeFrame(frame)
		}
	})
	g.wg.Go(func() {
		g.readFrames(func(frame []byte) {
			if len(frame) < header.EthernetMinimumSize {
				t.Errorf("the network sent a frame of %d bytes", len(frame))
				return
			}
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
			nic.InjectInbound(header.Ethernet(frame).Type(), pkt)
			pkt.DecRef()
		})
	})
	t.Cleanup(g.close)
	return g
}

func tcpAddr(a netip.Addr) tcpip.Address { return tcpip.AddrFrom4(a.As4()) }

// writeFrame sends one frame in the link's framing.
func (g *testGuest) writeFrame(frame []byte) error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if g.framing == Datagram {
		_, err := g.conn.Write(frame)
		return err
	}
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(frame)), uint32(len(frame)))
	_, err := g.conn.Write(append(msg, frame...))
	return err
}

// writeRaw writes bytes as they are, framing and all (stream only).
func (g *testGuest) writeRaw(b []byte) error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	_, err := g.conn.Write(b)
	return err
}

// readFrames hands every frame the network sends to deliver until the
// socket ends.
func (g *testGuest) readFrames(deliver func([]byte)) {
	buf := make([]byte, 1<<17)
	if g.framing == Datagram {
		for {
			n, err := g.conn.Read(buf)
			if err != nil {
				return
			}
			deliver(buf[:n])
		}
	}
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(g.conn, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > uint32(len(buf)) {
			g.t.Errorf("the network sent a frame of %d bytes", n)
			return
		}
		if _, err := io.ReadFull(g.conn, buf[:n]); err != nil {
			return
		}
		deliver(buf[:n])
	}
}

// close stops the guest: its link, then its stack.
func (g *testGuest) close() {
	g.once.Do(func() {
		g.cancel()
		g.conn.Close()
		g.wg.Wait()
		g.stack.Close()
		g.stack.Wait()
		g.nic.Close()
	})
}

func (g *testGuest) dialTCP(ctx context.Context, a netip.Addr, port uint16) (*gonet.TCPConn, error) {
	return gonet.DialContextTCP(ctx, g.stack, tcpip.FullAddress{NIC: 1, Addr: tcpAddr(a), Port: port}, ipv4.ProtocolNumber)
}

func (g *testGuest) dialUDP(a netip.Addr, port uint16) *gonet.UDPConn {
	g.t.Helper()
	c, err := gonet.DialUDP(g.stack, nil, &tcpip.FullAddress{NIC: 1, Addr: tcpAddr(a), Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		g.t.Fatalf("guest UDP socket: %v", err)
	}
	g.t.Cleanup(func() { c.Close() })
	return c
}

// isRefused says a gonet dial failed because the peer reset the
// connection. gonet carries gVisor's error only as text.
func isRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection was refused")
}
