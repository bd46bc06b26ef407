package netstack

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// probeID marks the query sent after one that must go unanswered: over
// UDP the server answers in order, so a reply to the first would come
// before the probe's.
const probeID = 0xbeef

// dnsTransports asks the network's DNS over UDP or TCP; nil is no reply.
var dnsTransports = []struct {
	name     string
	exchange func(t *testing.T, tn *testNet, query []byte) []byte
}{
	{"udp", func(t *testing.T, tn *testNet, query []byte) []byte {
		t.Helper()
		reply := tn.dnsUDP(t, query, dnsQuery(t, probeID, "probe.test.", dnsmessage.TypeA))
		if binary.BigEndian.Uint16(reply) == probeID && (len(query) < 2 || binary.BigEndian.Uint16(query) != probeID) {
			return nil
		}
		return reply
	}},
	{"tcp", func(t *testing.T, tn *testNet, query []byte) []byte {
		t.Helper()
		return tn.dnsTCP(t, query)
	}},
}

func TestDNSAnswers(t *testing.T) {
	for _, tr := range dnsTransports {
		t.Run(tr.name, func(t *testing.T) {
			tn := newTestNet(t, netOptions{})
			ask := func(name string, typ dnsmessage.Type) dnsmessage.Message {
				t.Helper()
				m := parseDNS(t, tr.exchange(t, tn, dnsQuery(t, 7, name, typ)))
				if m.ID != 7 {
					t.Fatalf("%s: reply ID %d, want 7", name, m.ID)
				}
				if len(m.Questions) != 1 || !strings.EqualFold(m.Questions[0].Name.String(), name) {
					t.Fatalf("%s: reply's questions %v", name, m.Questions)
				}
				return m
			}
			addr := func(name string) netip.Addr {
				t.Helper()
				m := ask(name, dnsmessage.TypeA)
				if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 {
					t.Fatalf("%s: %v with %d answers, want one address", name, m.RCode, len(m.Answers))
				}
				a := m.Answers[0]
				if a.Header.Type != dnsmessage.TypeA || a.Header.Name.String() != name {
					t.Fatalf("%s: answer %v", name, a.Header)
				}
				return netip.AddrFrom4(a.Body.(*dnsmessage.AResource).A)
			}

			first := addr("example.com.")
			if !NamePrefix.Contains(first) {
				t.Errorf("example.com is %s, outside %s", first, NamePrefix)
			}
			if again := addr("example.com."); again != first {
				t.Errorf("example.com asked again is %s, was %s", again, first)
			}
			// Resolvers randomise a name's case (DNS 0x20): the answer
			// keeps the question's spelling, the address is the name's.
			if folded := addr("ExAmPlE.CoM."); folded != first {
				t.Errorf("ExAmPlE.CoM is %s, example.com %s", folded, first)
			}
			other := addr("other.example.com.")
			if other == first || !NamePrefix.Contains(other) {
				t.Errorf("other.example.com is %s, example.com %s", other, first)
			}
			if got, ok := tn.names.name(first); !ok || got != "example.com" {
				t.Errorf("the network knows %s as %q, want example.com (no dot, lower case)", first, got)
			}
			if lo := addr("localhost."); lo != netip.MustParseAddr("127.0.0.1") {
				t.Errorf("localhost is %s", lo)
			}

			for _, typ := range []dnsmessage.Type{dnsmessage.TypeAAAA, dnsmessage.TypeMX, dnsmessage.TypeTXT} {
				if m := ask("example.com.", typ); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
					t.Errorf("%v: %v with %d answers, want no records", typ, m.RCode, len(m.Answers))
				}
			}

			ptr := reverseName(first)
			m := ask(ptr, dnsmessage.TypePTR)
			if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 {
				t.Fatalf("PTR %s: %v with %d answers", ptr, m.RCode, len(m.Answers))
			}
			if got := m.Answers[0].Body.(*dnsmessage.PTRResource).PTR.String(); got != "example.com." {
				t.Errorf("PTR %s is %s, want example.com.", ptr, got)
			}
			for _, name := range []string{
				reverseName(netip.MustParseAddr("198.19.255.254")), // never handed out
				reverseName(netip.MustParseAddr("10.0.0.1")),
				"1.2.3.in-addr.arpa.",
				"300.18.18.198.in-addr.arpa.",
			} {
				if m := ask(name, dnsmessage.TypePTR); m.RCode != dnsmessage.RCodeNameError || len(m.Answers) != 0 {
					t.Errorf("PTR %s: %v with %d answers, want NXDOMAIN", name, m.RCode, len(m.Answers))
				}
			}
		})
	}
}

func reverseName(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("%d.%d.%d.%d.in-addr.arpa.", b[3], b[2], b[1], b[0])
}

// TestDNSRefuses sends what no resolver should: each gets the error
// named, or no reply, and never an address.
func TestDNSRefuses(t *testing.T) {
	const (
		noReply  = -1
		rejected = -2 // an error code or no reply: never an answer
	)
	label63 := strings.Repeat("a", 63)
	twoQuestions := func() []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7})
		b.StartQuestions()
		for _, name := range []string{"a.test.", "b.test."} {
			b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
		}
		q, _ := b.Finish()
		return q
	}()
	withHeader := func(h dnsmessage.Header, name string, class dnsmessage.Class) []byte {
		b := dnsmessage.NewBuilder(nil, h)
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: class})
		q, _ := b.Finish()
		return q
	}
	cases := []struct {
		name  string
		query []byte
		want  int // an RCode, noReply or rejected
	}{
		{"empty name", rawQuery(7, wireName(), dnsmessage.TypeA), int(dnsmessage.RCodeNameError)},
		{"a..b", rawQuery(7, []byte("\x01a\x00\x00\x01b\x00"), dnsmessage.TypeA), rejected},
		{"a dot inside a label", rawQuery(7, wireName("a.b", "test"), dnsmessage.TypeA), rejected},
		{"binary label", rawQuery(7, wireName("\x00\xff\x7f", "test"), dnsmessage.TypeA), int(dnsmessage.RCodeNameError)},
		{"space in a label", rawQuery(7, wireName("a b", "test"), dnsmessage.TypeA), int(dnsmessage.RCodeNameError)},
		{"label of 64", rawQuery(7, wireName(label63+"a", "test"), dnsmessage.TypeA), rejected},
		{"name of 254", rawQuery(7, wireName(label63, label63, label63, strings.Repeat("a", 62)), dnsmessage.TypeA), rejected},
		{"name of 300", rawQuery(7, wireName(label63, label63, label63, label63, strings.Repeat("a", 44)), dnsmessage.TypeA), rejected},
		{"name cut short", rawQuery(7, []byte("\x10abc"), dnsmessage.TypeA)[:16], noReply},
		{"compression loop", rawQuery(7, []byte{0xc0, 12}, dnsmessage.TypeA), noReply},
		{"two questions", twoQuestions, int(dnsmessage.RCodeFormatError)},
		{"no question", binary.BigEndian.AppendUint16(nil, 7), noReply},
		{"header, no question", []byte{0, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, int(dnsmessage.RCodeFormatError)},
		{"class CHAOS", withHeader(dnsmessage.Header{ID: 7}, "version.bind.", dnsmessage.ClassCHAOS), int(dnsmessage.RCodeFormatError)},
		{"an update", withHeader(dnsmessage.Header{ID: 7, OpCode: 5}, "a.test.", dnsmessage.ClassINET), int(dnsmessage.RCodeNotImplemented)},
		{"a response", withHeader(dnsmessage.Header{ID: 7, Response: true}, "a.test.", dnsmessage.ClassINET), noReply},
		{"one byte", []byte{7}, noReply},
		{"garbage", bytes.Repeat([]byte{0xff}, 300), noReply},
	}
	for _, tr := range dnsTransports {
		t.Run(tr.name, func(t *testing.T) {
			tn := newTestNet(t, netOptions{})
			for _, c := range cases {
				if tr.name == "tcp" && len(c.query) == 0 {
					continue
				}
				reply := tr.exchange(t, tn, c.query)
				if reply == nil {
					if c.want != noReply && c.want != rejected {
						t.Errorf("%s: no reply, want %v", c.name, dnsmessage.RCode(c.want))
					}
					continue
				}
				m := parseDNS(t, reply)
				switch {
				case c.want == noReply:
					t.Errorf("%s: reply %v, want none", c.name, m.RCode)
				case len(m.Answers) != 0:
					t.Errorf("%s: %d answers, want none", c.name, len(m.Answers))
				case c.want == rejected && m.RCode == dnsmessage.RCodeSuccess:
					t.Errorf("%s: NOERROR, want an error", c.name)
				case c.want >= 0 && m.RCode != dnsmessage.RCode(c.want):
					t.Errorf("%s: %v, want %v", c.name, m.RCode, dnsmessage.RCode(c.want))
				}
			}
			// And the longest name there is still gets its address.
			longest := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".") + "."
			m := parseDNS(t, tr.exchange(t, tn, dnsQuery(t, 8, longest, dnsmessage.TypeA)))
			if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 {
				t.Errorf("a name of 253: %v with %d answers, want an address", m.RCode, len(m.Answers))
			}
		})
	}
}

func TestNamesForgetTheOldest(t *testing.T) {
	ns := newNames(2)
	a, b := ns.addr("a.test"), ns.addr("b.test")
	if a == b {
		t.Fatalf("two names share %s", a)
	}
	c := ns.addr("c.test")
	if c != a {
		t.Errorf("a third name got %s, want the oldest's %s", c, a)
	}
	if got, _ := ns.name(a); got != "c.test" {
		t.Errorf("%s is %q, want c.test", a, got)
	}
	if got := ns.addr("b.test"); got != b {
		t.Errorf("b.test moved from %s to %s", b, got)
	}
	if got := ns.addr("a.test"); got != b {
		t.Errorf("a.test asked again got %s, want the next oldest's %s", got, b)
	}
}

// FuzzAnswerDNS feeds answerDNS anything: it never panics, and what it
// answers is a response to the query, small enough for UDP.
func FuzzAnswerDNS(f *testing.F) {
	n, err := New(Config{Decide: testPolicy, GuestMAC: testGuestMAC})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { n.Close() })
	for _, q := range [][]byte{
		dnsQuery(f, 1, "example.com.", dnsmessage.TypeA),
		dnsQuery(f, 2, "EXAMPLE.com.", dnsmessage.TypeAAAA),
		dnsQuery(f, 3, "1.0.18.198.in-addr.arpa.", dnsmessage.TypePTR),
		dnsQuery(f, 4, "localhost.", dnsmessage.TypeA),
		rawQuery(5, wireName("a.b"), dnsmessage.TypeA),
		rawQuery(6, []byte{0xc0, 12}, dnsmessage.TypeA),
		{},
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query []byte) {
		out := n.answerDNS(query)
		if out == nil {
			return
		}
		if len(out) > 512 {
			t.Errorf("a reply of %d bytes", len(out))
		}
		var m dnsmessage.Message
		if err := m.Unpack(out); err != nil {
			t.Fatalf("the reply does not parse: %v", err)
		}
		if !m.Response || m.ID != binary.BigEndian.Uint16(query) {
			t.Errorf("reply %+v to a query with ID %d", m.Header, binary.BigEndian.Uint16(query))
		}
	})
}

// TestDNSLocalhost: localhost and names under it are the guest's own
// loopback, and take no address of NamePrefix: a guest that found one
// (PTR answers say which name an address stands for) could otherwise
// connect to "localhost" by name, and the host would resolve it to its
// own loopback.
func TestDNSLocalhost(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	for _, name := range []string{"localhost", "LocalHost", "db.localhost"} {
		if a := tn.lookup(t, name); a != loopback {
			t.Errorf("%s is %s, want 127.0.0.1", name, a)
		}
	}
	// What a guest would try: each address handed out so far, on a port
	// of the host's loopback. None is "localhost" to connect to.
	port := hostServer(t, func(net.Conn) {})
	for i := 1; i <= 4; i++ {
		a := offset(NamePrefix.Addr(), i)
		name, ok := tn.names.name(a)
		if ok && name != "localhost" && !strings.HasSuffix(name, ".localhost") {
			continue // a name of the test's, allowed to reach the host
		}
		if ok {
			t.Errorf("%s stands for %s", a, name)
		}
		if c, err := tn.guest.dialTCP(dialCtx(t), a, port); err == nil {
			c.Close()
			t.Errorf("the guest reached the host's loopback through %s", a)
		}
	}
}
