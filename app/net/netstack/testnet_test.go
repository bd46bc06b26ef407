package netstack

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// A testNet is a Network serving one end of a socket pair with a test
// guest on the other, and what the network reported.
type testNet struct {
	*Network
	guest    *testGuest
	attempts chan Attempt
	link     *serveCall // the latest Serve

	mu      sync.Mutex
	decided []Dest
	dialed  []string
}

type netOptions struct {
	framing Framing
	// cfg is the Network's config; Decide, OnAttempt, GuestMAC and
	// Resolve are filled in when left out.
	cfg Config
}

// newTestNet builds a Network and a guest wired to it. Cleanup closes
// both and checks that every goroutine they started has ended.
func newTestNet(t testing.TB, o netOptions) *testNet {
	t.Helper()
	checkGoroutines(t)
	tn := &testNet{attempts: make(chan Attempt, 4096)}
	cfg := o.cfg
	decide := cfg.Decide
	if decide == nil {
		decide = testPolicy
	}
	cfg.Decide = func(d Dest) Verdict {
		tn.mu.Lock()
		tn.decided = append(tn.decided, d)
		tn.mu.Unlock()
		return decide(d)
	}
	cfg.OnAttempt = func(a Attempt) {
		select {
		case tn.attempts <- a:
		default:
			t.Errorf("OnAttempt: %d attempts nobody read", cap(tn.attempts))
		}
	}
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		tn.mu.Lock()
		tn.dialed = append(tn.dialed, network+" "+address)
		tn.mu.Unlock()
		return dial(ctx, network, address)
	}
	if cfg.GuestMAC == nil {
		cfg.GuestMAC = testGuestMAC
	}
	if cfg.Resolve == nil {
		cfg.Resolve = testResolve
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	tn.Network = n
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := tn.served(t, "Serve returning after Close"); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	tn.attach(t, o.framing)
	return tn
}

// attach serves a new socket pair with a new guest on it, as a VM's boot
// does; the network must not be serving one already.
func (tn *testNet) attach(t testing.TB, f Framing) {
	t.Helper()
	host, guest := socketPair(t, f)
	call := &serveCall{done: make(chan struct{})}
	tn.link = call
	go func() {
		defer close(call.done)
		call.err = tn.Serve(context.Background(), host, f)
	}()
	tn.guest = newTestGuest(t, guest, f, tn.cfg.MTU)
	// Serve drops what the stack sends before it has attached the link;
	// an answer from the DNS says it has.
	tn.dnsUDP(t, dnsQuery(t, 1, "attached.test.", dnsmessage.TypeA))
}

// serveCall is one Serve's end.
type serveCall struct {
	done chan struct{}
	err  error
}

// served waits for the latest Serve to return and says what it did.
func (tn *testNet) served(t testing.TB, what string) error {
	t.Helper()
	recv(t, tn.link.done, what)
	return tn.link.err
}

// serving says the latest Serve has not returned.
func (tn *testNet) serving() bool {
	select {
	case <-tn.link.done:
		return false
	default:
		return true
	}
}

// testPolicy allows names (but not rebind.test's loopback address) and
// refuses denied.test and every address the guest dials by number.
func testPolicy(d Dest) Verdict {
	switch {
	case d.Name == "denied.test":
		return Verdict{Reason: "denied.test is not on the list", Rule: "deny denied.test"}
	case d.Name == "rebind.test" && d.Addr.IsLoopback():
		return Verdict{Reason: "rebind.test resolves to a loopback address", Rule: "deny loopback"}
	case d.Name != "":
		return Verdict{Allow: true, Reason: "names are allowed", Rule: "allow *"}
	}
	return Verdict{Reason: d.Addr.String() + " is an address, not a name", Rule: "deny addresses"}
}

// testResolve resolves every name to 127.0.0.1, but nowhere.test to
// nothing and zero.test to 0.0.0.0 (what filtering resolvers answer for a
// name they block, and what a hostile domain can answer).
func testResolve(_ context.Context, name string) ([]netip.Addr, error) {
	switch name {
	case "nowhere.test":
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	case "zero.test":
		return []netip.Addr{netip.IPv4Unspecified()}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// decisions is every Dest Decide was asked about so far.
func (tn *testNet) decisions() []Dest {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return append([]Dest(nil), tn.decided...)
}

// dials is every host dial the network made so far.
func (tn *testNet) dials() []string {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return append([]string(nil), tn.dialed...)
}

// attempt waits for the next reported attempt.
func (tn *testNet) attempt(t testing.TB) Attempt {
	t.Helper()
	select {
	case a := <-tn.attempts:
		return a
	case <-time.After(wait):
		t.Fatalf("no attempt was reported in %s", wait)
		return Attempt{}
	}
}

// lookup asks the network's DNS for name's address over UDP.
func (tn *testNet) lookup(t testing.TB, name string) netip.Addr {
	t.Helper()
	reply := tn.dnsUDP(t, dnsQuery(t, 1, name+".", dnsmessage.TypeA))
	m := parseDNS(t, reply)
	if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 {
		t.Fatalf("lookup %s: %v with %d answers", name, m.RCode, len(m.Answers))
	}
	a, ok := m.Answers[0].Body.(*dnsmessage.AResource)
	if !ok {
		t.Fatalf("lookup %s: answer %v", name, m.Answers[0].Body)
	}
	return netip.AddrFrom4(a.A)
}

// dnsUDP sends queries to the gateway's port 53 from one socket and
// returns the first reply that arrives.
func (tn *testNet) dnsUDP(t testing.TB, queries ...[]byte) []byte {
	t.Helper()
	c := tn.guest.dialUDP(GatewayIP, 53)
	for _, q := range queries {
		if _, err := c.Write(q); err != nil {
			t.Fatalf("DNS query: %v", err)
		}
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 4096)
	k, err := c.Read(buf)
	if err != nil {
		t.Fatalf("DNS reply: %v", err)
	}
	return buf[:k]
}

// dnsTCP sends one query over a TCP connection to the gateway's port 53
// and returns the reply, or nil when the server closed the connection
// without one.
func (tn *testNet) dnsTCP(t testing.TB, query []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := tn.guest.dialTCP(ctx, GatewayIP, 53)
	if err != nil {
		t.Fatalf("DNS over TCP: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	msg := binary.BigEndian.AppendUint16(nil, uint16(len(query)))
	if _, err := c.Write(append(msg, query...)); err != nil {
		t.Fatalf("DNS over TCP: %v", err)
	}
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		t.Fatalf("DNS over TCP reply: %v", err)
	}
	reply := make([]byte, binary.BigEndian.Uint16(hdr[:]))
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatalf("DNS over TCP reply: %v", err)
	}
	return reply
}

func dnsQuery(t testing.TB, id uint16, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatalf("query for %q: %v", name, err)
	}
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// rawQuery is a query whose question name is written as wire bytes, for
// names a builder refuses to write.
func rawQuery(id uint16, wireName []byte, typ dnsmessage.Type) []byte {
	q := binary.BigEndian.AppendUint16(nil, id)
	q = append(q, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	q = append(q, wireName...)
	q = binary.BigEndian.AppendUint16(q, uint16(typ))
	return binary.BigEndian.AppendUint16(q, uint16(dnsmessage.ClassINET))
}

// wireName writes labels as a DNS name on the wire.
func wireName(labels ...string) []byte {
	var b []byte
	for _, l := range labels {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0)
}

func parseDNS(t testing.TB, b []byte) dnsmessage.Message {
	t.Helper()
	var m dnsmessage.Message
	if err := m.Unpack(b); err != nil {
		t.Fatalf("reply does not parse: %v", err)
	}
	if !m.Response {
		t.Fatalf("reply is not a response")
	}
	return m
}

// hostServer is a TCP listener on the host's loopback whose connections
// go to handle, each on a goroutine the test waits for.
func hostServer(t testing.TB, handle func(net.Conn)) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// closedPort is a loopback port nothing listens on.
func closedPort(t testing.TB) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	return port
}

// checkGoroutines registers a cleanup, to run after every cleanup
// registered after it, that fails the test if goroutines started since
// outlive it.
func checkGoroutines(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		t.Helper()
		// Nothing signals that a goroutine has ended, so look until the
		// count settles or the deadline passes.
		deadline := time.Now().Add(wait)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				var buf bytes.Buffer
				pprof.Lookup("goroutine").WriteTo(&buf, 1)
				t.Errorf("%d goroutines outlived the test (%d before):\n%s", runtime.NumGoroutine()-before, before, buf.String())
				return
			}
			<-tick.C
		}
	})
}

// recv reads from ch or fails the test after the deadline, saying what
// did not happen.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s did not happen in %s", what, wait)
		var zero T
		return zero
	}
}
