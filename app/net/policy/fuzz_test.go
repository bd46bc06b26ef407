package policy

import (
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
