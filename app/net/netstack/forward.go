package netstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"

	"sandbar/app/net/hostproxy"
)

// destFor says where a packet to addr:port is going, as the policy sees
// it: an address Sandbar's DNS handed out stands for its name. It returns
// a refusal for destinations that are never forwarded: the session's own
// subnet (the gateway's services have listeners; anything else there is
// not Sandbar's), addresses of NamePrefix the DNS did not hand out, and
// addresses that are no place to connect to (see dialable).
func (n *Network) destFor(addr netip.Addr, port uint16, proto Proto) (Dest, *Verdict) {
	d := Dest{Addr: addr, Port: port, Proto: proto}
	switch {
	case Subnet.Contains(addr):
		return d, &Verdict{Reason: fmt.Sprintf("nothing of Sandbar's serves %s inside the session's network", net.JoinHostPort(addr.String(), strconv.Itoa(int(port))))}
	case NamePrefix.Contains(addr):
		name, ok := n.names.name(addr)
		if !ok {
			return d, &Verdict{Reason: addr.String() + " was not handed out by Sandbar's DNS: connect by name"}
		}
		d.Name, d.Addr = name, netip.Addr{}
	case !dialable(addr):
		return d, &Verdict{Reason: addr.String() + " is not an address to connect to"}
	case n.own(addr):
		return d, &Verdict{Reason: ownReason(addr)}
	}
	return d, nil
}

// ownReason says why one of the host's own addresses is refused.
func ownReason(a netip.Addr) string {
	return a.String() + " is one of this machine's own addresses, which reach its services on every interface: " +
		"to let a session reach a service here, map a name to 127.0.0.1 (host NAME 127.0.0.1) and allow that name and port in Sandbar's or the project's settings"
}

// ownTTL is how long the list of the host's own addresses is kept before
// it is read again.
const ownTTL = time.Second

// own says a is one of the host's own addresses other than loopback: a
// connection to it reaches the host's services that listen on every
// interface (0.0.0.0), past any firewall in front of the machine, and a
// public address of the host is no public host. Loopback is the policy's
// to refuse or allow (a host line may map a name to it).
func (n *Network) own(a netip.Addr) bool {
	if a.IsLoopback() {
		return false
	}
	n.ownMu.Lock()
	defer n.ownMu.Unlock()
	if now := time.Now(); n.ownAt.IsZero() || now.Sub(n.ownAt) > ownTTL {
		addrs, err := n.cfg.LocalAddrs()
		if err != nil {
			// Not knowing them is no reason to let the guest reach them:
			// keep what was read last.
			n.log.Warn("cannot list this machine's addresses", "err", err)
		} else {
			n.ownAddrs, n.ownAt = addrs, now
		}
	}
	for _, o := range n.ownAddrs {
		if o.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// interfaceAddrs lists the addresses of the host's network interfaces.
func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// thisNetwork is 0.0.0.0/8, "this host on this network" (RFC 1122).
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// dialable says the network may connect to a on the host: an IPv4
// unicast address of somewhere else. Not 0.0.0.0/8, which the host's
// kernel takes for the host itself (a way round a policy that refuses
// loopback addresses, reached by a name that resolves to 0.0.0.0, as
// filtering resolvers answer, or by a raw datagram), nor multicast or
// the broadcast address. Loopback itself is the policy's to refuse or
// allow (a rule may let a name reach a server on the host).
func dialable(a netip.Addr) bool {
	return a.Is4() && !thisNetwork.Contains(a) && !a.IsMulticast() && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// approve resolves a named Dest on the host and asks the policy again for
// each address; it returns the addresses the policy allows, with the
// verdict that decided, or when none is allowed the first refusal and the
// address it refused, so the attempt says where the name led.
func (n *Network) approve(ctx context.Context, d Dest, v Verdict) ([]netip.Addr, Verdict, error) {
	if d.Name == "" {
		return []netip.Addr{d.Addr}, v, nil
	}
	found, err := n.cfg.Resolve(ctx, d.Name)
	if err != nil {
		return nil, v, fmt.Errorf("%s does not resolve: %w", d.Name, err)
	}
	var ok []netip.Addr
	var refusal *Verdict
	var refused, own netip.Addr
	for _, a := range found {
		a = a.Unmap()
		if !dialable(a) {
			continue
		}
		if n.own(a) {
			own = a
			continue
		}
		w := n.cfg.Decide(Dest{Name: d.Name, Addr: a, Port: d.Port, Proto: d.Proto})
		if w.Allow {
			if len(ok) == 0 {
				v = w
			}
			ok = append(ok, a)
		} else if refusal == nil {
			refusal, refused = &w, a
		}
	}
	switch {
	case len(ok) > 0:
		return ok, v, nil
	case refusal != nil:
		return []netip.Addr{refused}, *refusal, nil
	case own.IsValid():
		return []netip.Addr{own}, Verdict{Reason: d.Name + " resolves to " + ownReason(own)}, nil
	}
	return nil, v, fmt.Errorf("%s has no address to connect to (IPv4, unicast, not 0.0.0.0)", d.Name)
}

// dialAny connects to the first of addrs (which name resolved to, if
// the guest used a name) that answers: TCP through the host's proxy
// where one applies. A proxy's refusal ends it: the proxy would answer
// the next address the same.
func (n *Network) dialAny(ctx context.Context, network, name string, addrs []netip.Addr, port uint16) (net.Conn, error) {
	var first error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		var c net.Conn
		var err error
		if network == "tcp" && n.cfg.Proxy.Set() {
			c, err = n.cfg.Proxy.DialTCP(ctx, n.cfg.Dial, name, ap)
		} else {
			c, err = n.cfg.Dial(ctx, network, ap.String())
		}
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		var refused *hostproxy.RefusedError
		if ctx.Err() != nil || errors.As(err, &refused) {
			break
		}
	}
	return nil, first
}

// proxyRefusal is the verdict for a connection the rules allowed and the
// host's proxy refused: it is listed among the denied ones, with the
// proxy's answer.
func proxyRefusal(err error) (Verdict, bool) {
	var refused *hostproxy.RefusedError
	if !errors.As(err, &refused) {
		return Verdict{}, false
	}
	return Verdict{Reason: refused.Error(), Proxy: true}, true
}

// take reserves a forwarded connection; false when MaxConns are in use.
func (n *Network) take() bool {
	select {
	case n.conns <- struct{}{}:
		return true
	default:
		return false
	}
}

func (n *Network) give() { <-n.conns }

func (n *Network) report(d Dest, v Verdict, err error, intercepted bool) {
	n.cfg.OnAttempt(Attempt{Time: time.Now(), Dest: d, Verdict: v, Err: err, Intercepted: intercepted})
}

func (n *Network) tooMany() Verdict {
	return Verdict{Reason: fmt.Sprintf("the session has %d connections open, the most Sandbar forwards at once", cap(n.conns))}
}

// forwardTCP handles a SYN the guest sent anywhere but the gateway's
// listeners: refused at once with a reset, or connected on the host and
// only then accepted, so a refusal the host gets reaches the guest as
// one.
func (n *Network) forwardTCP(r *tcp.ForwarderRequest) {
	id := r.ID()
	d, refused := n.destFor(netip.AddrFrom4(id.LocalAddress.As4()), id.LocalPort, TCP)
	if refused != nil {
		r.Complete(true)
		n.report(d, *refused, nil, false)
		return
	}
	v := n.cfg.Decide(d)
	if !v.Allow {
		r.Complete(true)
		n.report(d, v, nil, false)
		return
	}
	if !n.take() {
		r.Complete(true)
		n.report(d, n.tooMany(), nil, false)
		return
	}
	var release sync.Once
	done := func() { release.Do(n.give) }
	defer done()

	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.DialTimeout)
	addrs, v, err := n.approve(ctx, d, v)
	if err != nil || !v.Allow {
		if d.Name != "" && len(addrs) > 0 {
			d.Addr = addrs[0]
		}
		cancel()
		r.Complete(true)
		n.report(d, v, err, false)
		return
	}
	if d.Name != "" {
		d.Addr = addrs[0]
	}
	intercept := n.cfg.Intercept(d, v)
	if intercept == nil && v.ReadOnly {
		// Read-only means each request is read; a connection nobody reads
		// could carry a push.
		cancel()
		r.Complete(true)
		n.report(d, Verdict{Reason: v.Reason + ", for reads only, and Sandbar cannot read this connection's requests (its CA is not at hand): allow the host with write to reach it", Rule: v.Rule}, nil, false)
		return
	}
	var out net.Conn
	if intercept == nil {
		out, err = n.dialAny(ctx, "tcp", d.Name, addrs, d.Port)
		if err != nil {
			cancel()
			r.Complete(true)
			if pv, ok := proxyRefusal(err); ok {
				v, err = pv, nil
			}
			n.report(d, v, err, false)
			return
		}
	}
	cancel()
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	r.Complete(false)
	if terr != nil {
		// The guest gave up (or reset) while the host side connected.
		if out != nil {
			out.Close()
		}
		n.report(d, v, fmt.Errorf("the guest closed the connection: %s", terr), intercept != nil)
		return
	}
	guest := gonet.NewTCPConn(&wq, ep)
	n.report(d, v, nil, intercept != nil)
	if intercept != nil {
		stop := context.AfterFunc(n.ctx, func() { guest.Close() })
		intercept(n.ctx, guest, func(ctx context.Context) (net.Conn, error) {
			return n.dialAny(ctx, "tcp", d.Name, addrs, d.Port)
		})
		stop()
		guest.Close()
		return
	}
	n.splice(guest, out)
}

// copyBufs are the buffers splice copies through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// splice copies both ways between two connections until both directions
// have ended (a half-close is passed on) or the network closes.
func (n *Network) splice(a, b net.Conn) {
	stop := context.AfterFunc(n.ctx, func() { a.Close(); b.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { pipe(a, b) })
	pipe(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// pipe copies src to dst, then closes dst's writing side.
func pipe(dst, src net.Conn) {
	buf := copyBufs.Get().(*[]byte)
	_, err := io.CopyBuffer(dst, src, *buf)
	copyBufs.Put(buf)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		cw.CloseWrite()
		return
	}
	// An error either way ends both directions.
	dst.Close()
	src.Close()
}

// forwardUDP handles a datagram of a flow the stack has no endpoint for
// (the DNS and DHCP services have theirs). It runs on the stack's packet
// path, so it only decides and creates the flow's endpoint; resolving and
// relaying run on their own goroutine.
func (n *Network) forwardUDP(r *udp.ForwarderRequest) {
	id := r.ID()
	addr := netip.AddrFrom4(id.LocalAddress.As4())
	if addr == netip.AddrFrom4([4]byte(header.IPv4Broadcast.As4())) || addr.IsMulticast() {
		return
	}
	d, refused := n.destFor(addr, id.LocalPort, UDP)
	if refused != nil {
		n.report(d, *refused, nil, false)
		return
	}
	v := n.cfg.Decide(d)
	if !v.Allow {
		n.report(d, v, nil, false)
		return
	}
	if !n.take() {
		n.report(d, n.tooMany(), nil, false)
		return
	}
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		n.give()
		return
	}
	guest := gonet.NewUDPConn(&wq, ep)
	n.wg.Go(func() {
		defer n.give()
		defer guest.Close()
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.DialTimeout)
		addrs, v, err := n.approve(ctx, d, v)
		var out net.Conn
		if err == nil && v.Allow {
			out, err = n.dialAny(ctx, "udp", d.Name, addrs, d.Port)
		}
		if d.Name != "" && len(addrs) > 0 {
			d.Addr = addrs[0]
		}
		cancel()
		n.report(d, v, err, false)
		if err != nil || !v.Allow {
			return
		}
		defer out.Close()
		relayUDP(n.ctx, guest, out, n.cfg.UDPIdle)
	})
}

// relayUDP copies datagrams both ways until neither side has sent
// anything for idle or ctx ends.
func relayUDP(ctx context.Context, guest, out net.Conn, idle time.Duration) {
	stop := context.AfterFunc(ctx, func() { guest.Close(); out.Close() })
	defer stop()
	// When either side last sent: a side that is quiet while the other
	// talks (a stream one way) keeps the flow open.
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	quiet := func() time.Time { return time.Unix(0, last.Load()).Add(idle) }
	var wg sync.WaitGroup
	move := func(dst, src net.Conn) {
		buf := make([]byte, 65535)
		for {
			src.SetReadDeadline(quiet())
			k, err := src.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					if time.Now().Before(quiet()) {
						continue // the other side sent meanwhile
					}
					// Idle both ways: end both directions.
					guest.Close()
					out.Close()
				}
				return
			}
			last.Store(time.Now().UnixNano())
			if _, err := dst.Write(buf[:k]); err != nil {
				return
			}
		}
	}
	wg.Go(func() { move(out, guest) })
	move(guest, out)
	guest.Close()
	out.Close()
	wg.Wait()
}
