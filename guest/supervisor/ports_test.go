package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

func l(addr string, port uint16) listener {
	return listener{addr: netip.MustParseAddr(addr), port: port}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fixtures are written for a little-endian machine, as the guests
// (amd64, arm64) are.
func TestParseSocketTable(t *testing.T) {
	got := parseSocketTable(fixture(t, "proc_net_tcp"), nil)
	want := []listener{
		l("127.0.0.1", 5173), l("0.0.0.0", 3000), l("10.0.2.15", 8080), l("127.0.0.1", 8080),
		l("127.0.0.53", 53), l("172.17.0.1", 9000), l("10.0.2.15", 5173), l("127.0.0.5", 7000),
		l("127.0.0.1", 10000),
	}
	if !slices.Equal(got, want) {
		t.Errorf("tcp:\n got %v\nwant %v", got, want)
	}
	got = parseSocketTable(fixture(t, "proc_net_tcp6"), nil)
	want = []listener{
		l("::1", 8000), l("::", 4000), l("127.0.0.1", 5000), l("::1", 5173), l("10.0.2.15", 7001),
		l("fe80::1", 9100), l("::1", 22), l("127.0.0.1", 22),
	}
	if !slices.Equal(got, want) {
		t.Errorf("tcp6:\n got %v\nwant %v", got, want)
	}
}

func TestParseSocketTableHostile(t *testing.T) {
	for _, in := range []string{
		"", "\n\n", ":", "0: :", "0: : : 0A", "0: 0100007F:1435 x 0A", "0: 0100007F:1435 x 0AA",
		"0: 0100007F:1435 x 0G", "0: 0100007F:14351 x 0A", "0: 0100007F0:1435 x 0A", "0: :1435 x 0A",
		"0: 0100007F:-143 x 0A", "0: 0100007F:+143 x 0A", "0: 0x00007F:1435 x 0A",
		"0: " + strings.Repeat("F", 32) + ":FFFF x 0A", "\x00\xff\xfe: 1 2 3",
	} {
		got := parseSocketTable([]byte(in), nil)
		for _, g := range got {
			if !g.addr.IsValid() || g.port == 0 {
				t.Errorf("%q gave %v", in, g)
			}
		}
	}
	if got := parseSocketTable([]byte("0: "+strings.Repeat("F", 32)+":FFFF x 0A"), nil); len(got) != 1 || got[0].port != 65535 {
		t.Errorf("all-ones v6 address: %v", got)
	}
}

func FuzzParseSocketTable(f *testing.F) {
	f.Add([]byte("  sl  local_address rem_address   st\n   0: 0100007F:1435 00000000:0000 0A 0\n"))
	f.Add([]byte("0: 0000000000000000FFFF00000100007F:1388 0:0 0A\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, g := range parseSocketTable(data, nil) {
			if !g.addr.IsValid() || g.port == 0 || g.addr.Is4In6() {
				t.Fatalf("bad listener %v", g)
			}
		}
	})
}

func TestPlanPorts(t *testing.T) {
	ls := parseSocketTable(fixture(t, "proc_net_tcp"), nil)
	ls = parseSocketTable(fixture(t, "proc_net_tcp6"), ls)
	guest := netip.MustParseAddr("10.0.2.15")
	relay := func(l listener) bool { return l == listener{addr: guest, port: 5173} }
	p := planPorts(ls, guest, relay)
	if want := []uint16{3000, 4000, 7001, 8080}; !slices.Equal(p.reachable, want) {
		t.Errorf("reachable = %v, want %v", p.reachable, want)
	}
	wantLoop := map[uint16]netip.Addr{
		22:    netip.MustParseAddr("127.0.0.1"), // listened on at ::1 too
		53:    netip.MustParseAddr("127.0.0.53"),
		5000:  netip.MustParseAddr("127.0.0.1"), // v4-mapped
		5173:  netip.MustParseAddr("127.0.0.1"), // and ::1; the relay's own left out
		7000:  netip.MustParseAddr("127.0.0.5"),
		8000:  netip.MustParseAddr("::1"),
		10000: netip.MustParseAddr("127.0.0.1"),
	}
	if !mapsEqual(p.loopback, wantLoop) {
		t.Errorf("loopback = %v, want %v", p.loopback, wantLoop)
	}
	// Not knowing the relay, 5173 would look reachable.
	p = planPorts(ls, guest, func(listener) bool { return false })
	if !slices.Contains(p.reachable, 5173) || p.loopback[5173].IsValid() {
		t.Errorf("without the relay left out: reachable %v, loopback %v", p.reachable, p.loopback)
	}
}

func mapsEqual(a, b map[uint16]netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestPortsReport(t *testing.T) {
	ports, truncated := portsReport([]uint16{22, 8080}, map[uint16]bool{5173: true, 3000: true})
	want := []protocol.Port{{Port: 22}, {Port: 3000, Loopback: true}, {Port: 5173, Loopback: true}, {Port: 8080}}
	if !slices.Equal(ports, want) || truncated {
		t.Errorf("got %v %v, want %v", ports, truncated, want)
	}
	if ports, truncated := portsReport(nil, nil); len(ports) != 0 || truncated {
		t.Errorf("nothing: %v %v", ports, truncated)
	}
	var many []uint16
	for p := range uint16(1000) {
		many = append(many, p+1)
	}
	ports, truncated = portsReport(many, map[uint16]bool{2000: true})
	if len(ports) != protocol.MaxPorts || !truncated || ports[0].Port != 1 || ports[len(ports)-1].Port != protocol.MaxPorts {
		t.Errorf("1001 ports: %d reported, truncated %v, %v…%v", len(ports), truncated, ports[0], ports[len(ports)-1])
	}
	if err := (protocol.Event{Ev: protocol.EvPorts, Ports: ports, Truncated: truncated}).Validate(); err != nil {
		t.Errorf("the report is not a valid event: %v", err)
	}
}

func TestSocketTablesBound(t *testing.T) {
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "net"), 0o755)
	var b bytes.Buffer
	b.WriteString("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	n := 0
	for b.Len() < maxSocketTable+100_000 {
		fmt.Fprintf(&b, "%4d: 00000000:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 %d 1 0000000000000000 100 0 0 10 0\n", n, n%60000+1, n)
		n++
	}
	os.WriteFile(filepath.Join(proc, "net", "tcp"), b.Bytes(), 0o644)
	st := &socketTables{procRoot: proc}
	ls, err := st.listeners() // tcp6 is missing: not an error
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) == 0 || len(ls) >= n || len(st.buf) != maxSocketTable {
		t.Fatalf("%d of %d listeners read with a %d byte buffer", len(ls), n, len(st.buf))
	}
	// The line cut by the bound is dropped whole: the last one read is
	// the one before it, intact.
	if last := ls[len(ls)-1]; last.port != uint16((len(ls)-1)%60000+1) {
		t.Errorf("last listener %v after %d", last, len(ls))
	}
	// A small table after a big one reads whole from the same buffer.
	os.WriteFile(filepath.Join(proc, "net", "tcp"), fixture(t, "proc_net_tcp"), 0o644)
	if ls, err := st.listeners(); err != nil || len(ls) != 9 {
		t.Fatalf("after the big table: %d listeners, %v", len(ls), err)
	}
}

// TestRealSocketTables finds the test's own listeners in this machine's
// tables.
func TestRealSocketTables(t *testing.T) {
	ln4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln4.Close()
	want := []listener{listenerOf(ln4)}
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		defer ln6.Close()
		want = append(want, listenerOf(ln6))
	} else {
		t.Logf("no IPv6 loopback here (%v): IPv4 only", err)
	}
	if ln, err := net.Listen("tcp", ":0"); err == nil { // dual stack: [::] in tcp6
		defer ln.Close()
		want = append(want, listener{addr: netip.IPv6Unspecified(), port: listenerOf(ln).port})
	}
	ls, err := (&socketTables{procRoot: "/proc"}).listeners()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !slices.Contains(ls, w) {
			t.Errorf("%v is not among the %d listeners read", w, len(ls))
		}
	}
}

func listenerOf(ln net.Listener) listener {
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	return listener{addr: ap.Addr().Unmap(), port: ap.Port()}
}

// waitPorts reads events until a ports event satisfies ok, calling each
// ports event on the way to every.
func (h *host) waitPorts(what string, ok func(protocol.Event) bool, every func(protocol.Event)) protocol.Event {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		e := h.next()
		if e.Ev != protocol.EvPorts {
			continue
		}
		if every != nil {
			every(e)
		}
		if ok(e) {
			return e
		}
	}
	h.t.Fatalf("no ports event %s within 15s", what)
	return protocol.Event{}
}

func portIn(e protocol.Event, port uint16) (protocol.Port, bool) {
	for _, p := range e.Ports {
		if p.Port == port {
			return p, true
		}
	}
	return protocol.Port{}, false
}

// TestPortsServe runs the watcher on this machine's real socket tables,
// with 127.0.0.2 as the guest's address.
func TestPortsServe(t *testing.T) {
	newTestRelays(t) // skips where 127.0.0.2 cannot be bound
	h := newHostConfig(t, func(c *Config) { c.GuestIP, c.PortsInterval = relayBind, 20*time.Millisecond })
	loop := newServer(t, "tcp4", "127.0.0.1:0", halfCloseEcho)
	port := loop.addrPort().Port()
	direct := newServer(t, "tcp4", netip.AddrPortFrom(relayBind, 0).String(), halfCloseEcho)
	directPort := direct.addrPort().Port()

	h.start("s", "cat", nil)
	both := func(e protocol.Event) bool {
		p, ok := portIn(e, port)
		d, dok := portIn(e, directPort)
		return ok && p.Loopback && dok && !d.Loopback
	}
	// Both listen before the start: the first ports event may list them.
	e := h.next()
	if e.Ev != protocol.EvPorts {
		t.Fatalf("first event after start: %+v, want ports", e)
	}
	if !both(e) {
		e = h.waitPorts("with the loopback port relayed and the other direct", both, nil)
	}
	t.Logf("ports: %v", e.Ports)
	if got := roundTrip(t, dialRelay(t, port), "through"); got != "got:through" {
		t.Fatalf("through the relay: %q", got)
	}

	// The program stops listening: the port goes, and the relay with it.
	// Never on the way may the relay's own socket make it look direct.
	loop.ln.Close()
	h.waitPorts("without the closed port", func(e protocol.Event) bool {
		_, ok := portIn(e, port)
		return !ok
	}, func(e protocol.Event) {
		if p, ok := portIn(e, port); ok && !p.Loopback {
			t.Errorf("port %d reported direct: the relay's own socket was counted", port)
		}
	})
	_, err := net.DialTimeout("tcp", netip.AddrPortFrom(relayBind, port).String(), 5*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial the relay after the port closed: %v, want connection refused", err)
	}
}

func TestNoPortsWithoutAddress(t *testing.T) {
	h := newHost(t) // no GuestIP: the watcher never runs
	srv := newServer(t, "tcp4", "127.0.0.1:0", halfCloseEcho)
	h.start("s", "echo done", nil)
	for _, e := range h.until(protocol.EvAgentExit, "") {
		if e.Ev == protocol.EvPorts {
			t.Fatalf("a ports event without a guest address: %+v", e)
		}
	}
	_, _, res := h.execOutput(protocol.Command{ID: "e", Argv: []string{"true"}})
	if res.Code != 0 {
		t.Fatal(res)
	}
	if _, err := net.DialTimeout("tcp", netip.AddrPortFrom(relayBind, srv.addrPort().Port()).String(), 5*time.Second); err == nil {
		t.Fatal("a loopback port was relayed without a guest address")
	}
}
