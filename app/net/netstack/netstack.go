// Package netstack is a session VM's own network: a userspace TCP/IP
// stack (gVisor's netstack, with the link endpoint and DHCP service of
// gvisor-tap-vsock, as Lima and Podman use them) that runs in the Sandbar
// process and is wired to the guest's one virtio-net NIC by a socket pair
// that the hypervisor inherits. It needs no root, opens no host port, and
// nothing outside the session can reach it: each session has a network
// of its own, so sessions never see one another.
//
// The guest sees a gateway that answers DNS for every name with an
// address of its own (NamePrefix), serves DHCP and Sandbar's services
// (Listen), and forwards TCP and UDP to the outside only as the policy
// says, deciding by the name the guest asked for, the port and the
// protocol before anything leaves the machine, and again by the address
// the name resolves to on the host. A refused TCP connection is reset at
// once. Every attempt is reported (Config.OnAttempt). Connections to
// Sandbar's own services and to the session's subnet are never forwarded.
// Allowed TCP goes through the host's proxy when one is set
// (Config.Proxy), to the address the policy approved; a proxy's refusal
// is reported as a denial with its answer.
//
// It is not the policy (Config.Decide is the caller's) and not the
// credential broker (Config.Intercept and Listen are where the caller
// plugs it in); it knows nothing of sessions or settings.
package netstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/containers/gvisor-tap-vsock/pkg/services/dhcp"
	"github.com/containers/gvisor-tap-vsock/pkg/tap"
	"github.com/containers/gvisor-tap-vsock/pkg/types"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// The session's subnet. Every session has the same one: each is a world
// of its own.
var (
	Subnet    = netip.MustParsePrefix("192.168.127.0/24")
	GatewayIP = netip.MustParseAddr("192.168.127.1")
	GuestIP   = netip.MustParseAddr("192.168.127.2")
)

// gatewayMAC is the gateway's Ethernet address (locally administered).
const gatewayMAC = "5a:94:ef:e4:0c:dd"

// DefaultMTU is the link's MTU: large frames cut the per-packet work that
// dominates under emulation; virtio-net carries them.
const DefaultMTU = 65520

// Network is one session's network.
type Network struct {
	cfg   Config
	log   *slog.Logger
	stack *stack.Stack
	ep    *tap.LinkEndpoint
	names *names
	stats Stats
	conns chan struct{} // one token per forwarded connection
	// services holds one token per connection of a gateway service
	// (Listen).
	services chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// serving counts Serve calls still delivering frames to the stack,
	// which Close waits for before it takes the stack apart.
	serving sync.WaitGroup

	mu        sync.Mutex
	io        *frameIO
	closers   []func()
	published map[uint16]*published
	closed    bool

	// The host's own addresses (see own), read at ownAt.
	ownMu    sync.Mutex
	ownAddrs []netip.Addr
	ownAt    time.Time
}

// New builds a network; it carries nothing until Serve.
func New(cfg Config) (*Network, error) {
	if cfg.Decide == nil {
		return nil, errors.New("netstack: Config.Decide is required")
	}
	if len(cfg.GuestMAC) != 6 {
		return nil, errors.New("netstack: Config.GuestMAC must be an Ethernet address")
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < 576 || cfg.MTU > 65535-header.EthernetMinimumSize {
		return nil, fmt.Errorf("netstack: MTU %d is outside 576–%d", cfg.MTU, 65535-header.EthernetMinimumSize)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 15 * time.Second
	}
	if cfg.UDPIdle <= 0 {
		cfg.UDPIdle = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.OnAttempt == nil {
		cfg.OnAttempt = func(Attempt) {}
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, name string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
		}
	}
	if cfg.LocalAddrs == nil {
		cfg.LocalAddrs = interfaceAddrs
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	if cfg.Intercept == nil {
		cfg.Intercept = func(Dest, Verdict) Interceptor { return nil }
	}
	n := &Network{
		cfg: cfg, log: cfg.Logger, names: newNames(0),
		conns: make(chan struct{}, cfg.MaxConns), services: make(chan struct{}, cfg.MaxConns),
		published: map[uint16]*published{},
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.build(); err != nil {
		n.cancel()
		return nil, err
	}
	return n, nil
}

func (n *Network) build() error {
	ep, err := tap.NewLinkEndpoint(false, uint32(n.cfg.MTU), gatewayMAC, GatewayIP.String(), nil)
	if err != nil {
		return fmt.Errorf("netstack: link: %w", err)
	}
	n.ep = ep
	ep.Connect(switchFunc(n.toGuest))
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4},
	})
	n.stack = s
	n.closers = append(n.closers, func() { s.Close(); s.Wait() })
	if err := tcpipErr(s.CreateNIC(1, ep)); err != nil {
		return fmt.Errorf("netstack: NIC: %w", err)
	}
	if err := tcpipErr(s.AddProtocolAddress(1, tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddrFrom4(GatewayIP.As4()).WithPrefix(),
	}, stack.AddressProperties{})); err != nil {
		return fmt.Errorf("netstack: gateway address: %w", err)
	}
	// Promiscuous and spoofing: the stack takes packets for any address
	// and answers as that address, which is how the forwarders see every
	// connection the guest opens, whatever it is addressed to.
	s.SetPromiscuousMode(1, true)
	s.SetSpoofing(1, true)
	subnet, err := tcpip.NewSubnet(tcpip.AddrFrom4(Subnet.Masked().Addr().As4()), tcpip.MaskFromBytes(net.CIDRMask(Subnet.Bits(), 32)))
	if err != nil {
		return fmt.Errorf("netstack: subnet: %w", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: subnet, NIC: 1}})

	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	// Buffers: the link is in-process, so its round trip is well under a
	// millisecond and 1 MiB keeps a large-MTU link busy (a download at
	// 300 MB/s needs a few hundred KiB in flight). They are also what a
	// guest can make the engine hold: a connection it stops reading, or
	// whose far end stops reading, fills both; MaxConns of them at 1 MiB
	// each (plus splice's buffers) bound a session's worst case.
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4 << 10, Default: 256 << 10, Max: 1 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv)
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4 << 10, Default: 256 << 10, Max: 1 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd)
	moderate := tcpip.TCPModerateReceiveBufferOption(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &moderate)

	// The forwarder runs each handler on a goroutine of its own: hold
	// makes the network its owner, so Close waits for it.
	s.SetTransportProtocolHandler(tcp.ProtocolNumber, tcp.NewForwarder(s, 0, 64, func(r *tcp.ForwarderRequest) {
		if !n.hold() {
			r.Complete(true)
			return
		}
		defer n.wg.Done()
		n.forwardTCP(r)
	}).HandlePacket)
	s.SetTransportProtocolHandler(udp.ProtocolNumber, udp.NewForwarder(s, n.forwardUDP).HandlePacket)

	gw := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(GatewayIP.As4()), Port: 53}
	pc, err := gonet.DialUDP(s, &gw, nil, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("netstack: DNS: %w", err)
	}
	n.closers = append(n.closers, func() { pc.Close() })
	n.wg.Go(func() { n.serveDNSPackets(pc) })
	ln, err := gonet.ListenTCP(s, gw, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("netstack: DNS over TCP: %w", err)
	}
	n.closers = append(n.closers, func() { ln.Close() })
	n.wg.Go(func() { n.serveDNSStream(ln) })

	// DHCP, for a guest that asks rather than taking the static address
	// from its command line: the one lease is the guest's address.
	pool := tap.NewIPPool(prefixNet(Subnet))
	pool.Reserve(net.IP(GatewayIP.AsSlice()), gatewayMAC)
	pool.Reserve(net.IP(GuestIP.AsSlice()), n.cfg.GuestMAC.String())
	srv, err := dhcp.New(&types.Configuration{
		MTU: n.cfg.MTU, Subnet: Subnet.String(), GatewayIP: GatewayIP.String(), GatewayMacAddress: gatewayMAC,
	}, s, pool)
	if err != nil {
		return fmt.Errorf("netstack: DHCP: %w", err)
	}
	n.closers = append(n.closers, func() { srv.Underlying.Close() })
	n.wg.Go(func() { srv.Serve() })
	return nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Masked().Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// switchFunc is a tap.NetworkSwitch made of a function.
type switchFunc func(tcpip.NetworkProtocolNumber, *stack.PacketBuffer)

func (f switchFunc) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	f(p, pkt)
}

// toGuest hands a frame the stack sent to the link, if one is attached.
func (n *Network) toGuest(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	n.mu.Lock()
	link := n.io
	n.mu.Unlock()
	if link == nil {
		n.stats.TxDropped.Add(1)
		return
	}
	link.DeliverNetworkPacket(p, pkt)
}

// hold counts a goroutine the network did not start in n.wg, unless the
// network is closing. Close marks the network closed under n.mu before
// it waits, so no hold adds to n.wg once Close may be waiting on it.
func (n *Network) hold() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.wg.Add(1)
	return true
}

// Guest is how the guest's NIC is to be configured.
func (n *Network) Guest() GuestConfig {
	return GuestConfig{
		Addr: netip.PrefixFrom(GuestIP, Subnet.Bits()), Gateway: GatewayIP, DNS: GatewayIP,
		MTU: n.cfg.MTU, MAC: n.cfg.GuestMAC,
	}
}

// Stats is what crossed the link so far.
func (n *Network) Stats() *Stats { return &n.stats }

// Serve carries frames between the hypervisor's end of the link (conn)
// and the stack until conn ends, ctx is done or the network closes. A
// network serves one link at a time; the next VM boot of the session
// may Serve again. A datagram socket never reads its peer's close: such
// a link ends at the next frame sent to a VM that has gone, so a caller
// that knows sooner cancels ctx.
func (n *Network) Serve(ctx context.Context, conn net.Conn, f Framing) error {
	mac, err := net.ParseMAC(gatewayMAC)
	if err != nil {
		return err
	}
	link := newFrameIO(conn, f, n.cfg.MTU, tcpip.LinkAddress(mac), tcpip.LinkAddress(n.cfg.GuestMAC), &n.stats)
	n.mu.Lock()
	switch {
	case n.closed:
		n.mu.Unlock()
		conn.Close()
		return net.ErrClosed
	case n.io != nil:
		n.mu.Unlock()
		conn.Close()
		return errors.New("netstack: a link is already attached")
	}
	n.io = link
	n.serving.Add(1)
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if n.io == link {
			n.io = nil
		}
		n.mu.Unlock()
		n.serving.Done()
	}()

	stop := context.AfterFunc(ctx, link.close)
	defer stop()
	unclose := context.AfterFunc(n.ctx, link.close)
	defer unclose()

	werr := make(chan error, 1)
	go func() {
		err := link.writeLoop()
		if err != nil {
			// A link that cannot send is over: end the reading too. For
			// a datagram socket, which never reads its peer's close,
			// this is how a VM that has gone ends the link.
			link.close()
		}
		werr <- err
	}()
	rerr := link.readLoop(func(frame []byte) {
		pkt := packetFrom(frame)
		n.ep.DeliverNetworkPacket(header.Ethernet(frame).Type(), pkt)
		pkt.DecRef()
	})
	link.close()
	if ctx.Err() != nil || n.ctx.Err() != nil {
		<-werr
		return nil
	}
	if err := <-werr; err != nil && !linkEnded(err) {
		return fmt.Errorf("netstack: sending to the guest: %w", err)
	}
	if linkEnded(rerr) {
		return nil
	}
	return rerr
}

// linkEnded says err is the hypervisor's end going away, the link's
// normal end: EOF, or, with frames it had not read, a reset; a refusal or
// a broken pipe when the network sends to it; or the link closed here.
func linkEnded(err error) bool {
	for _, e := range []error{net.ErrClosed, io.EOF, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Close ends the link, every forwarded connection and published port,
// and the stack.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	link := n.io
	pubs := n.published
	n.published = map[uint16]*published{}
	closers := n.closers
	n.mu.Unlock()
	n.cancel()
	if link != nil {
		link.close()
	}
	// Serve delivers to the stack until its read returns: taking the
	// stack apart under it races with that delivery (the NIC's removal
	// detaches the link endpoint it delivers through).
	n.serving.Wait()
	for _, p := range pubs {
		p.close()
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	n.wg.Wait()
	return nil
}

// tcpipErr turns gVisor's error type into a Go error (nil stays nil).
func tcpipErr(err tcpip.Error) error {
	if err == nil {
		return nil
	}
	return errors.New(err.String())
}
