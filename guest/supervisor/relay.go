package supervisor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Relays: a dev server that listens on 127.0.0.1:5173 (Vite's default)
// cannot be reached through the NIC. For each such port the supervisor
// listens on the guest's own address, the same port, and copies each
// connection to the loopback listener and back, half-closes included. It
// binds the guest's address, not 0.0.0.0, which would take the port from
// the program's loopback listener.
//
// While a relay holds <guest>:port, a program cannot bind 0.0.0.0:port
// itself (EADDRINUSE); the relay ends at the next poll after the
// program's loopback listener closes.
const (
	// maxRelays bounds the ports relayed at once; the lowest win.
	maxRelays = 64
	// maxRelayConns bounds the connections relayed at once, over all
	// ports; past it a new connection is closed at once.
	maxRelayConns = 256
	// relayDialTimeout bounds the connection to the loopback listener.
	relayDialTimeout = 5 * time.Second
)

// relays is the set of running relays, kept in step with the listening
// ports by sync. One goroutine, the ports watcher, calls sync, owns and
// close; active and failed are its alone.
type relays struct {
	bind  netip.Addr
	log   *slog.Logger
	ctx   context.Context // cancelled by close: every connection ends
	stop  context.CancelFunc
	conns chan struct{} // a token per relayed connection
	// lastFull is when a connection was last refused (Unix ns), so the
	// log says so once in a while, not once a connection.
	lastFull atomic.Int64

	active map[uint16]*relay
	failed map[uint16]bool // could not listen: not retried while the port stays
	wg     sync.WaitGroup  // accept loops and connections
}

// relay is one relayed port.
type relay struct {
	port   uint16
	ln     net.Listener
	mu     sync.Mutex // the target changes under the accept loop
	target netip.AddrPort
}

func (rl *relay) to() netip.AddrPort {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.target
}

func newRelays(ctx context.Context, bind netip.Addr, log *slog.Logger) *relays {
	ctx, stop := context.WithCancel(ctx)
	return &relays{
		bind: bind, log: log, ctx: ctx, stop: stop,
		conns:  make(chan struct{}, maxRelayConns),
		active: make(map[uint16]*relay),
		failed: make(map[uint16]bool),
	}
}

// owns reports whether addr:port is one of the relays' own listeners.
func (r *relays) owns(addr netip.Addr, port uint16) bool {
	return addr == r.bind && r.active[port] != nil
}

// sync relays exactly the ports of want (port → loopback address), up to
// maxRelays, and returns the ports relayed now. A relay whose port is no
// longer wanted stops listening; its connections go on until they end.
func (r *relays) sync(want map[uint16]netip.Addr) map[uint16]bool {
	for port, rl := range r.active {
		if _, ok := want[port]; !ok {
			rl.ln.Close()
			delete(r.active, port)
			r.log.Info("port relay stopped", "port", port)
		}
	}
	for port := range r.failed {
		if _, ok := want[port]; !ok {
			delete(r.failed, port)
		}
	}
	ports := make([]uint16, 0, len(want))
	for port := range want {
		ports = append(ports, port)
	}
	slices.Sort(ports)
	for _, port := range ports {
		target := netip.AddrPortFrom(want[port], port)
		if rl := r.active[port]; rl != nil {
			rl.mu.Lock()
			rl.target = target
			rl.mu.Unlock()
			continue
		}
		if len(r.active) >= maxRelays || r.failed[port] {
			continue
		}
		rl, err := r.listen(port, target)
		if err != nil {
			r.failed[port] = true
			r.log.Warn("cannot relay a loopback port", "port", port, "err", err)
			continue
		}
		r.active[port] = rl
		r.log.Info("port relay started", "listen", rl.ln.Addr(), "to", target)
	}
	relayed := make(map[uint16]bool, len(r.active))
	for port := range r.active {
		relayed[port] = true
	}
	return relayed
}

func (r *relays) listen(port uint16, target netip.AddrPort) (*relay, error) {
	network := "tcp4"
	if r.bind.Is6() {
		network = "tcp6"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(r.ctx, network, netip.AddrPortFrom(r.bind, port).String())
	if err != nil {
		return nil, err
	}
	rl := &relay{port: port, ln: ln, target: target}
	r.wg.Go(func() { r.accept(rl) })
	return rl, nil
}

// accept serves one relay's listener until it is closed.
func (r *relays) accept(rl *relay) {
	for {
		c, err := rl.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of files, say: wait a little rather than spin.
			r.log.Warn("relay accept", "port", rl.port, "err", err)
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case r.conns <- struct{}{}:
		default:
			c.Close()
			if now := time.Now().UnixNano(); now-r.lastFull.Swap(now) > int64(10*time.Second) {
				r.log.Warn("too many relayed connections: new ones are closed at once", "port", rl.port, "max", cap(r.conns))
			}
			continue
		}
		r.wg.Go(func() {
			defer func() { <-r.conns }()
			r.pipe(c, rl.to())
		})
	}
}

// pipe copies between the accepted connection c and the program's
// loopback listener at target until both directions end.
func (r *relays) pipe(c net.Conn, target netip.AddrPort) {
	defer c.Close()
	d := net.Dialer{Timeout: relayDialTimeout}
	up, err := d.DialContext(r.ctx, "tcp", target.String())
	if err != nil {
		r.log.Debug("relay dial", "to", target, "err", err)
		return
	}
	defer up.Close()
	abort := func() { c.Close(); up.Close() }
	unhook := context.AfterFunc(r.ctx, abort)
	defer unhook()
	var both sync.WaitGroup
	both.Go(func() { copyHalf(up, c, abort) })
	both.Go(func() { copyHalf(c, up, abort) })
	both.Wait()
}

// copyHalf copies src to dst; at src's end it half-closes dst, so the
// other side reads its end too, and on an error it aborts both.
func copyHalf(dst, src net.Conn, abort func()) {
	_, err := io.Copy(dst, src)
	if err != nil {
		abort()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	abort()
}

// close stops every relay and connection and waits for them.
func (r *relays) close() {
	r.stop()
	for port, rl := range r.active {
		rl.ln.Close()
		delete(r.active, port)
	}
	r.wg.Wait()
}
