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
	"syscall"
	"testing"
	"time"
)

// relayBind is the address the tests' relays listen on: another loopback
// address, which Linux routes to lo like 127.0.0.1.
var relayBind = netip.MustParseAddr("127.0.0.2")

func newTestRelays(t *testing.T) *relays {
	t.Helper()
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(relayBind, 0).String())
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", relayBind, err)
	}
	ln.Close()
	r := newRelays(t.Context(), relayBind, slog.New(slog.NewTextHandler(t.Output(), nil)))
	t.Cleanup(r.close)
	return r
}

// server is a loopback listener that runs handle on every connection.
type server struct {
	ln    net.Listener
	wg    sync.WaitGroup
	conns chan net.Conn
}

func newServer(t *testing.T, network, addr string, handle func(net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	s := &server{ln: ln, conns: make(chan net.Conn, 1024)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns <- c
			s.wg.Go(func() { defer c.Close(); handle(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		close(s.conns)
		for c := range s.conns {
			c.Close()
		}
		s.wg.Wait()
	})
	return s
}

func (s *server) addrPort() netip.AddrPort {
	ap := s.ln.Addr().(*net.TCPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// halfCloseEcho reads everything up to the client's half-close, then
// answers with how much it read, and closes.
func halfCloseEcho(c net.Conn) {
	b, err := io.ReadAll(c)
	if err != nil {
		return
	}
	c.Write([]byte("got:" + string(b)))
}

func dialRelay(t *testing.T, port uint16) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(relayBind, port).String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial the relay of %d: %v", port, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*net.TCPConn)
}

// roundTrip sends msg, half-closes, and returns all the answer.
func roundTrip(t *testing.T, c *net.TCPConn, msg string) string {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return string(b)
}

func TestRelayHalfClose(t *testing.T) {
	for _, tt := range []struct{ name, network, addr string }{
		{"ipv4", "tcp4", "127.0.0.1:0"},
		{"ipv6", "tcp6", "[::1]:0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRelays(t)
			srv := newServer(t, tt.network, tt.addr, halfCloseEcho)
			ap := srv.addrPort()
			relayed := r.sync(map[uint16]netip.Addr{ap.Port(): ap.Addr()})
			if !relayed[ap.Port()] || !r.owns(relayBind, ap.Port()) || r.owns(ap.Addr(), ap.Port()) {
				t.Fatalf("relayed %v; owns its own listener %v", relayed, r.owns(relayBind, ap.Port()))
			}
			big := string(make([]byte, 1<<20))
			for _, msg := range []string{"hello", "", big} {
				if got := roundTrip(t, dialRelay(t, ap.Port()), msg); got != "got:"+msg {
					t.Fatalf("through the relay: %d bytes back, want %d", len(got), len("got:"+msg))
				}
			}
			// The port goes: the relay stops listening.
			if relayed := r.sync(nil); len(relayed) != 0 || r.owns(relayBind, ap.Port()) {
				t.Fatalf("after the port went: relayed %v", relayed)
			}
			_, err := net.DialTimeout("tcp", netip.AddrPortFrom(relayBind, ap.Port()).String(), 5*time.Second)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("dial a stopped relay: %v, want connection refused", err)
			}
		})
	}
}

func TestRelayServerClosesFirst(t *testing.T) {
	r := newTestRelays(t)
	srv := newServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) { c.Write([]byte("banner")) })
	ap := srv.addrPort()
	r.sync(map[uint16]netip.Addr{ap.Port(): ap.Addr()})
	c := dialRelay(t, ap.Port())
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "banner" {
		t.Fatalf("read %q, %v; want the banner then EOF", b, err)
	}
}

func TestRelayTargetGone(t *testing.T) {
	r := newTestRelays(t)
	srv := newServer(t, "tcp4", "127.0.0.1:0", halfCloseEcho)
	ap := srv.addrPort()
	r.sync(map[uint16]netip.Addr{ap.Port(): ap.Addr()})
	srv.ln.Close() // the program stops listening before the next poll
	c := dialRelay(t, ap.Port())
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Fatalf("a relayed connection to nothing: %q, %v; want it closed", b, err)
	}
}

func TestRelayLimits(t *testing.T) {
	r := newTestRelays(t)
	// More loopback ports than relays: real ports, so 127.0.0.2 has
	// them free.
	want := map[uint16]netip.Addr{}
	var ports []uint16
	for range maxRelays + 6 {
		srv := newServer(t, "tcp4", "127.0.0.1:0", halfCloseEcho)
		want[srv.addrPort().Port()] = srv.addrPort().Addr()
		ports = append(ports, srv.addrPort().Port())
	}
	slices.Sort(ports)
	relayed := r.sync(want)
	if len(relayed) != maxRelays {
		t.Fatalf("%d relays, want %d", len(relayed), maxRelays)
	}
	for _, p := range ports[:maxRelays] {
		if !relayed[p] {
			t.Errorf("port %d, among the lowest %d, is not relayed", p, maxRelays)
		}
	}
	// One goes: the next takes its place.
	delete(want, ports[0])
	relayed = r.sync(want)
	if len(relayed) != maxRelays || relayed[ports[0]] || !relayed[ports[maxRelays]] {
		t.Errorf("after one went: %d relays, %d relayed %v, %d relayed %v", len(relayed), ports[0], relayed[ports[0]], ports[maxRelays], relayed[ports[maxRelays]])
	}
}

func TestRelayConnectionLimit(t *testing.T) {
	r := newTestRelays(t)
	const max = 3
	r.conns = make(chan struct{}, max)
	// The server ends a connection when the client does.
	srv := newServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		c.Write([]byte("hi"))
		io.Copy(io.Discard, c)
	})
	ap := srv.addrPort()
	r.sync(map[uint16]netip.Addr{ap.Port(): ap.Addr()})
	var held []*net.TCPConn
	for range max {
		c := dialRelay(t, ap.Port())
		b := make([]byte, 2)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("a connection within the limit: %v", err)
		}
		held = append(held, c)
	}
	over := dialRelay(t, ap.Port())
	if b, err := io.ReadAll(over); len(b) != 0 || err != nil {
		t.Fatalf("a connection past the limit read %q, %v; want it closed at once", b, err)
	}
	// One ends: there is room again.
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialRelay(t, ap.Port())
		b := make([]byte, 2)
		if _, err := io.ReadFull(c, b); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no room after a relayed connection ended")
		}
	}
}

// TestRelayCloseEndsConnections: the session's end ends the relays'
// connections, even ones both sides keep open.
func TestRelayCloseEndsConnections(t *testing.T) {
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(relayBind, 0).String())
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", relayBind, err)
	}
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := newRelays(ctx, relayBind, slog.New(slog.DiscardHandler))
	hold := make(chan struct{})
	defer close(hold)
	srv := newServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		c.Write([]byte("hi"))
		<-hold
	})
	ap := srv.addrPort()
	r.sync(map[uint16]netip.Addr{ap.Port(): ap.Addr()})
	c := dialRelay(t, ap.Port())
	if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { r.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return with a connection open")
	}
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Fatalf("after close the client read %q, %v; want EOF", b, err)
	}
}
