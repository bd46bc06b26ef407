package netstack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"sandbar/app/net/hostproxy"
)

// Proto names a transport protocol.
type Proto string

// The protocols the network forwards.
const (
	TCP Proto = "tcp"
	UDP Proto = "udp"
)

// Dest is where the guest tried to go: the name it resolved through
// Sandbar's DNS (if it did), the address (the one the name resolved to on
// the host, or the literal one the guest used), the port and protocol.
type Dest struct {
	Name  string
	Addr  netip.Addr
	Port  uint16
	Proto Proto
}

// String is "name:port (proto)", or the address when there is no name.
func (d Dest) String() string {
	host := d.Name
	if host == "" {
		host = d.Addr.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(int(d.Port))) + " (" + string(d.Proto) + ")"
}

// Verdict is a policy's answer for a Dest.
type Verdict struct {
	Allow bool
	// Reason says why, in words a person reads in the session's log.
	Reason string
	// Rule is the rule that decided, as written; "" when none did.
	Rule string
	// Proxy says the rules allowed the connection and the host's proxy
	// refused it (Reason is the proxy's answer): no rule of Sandbar's
	// would change that.
	Proxy bool
	// ReadOnly says an allowed TCP connection may carry only HTTP reads:
	// Intercept must take it (the broker reads each request).
	ReadOnly bool
}

// Attempt is one connection the guest tried to open.
type Attempt struct {
	Time    time.Time
	Dest    Dest
	Verdict Verdict
	// Err is why an allowed connection still failed (the name did not
	// resolve, the host refused, ...); nil when it was made.
	Err error
	// Intercepted says the connection went to Config.Intercept.
	Intercepted bool
}

// Interceptor takes over a guest connection the network accepted instead
// of dialing it: dial reaches the approved destination.
type Interceptor func(ctx context.Context, guest net.Conn, dial func(ctx context.Context) (net.Conn, error))

// Config says how a Network decides, resolves and dials.
type Config struct {
	// Decide is the egress policy. It is called for every connection,
	// first with the name alone (before anything is resolved), then with
	// the address the name resolved to; both must allow. It must be
	// fast and safe for concurrent use: a change to what it returns takes
	// effect with the next connection.
	Decide func(Dest) Verdict
	// OnAttempt hears every connection attempt, allowed or not. It must
	// not block.
	OnAttempt func(Attempt)
	// Resolve looks a name up on the host; default the system resolver
	// (IPv4 addresses).
	Resolve func(ctx context.Context, name string) ([]netip.Addr, error)
	// LocalAddrs lists the host's own addresses, which the network never
	// dials (loopback aside, which is the policy's); default the
	// addresses of its network interfaces, read at most once a second.
	LocalAddrs func() ([]netip.Addr, error)
	// Dial opens a connection on the host; default a net.Dialer.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Proxy is the host's proxy: TCP connections the policy allowed go
	// through it (by the address the policy approved) unless its NO_PROXY
	// exempts them, opened with Dial. Nil, or nothing set, dials
	// directly. UDP always goes directly: HTTP CONNECT carries TCP only.
	Proxy *hostproxy.Config
	// Intercept, when it returns non-nil for an allowed TCP Dest, gets
	// the connection instead of a dial (HTTPS credential brokering, and
	// the read-only hosts' requests); v is the verdict that allowed it.
	Intercept func(d Dest, v Verdict) Interceptor
	// GuestMAC is the guest NIC's Ethernet address; frames from any other
	// are dropped.
	GuestMAC net.HardwareAddr
	// MTU of the link; default DefaultMTU.
	MTU int
	// MaxConns bounds the connections forwarded at once (TCP and UDP
	// flows together); default 256. Past it new ones are refused, so a
	// guest cannot use up the host's file descriptors. It bounds the
	// connections to the gateway's services (Listen) as many again.
	MaxConns int
	// DialTimeout bounds resolving and connecting; default 15 s.
	DialTimeout time.Duration
	// UDPIdle ends a UDP flow that has carried nothing either way for
	// this long; default 60 s.
	UDPIdle time.Duration
	// Origin names the origin published ports open on in a browser:
	// http://<Origin>.localhost:PORT/ (see OriginLabel). Default
	// "sandbar".
	Origin string
	Logger *slog.Logger
}

// Stats counts what crossed the link.
type Stats struct {
	RxFrames, RxBytes, RxDropped atomic.Uint64 // from the guest
	TxFrames, TxBytes, TxDropped atomic.Uint64 // to the guest
}

// GuestConfig is how the guest configures its NIC.
type GuestConfig struct {
	Addr    netip.Prefix
	Gateway netip.Addr
	DNS     netip.Addr
	MTU     int
	MAC     net.HardwareAddr
}

// KernelArg is the value of sandbar.net for the guest's command line.
func (g GuestConfig) KernelArg() string {
	return fmt.Sprintf("static:%s,%s,%s,mtu=%d", g.Addr, g.Gateway, g.DNS, g.MTU)
}
