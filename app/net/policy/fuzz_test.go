package policy

import (
	"net/netip"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"allow example.com", "deny *.example.com:*", "allow *:8000-8999/udp",
	"allow 10.0.0.0/8:5432", "allow [fd00::/8]:22", "allow [::ffff:127.0.0.1]:22",
	"allow [::ffff:10.0.0.0/104]", "deny 0177.0.0.1", "allow [fe80::1%eth0]",
	"allow Example.COM.:443/TCP", "allow exa mple.com", "allow [::1]]:1",
	"allow a.com:1-65535", "allow a.com:/udp", "ALLOW *.xn--bcher-kva.example",
	"allow 1.2.3.4/32/udp", "deny [::/0]:*", "allow 0x7f.1", "allow _a-b.c_",
}

// FuzzParseRule checks that ParseRule never panics and that a rule it
// accepts reads back from its String to the same rule and the same text.
func FuzzParseRule(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s, SourceProject)
		if err != nil {
			return
		}
		text := r.String()
		again, err := ParseRule(text, SourceProject)
		if err != nil {
			t.Fatalf("ParseRule(%q) = %q, which does not parse: %v", s, text, err)
		}
		if !sameRule(r, again) {
			t.Fatalf("ParseRule(%q) = %+v; its String %q reads back as %+v", s, r, text, again)
		}
		if again.String() != text {
			t.Fatalf("String not stable: %q, then %q", text, again.String())
		}
		if r.Prefix.IsValid() && r.Prefix.Addr().Is4In6() {
			t.Fatalf("ParseRule(%q) kept an IPv4-mapped prefix %v", s, r.Prefix)
		}
		if r.PortLo == 0 || r.PortLo > r.PortHi {
			t.Fatalf("ParseRule(%q) ports %d-%d", s, r.PortLo, r.PortHi)
		}
	})
}

// FuzzParse checks that Parse never panics and that every rule of a file
// it accepts reads back from its String.
func FuzzParse(f *testing.F) {
	f.Add(strings.Join(fuzzSeeds, "\n"))
	f.Add("mode open\r\nhost db.internal [fd00::5]\ndefaults off\nallow db.internal:5432 # db\n")
	f.Fuzz(func(t *testing.T, text string) {
		file, err := Parse([]byte(text), SourceRepository)
		if err != nil {
			return
		}
		for _, r := range file.Rules {
			again, err := ParseRule(r.String(), SourceRepository)
			if err != nil || !sameRule(r, again) {
				t.Fatalf("rule on line %d (%q): String %q reads back as %+v, %v", r.Line, r.Text, r.String(), again, err)
			}
		}
		if file.Mode != "" && file.Mode.rank() < 0 {
			t.Fatalf("mode %q", file.Mode)
		}
	})
}

// FuzzDecide checks, for any rules from any layer and any destination,
// that Decide never panics and never opens a closed address except by an
// address rule, or an exact name with its port written, from Sandbar's,
// the project's or the session's settings.
func FuzzDecide(f *testing.F) {
	f.Add("allow *:*", "allow 127.0.0.1:22\nmode open", "localhost", []byte{127, 0, 0, 1}, uint16(22), false, uint8(2))
	f.Add("host db.internal 10.0.0.5", "allow db.internal:5432", "DB.internal.", []byte{}, uint16(5432), false, uint8(1))
	f.Add("allow [::ffff:0:0/96]:*", "allow *.internal:*", "[::ffff:10.0.0.1]", []byte{0x20, 0x02, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, uint16(1), true, uint8(0))
	f.Fuzz(func(t *testing.T, layerA, layerB, name string, raw []byte, port uint16, udp bool, srcs uint8) {
		sources := []Source{SourceSandbar, SourceProject, SourceRepository, SourceSession}
		var layers []Layer
		for i, text := range []string{layerA, layerB} {
			file, err := Parse([]byte(text), "")
			if err != nil {
				return
			}
			layers = append(layers, Layer{Source: sources[int(srcs>>(2*i))%len(sources)], File: file})
		}
		p, _ := Compose("", layers...)
		d := Dest{Name: name, Port: port, Proto: TCP}
		if udp {
			d.Proto = UDP
		}
		if a, ok := netip.AddrFromSlice(raw); ok {
			d.Addr = a
		}
		got := p.Decide(d)
		if !got.Allow {
			return
		}
		a := d.Addr
		if lit, ok := literal(name); ok {
			a = lit
		} else if n, problem := canonicalName(name); problem == "" && !a.IsValid() {
			a = p.hosts[n]
		}
		if !a.IsValid() {
			return
		}
		if closed, _ := Forbidden(a); !closed {
			return
		}
		r := got.Rule
		if r == nil {
			t.Fatalf("%+v: %s is closed but allowed without a rule: %s", d, a, got.Reason)
		}
		if r.Source != SourceSandbar && r.Source != SourceProject && r.Source != SourceSession {
			t.Fatalf("%+v: %s opened by a rule from %s: %s", d, a, r.Source, got.Reason)
		}
		if !r.Prefix.IsValid() && (r.Wildcard || r.any() || !r.PortGiven) {
			t.Fatalf("%+v: %s opened by %q, neither an address nor an exact name with a port", d, a, r.String())
		}
	})
}
