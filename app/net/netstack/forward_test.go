package netstack

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// randomBytes is n bytes that differ with seed, the same every run.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
	return b
}

func dialCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// TestTCPForward sends 1 MiB each way through an allowed connection in
// both framings: the guest half-closes, the host still answers, then
// closes.
func TestTCPForward(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			tn := newTestNet(t, netOptions{framing: f})
			up, down := randomBytes(1<<20, 1), randomBytes(1<<20, 2)
			received := make(chan []byte, 1)
			port := hostServer(t, func(c net.Conn) {
				b, err := io.ReadAll(c) // until the guest's half-close
				if err != nil {
					t.Errorf("host read: %v", err)
				}
				received <- b
				if _, err := c.Write(down); err != nil {
					t.Errorf("host write after the guest's half-close: %v", err)
				}
			})

			a := tn.lookup(t, "allowed.test")
			c, err := tn.guest.dialTCP(dialCtx(t), a, port)
			if err != nil {
				t.Fatalf("dial allowed.test: %v", err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(wait))
			if _, err := c.Write(up); err != nil {
				t.Fatalf("guest write: %v", err)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatalf("guest half-close: %v", err)
			}
			if got := recv(t, received, "the host reading to the guest's half-close"); !bytes.Equal(got, up) {
				t.Errorf("the host got %d bytes, not the %d the guest sent", len(got), len(up))
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("guest read: %v", err)
			}
			if !bytes.Equal(got, down) {
				t.Errorf("the guest got %d bytes, not the %d the host sent", len(got), len(down))
			}

			at := tn.attempt(t)
			want := Dest{Name: "allowed.test", Addr: loopback, Port: port, Proto: TCP}
			if at.Dest != want || !at.Verdict.Allow || at.Err != nil || at.Intercepted {
				t.Errorf("attempt %+v, want %+v allowed without error", at, want)
			}
			wantDecided := []Dest{{Name: "allowed.test", Port: port, Proto: TCP}, want}
			if got := tn.decisions(); !reflect.DeepEqual(got, wantDecided) {
				t.Errorf("Decide was asked %+v, want %+v (the name, then its address)", got, wantDecided)
			}
		})
	}
}

// TestTCPRefused checks each way a connection is refused: the guest's
// dial fails at once with a reset (not a timeout), the attempt says why,
// the policy was asked only what it should be, and the host dialed only
// when the policy allowed it.
func TestTCPRefused(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	listening := hostServer(t, func(net.Conn) {})
	closed := closedPort(t)
	other := netip.MustParseAddr("192.168.127.3")
	// A hostile guest sends to any address on its subnet without asking
	// ARP (which the gateway answers only for itself).
	if err := tn.guest.stack.AddStaticNeighbor(1, ipv4.ProtocolNumber, tcpAddr(other), tcpip.LinkAddress(testGatewayMAC)); err != nil {
		t.Fatalf("static neighbour: %s", err)
	}
	byName := func(name string, port uint16) func(*testing.T) (netip.Addr, uint16) {
		return func(t *testing.T) (netip.Addr, uint16) { return tn.lookup(t, name), port }
	}
	at := func(addr string, port uint16) func(*testing.T) (netip.Addr, uint16) {
		return func(*testing.T) (netip.Addr, uint16) { return netip.MustParseAddr(addr), port }
	}
	cases := []struct {
		name    string
		target  func(*testing.T) (netip.Addr, uint16)
		dest    Dest
		decided []Dest
		allow   bool   // the policy allowed it; the host did not
		reason  string // in the verdict's reason
		rule    string
		err     string // in the attempt's error
		dialed  bool
	}{{
		name:    "denied name",
		target:  byName("denied.test", listening),
		dest:    Dest{Name: "denied.test", Port: listening, Proto: TCP},
		decided: []Dest{{Name: "denied.test", Port: listening, Proto: TCP}},
		reason:  "denied.test is not on the list", rule: "deny denied.test",
	}, {
		name:   "name allowed, its address not (DNS rebinding)",
		target: byName("rebind.test", listening),
		dest:   Dest{Name: "rebind.test", Addr: loopback, Port: listening, Proto: TCP},
		decided: []Dest{
			{Name: "rebind.test", Port: listening, Proto: TCP},
			{Name: "rebind.test", Addr: loopback, Port: listening, Proto: TCP},
		},
		reason: "loopback", rule: "deny loopback",
	}, {
		name:    "address literal",
		target:  at("10.0.2.2", 1234),
		dest:    Dest{Addr: netip.MustParseAddr("10.0.2.2"), Port: 1234, Proto: TCP},
		decided: []Dest{{Addr: netip.MustParseAddr("10.0.2.2"), Port: 1234, Proto: TCP}},
		reason:  "is an address, not a name", rule: "deny addresses",
	}, {
		name:   "a name address the DNS never handed out",
		target: at("198.19.200.1", 443),
		dest:   Dest{Addr: netip.MustParseAddr("198.19.200.1"), Port: 443, Proto: TCP},
		reason: "was not handed out",
	}, {
		name:   "the gateway on a port nothing serves",
		target: at("192.168.127.1", 9),
		dest:   Dest{Addr: GatewayIP, Port: 9, Proto: TCP},
		reason: "inside the session's network",
	}, {
		name:   "another address on the subnet",
		target: at("192.168.127.3", 80),
		dest:   Dest{Addr: other, Port: 80, Proto: TCP},
		reason: "inside the session's network",
	}, {
		name:   "the host refuses",
		target: byName("allowed.test", closed),
		dest:   Dest{Name: "allowed.test", Addr: loopback, Port: closed, Proto: TCP},
		decided: []Dest{
			{Name: "allowed.test", Port: closed, Proto: TCP},
			{Name: "allowed.test", Addr: loopback, Port: closed, Proto: TCP},
		},
		allow: true, rule: "allow *", err: "refused", dialed: true,
	}, {
		name:    "a name that resolves to 0.0.0.0",
		target:  byName("zero.test", listening),
		dest:    Dest{Name: "zero.test", Port: listening, Proto: TCP},
		decided: []Dest{{Name: "zero.test", Port: listening, Proto: TCP}},
		allow:   true, rule: "allow *", err: "no address to connect to",
	}, {
		name:    "the name does not resolve",
		target:  byName("nowhere.test", listening),
		dest:    Dest{Name: "nowhere.test", Port: listening, Proto: TCP},
		decided: []Dest{{Name: "nowhere.test", Port: listening, Proto: TCP}},
		allow:   true, rule: "allow *", err: "does not resolve",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, port := c.target(t)
			decidedBefore, dialsBefore := len(tn.decisions()), len(tn.dials())
			conn, err := tn.guest.dialTCP(dialCtx(t), addr, port)
			if err == nil {
				conn.Close()
				t.Fatalf("the guest connected to %s:%d", addr, port)
			}
			if !isRefused(err) {
				t.Fatalf("dial %s:%d: %v, want connection refused", addr, port, err)
			}
			a := tn.attempt(t)
			if a.Dest != c.dest {
				t.Errorf("attempt's Dest %+v, want %+v", a.Dest, c.dest)
			}
			if a.Verdict.Allow != c.allow || !strings.Contains(a.Verdict.Reason, c.reason) || a.Verdict.Rule != c.rule {
				t.Errorf("verdict %+v, want allow %v, a reason with %q, rule %q", a.Verdict, c.allow, c.reason, c.rule)
			}
			if c.err == "" && a.Err != nil || c.err != "" && (a.Err == nil || !strings.Contains(a.Err.Error(), c.err)) {
				t.Errorf("attempt's Err %v, want one with %q", a.Err, c.err)
			}
			if got := tn.decisions()[decidedBefore:]; len(got) != len(c.decided) || len(got) > 0 && !reflect.DeepEqual(got, c.decided) {
				t.Errorf("Decide was asked %+v, want %+v", got, c.decided)
			}
			if dialed := len(tn.dials()) > dialsBefore; dialed != c.dialed {
				t.Errorf("the host dialed: %v, want %v (%v)", dialed, c.dialed, tn.dials()[dialsBefore:])
			}
		})
	}
}

// echo copies a host connection back to itself.
func echo(c net.Conn) { io.Copy(c, c) }

// roundTrip writes msg on c and reads it back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("read %q, want %q", buf, msg)
	}
}

func TestTCPMaxConns(t *testing.T) {
	tn := newTestNet(t, netOptions{cfg: Config{MaxConns: 1}})
	port := hostServer(t, echo)
	a := tn.lookup(t, "allowed.test")

	first, err := tn.guest.dialTCP(dialCtx(t), a, port)
	if err != nil {
		t.Fatalf("first connection: %v", err)
	}
	roundTrip(t, first, "one")
	if at := tn.attempt(t); !at.Verdict.Allow || at.Err != nil {
		t.Fatalf("first attempt %+v", at)
	}

	if c, err := tn.guest.dialTCP(dialCtx(t), a, port); !isRefused(err) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("second connection past MaxConns 1: %v, want connection refused", err)
	}
	if at := tn.attempt(t); at.Verdict.Allow || !strings.Contains(at.Verdict.Reason, "1 connections open") {
		t.Errorf("attempt past MaxConns %+v, want refused as too many connections open", at)
	}

	// Once the first has ended its slot is free again. Nothing says when
	// the network has seen the end, so try until it lets one through.
	first.Close()
	deadline := time.Now().Add(wait)
	for {
		c, err := tn.guest.dialTCP(dialCtx(t), a, port)
		if err == nil {
			roundTrip(t, c, "three")
			c.Close()
			break
		}
		if !isRefused(err) || time.Now().After(deadline) {
			t.Fatalf("a connection after the first ended: %v", err)
		}
		if at := tn.attempt(t); !strings.Contains(at.Verdict.Reason, "connections open") {
			t.Fatalf("refused for another reason: %+v", at)
		}
	}
}

// TestTCPIntercept hands an allowed connection to Config.Intercept, which
// reaches the destination through the dial it is given.
func TestTCPIntercept(t *testing.T) {
	tn := newTestNet(t, netOptions{cfg: Config{Intercept: func(d Dest, _ Verdict) Interceptor {
		if d.Name != "broker.test" {
			return nil
		}
		return func(ctx context.Context, guest net.Conn, dial func(context.Context) (net.Conn, error)) {
			up, err := dial(ctx)
			if err != nil {
				t.Errorf("interceptor's dial: %v", err)
				return
			}
			defer up.Close()
			guest.Write([]byte("via broker:"))
			io.Copy(up, io.LimitReader(guest, 5))
			io.Copy(guest, io.LimitReader(up, 5))
		}
	}}})
	port := hostServer(t, echo)
	c, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "broker.test"), port)
	if err != nil {
		t.Fatalf("dial broker.test: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	c.Write([]byte("hello"))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "via broker:hello" {
		t.Errorf("read %q, %v; want the interceptor's answer", got, err)
	}
	if at := tn.attempt(t); !at.Intercepted || !at.Verdict.Allow || at.Dest.Addr != loopback {
		t.Errorf("attempt %+v, want an allowed, intercepted one", at)
	}
}

// TestReadOnlyNeedsInterceptor: a connection the policy allows for reads
// only is refused when nothing takes it to read its requests, so it is
// never spliced through unread; with an interceptor it goes to it.
func TestReadOnlyNeedsInterceptor(t *testing.T) {
	readOnly := func(d Dest) Verdict {
		v := testPolicy(d)
		v.ReadOnly = v.Allow && d.Name == "registry.test"
		return v
	}
	var got atomic.Value
	tn := newTestNet(t, netOptions{cfg: Config{Decide: readOnly, Intercept: func(d Dest, v Verdict) Interceptor {
		got.Store(v)
		return nil
	}}})
	port := hostServer(t, echo)
	c, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "registry.test"), port)
	if !isRefused(err) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial registry.test: %v; want it refused", err)
	}
	if v, _ := got.Load().(Verdict); !v.ReadOnly {
		t.Errorf("Intercept was given %+v; want the read-only verdict", v)
	}
	if at := tn.attempt(t); at.Verdict.Allow || !strings.Contains(at.Verdict.Reason, "for reads only") {
		t.Errorf("attempt %+v; want a refusal saying the host is for reads only", at)
	}
}

// TestCloseEndsConnections closes a network with a connection spliced
// through it: the host's side ends, the guest's link ends, Serve returns
// and every goroutine the network started is gone (newTestNet checks).
func TestCloseEndsConnections(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	hostEnded := make(chan error, 1)
	port := hostServer(t, func(c net.Conn) {
		c.Write([]byte("x"))
		_, err := io.Copy(io.Discard, c)
		hostEnded <- err
	})
	c, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "allowed.test"), port)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("read: %v", err)
	}
	tn.attempt(t)

	if err := tn.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recv(t, hostEnded, "the host's side of the connection ending")
	if err := tn.served(t, "Serve returning"); err != nil {
		t.Errorf("Serve: %v", err)
	}
	// The guest's link has ended with the network: what it had in
	// flight is lost, as it is when a VM's NIC goes away.
	done := make(chan struct{})
	go func() { tn.guest.wg.Wait(); close(done) }()
	tn.guest.cancel()
	recv(t, done, "the guest's link ending")
}

// TestCloseWaitsForDials closes the network while a host dial is in
// flight: Close returns only once the attempt has been reported, so
// nothing reaches OnAttempt after Close.
func TestCloseWaitsForDials(t *testing.T) {
	dialing := make(chan struct{})
	tn := newTestNet(t, netOptions{cfg: Config{Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		close(dialing)
		<-ctx.Done()
		// A dialer honours cancelling, but not in no time (a resolver
		// or a proxy has its own to end): this one takes a while. The
		// Sleep is the slow dialer Close must wait for, not a wait.
		time.Sleep(200 * time.Millisecond)
		return nil, ctx.Err()
	}}})
	a := tn.lookup(t, "allowed.test")
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan error, 1)
	go func() {
		c, err := tn.guest.dialTCP(ctx, a, 443)
		if c != nil {
			c.Close()
		}
		dialed <- err
	}()
	recv(t, dialing, "the host dial starting")
	if err := tn.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case at := <-tn.attempts:
		if at.Err == nil {
			t.Errorf("attempt %+v, want the dial's error", at)
		}
	default:
		t.Errorf("Close returned before the attempt it was dialing was reported")
	}
	cancel()
	recv(t, dialed, "the guest's dial ending")
}
