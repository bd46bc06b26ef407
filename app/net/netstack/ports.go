package netstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Port is a guest port published on the host's loopback.
type Port struct {
	Guest uint16
	// Host is the port on 127.0.0.1 that reaches it.
	Host uint16
	// URL is where a browser opens it: http://<session>.localhost:HOST/,
	// an origin of the session's own. Browsers keep cookies by host name,
	// not by port (RFC 6265 §8.5), so at http://localhost:HOST/ the
	// guest's server would be sent the cookies of every app the person
	// runs on localhost; a name under .localhost (RFC 6761) still leads
	// to the loopback, where the listener is.
	URL string
}

// String is "127.0.0.1:HOST → GUEST".
func (p Port) String() string {
	return fmt.Sprintf("127.0.0.1:%d → %d", p.Host, p.Guest)
}

// OriginLabel makes a session's id (or any name) into the DNS label its
// published ports open under, <label>.localhost: lower case letters,
// digits and inner hyphens, at most 63 of them; "sandbar" when nothing is
// left.
func OriginLabel(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	l := b.String()
	if len(l) > 63 {
		l = l[:63]
	}
	if l = strings.Trim(l, "-"); l == "" {
		return "sandbar"
	}
	return l
}

// PortURL is where a browser opens a port published on host for the
// origin label (see Port.URL).
func PortURL(label string, host uint16) string {
	return fmt.Sprintf("http://%s.localhost:%d/", OriginLabel(label), host)
}

// ErrPortInUse says the host port asked for is taken.
var ErrPortInUse = errors.New("the host port is in use")

// published is one listener on the host's loopback.
type published struct {
	port Port
	ln   net.Listener
	once sync.Once
	wg   sync.WaitGroup
}

func (p *published) close() {
	p.once.Do(func() { p.ln.Close() })
	p.wg.Wait()
}

// Publish makes the guest's TCP port reachable at 127.0.0.1:host on the
// host; host 0 takes any free port. A port already published is returned
// as it is when host is 0 or its host port; asked for another host port,
// it moves there (its old listener closes), or, that port being taken,
// stays where it is and the error says so. Only the host's loopback is
// ever listened on.
func (n *Network) Publish(guest, host uint16) (Port, error) {
	if guest == 0 {
		return Port{}, errors.New("publish: guest port 0 is not a port")
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return Port{}, net.ErrClosed
	}
	var moved *published
	if p, ok := n.published[guest]; ok {
		if host == 0 || host == p.port.Host {
			n.mu.Unlock()
			return p.port, nil
		}
		moved = p
	}
	n.mu.Unlock()

	ln, err := listenLoopback(host)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) && moved != nil {
			return Port{}, fmt.Errorf("127.0.0.1:%d is taken by another program on this machine, so guest port %d stays published on 127.0.0.1:%d: pick another host port: %w", host, guest, moved.port.Host, ErrPortInUse)
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return Port{}, fmt.Errorf("127.0.0.1:%d is taken by another program on this machine: pick another host port: %w", host, ErrPortInUse)
		}
		return Port{}, fmt.Errorf("publish %d on 127.0.0.1:%d: %w", guest, host, err)
	}
	got := uint16(ln.Addr().(*net.TCPAddr).Port)
	p := &published{port: Port{Guest: guest, Host: got, URL: PortURL(n.cfg.Origin, got)}, ln: ln}

	n.mu.Lock()
	if old, ok := n.published[guest]; (ok && old != moved) || n.closed {
		n.mu.Unlock()
		ln.Close()
		if ok {
			return old.port, nil
		}
		return Port{}, net.ErrClosed
	}
	n.published[guest] = p
	n.mu.Unlock()
	if moved != nil {
		moved.close()
	}
	p.wg.Go(func() { n.servePublished(p) })
	return p.port, nil
}

func listenLoopback(port uint16) (net.Listener, error) {
	return net.Listen("tcp4", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port).String())
}

// Unpublish closes the host's listener for a guest port and the
// connections through it; false if it was not published.
func (n *Network) Unpublish(guest uint16) bool {
	n.mu.Lock()
	p, ok := n.published[guest]
	delete(n.published, guest)
	n.mu.Unlock()
	if ok {
		p.close()
	}
	return ok
}

// Published lists the published ports by guest port.
func (n *Network) Published() []Port {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Port, 0, len(n.published))
	for _, p := range n.published {
		out = append(out, p.port)
	}
	slices.SortFunc(out, func(a, b Port) int { return int(a.Guest) - int(b.Guest) })
	return out
}

func (n *Network) servePublished(p *published) {
	var conns sync.WaitGroup
	defer conns.Wait()
	ctx, cancel := context.WithCancel(n.ctx)
	defer cancel()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !n.take() {
			c.Close()
			continue
		}
		conns.Go(func() {
			defer n.give()
			g, err := n.DialGuest(ctx, p.port.Guest)
			if err != nil {
				c.Close()
				return
			}
			stop := context.AfterFunc(ctx, func() { c.Close(); g.Close() })
			defer stop()
			n.splice(c, g)
		})
	}
}
