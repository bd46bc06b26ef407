package policy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseRuleGood(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Rule // Source, Text and Line are checked apart
		canon    string
	}{
		{"name, default port and proto", "allow example.com",
			Rule{Action: Allow, Host: "example.com", PortLo: 443, PortHi: 443, Proto: TCP}, "allow example.com"},
		{"uppercase name and keyword", "ALLOW Example.COM",
			Rule{Action: Allow, Host: "example.com", PortLo: 443, PortHi: 443, Proto: TCP}, "allow example.com"},
		{"trailing dot dropped", "deny example.com.",
			Rule{Action: Deny, Host: "example.com", PortLo: 443, PortHi: 443, Proto: TCP}, "deny example.com"},
		{"port", "allow example.com:8080",
			Rule{Action: Allow, Host: "example.com", PortLo: 8080, PortHi: 8080, PortGiven: true, Proto: TCP}, "allow example.com:8080"},
		{"explicit 443 stays given", "allow example.com:443",
			Rule{Action: Allow, Host: "example.com", PortLo: 443, PortHi: 443, PortGiven: true, Proto: TCP}, "allow example.com:443"},
		{"port range", "allow example.com:8000-8999",
			Rule{Action: Allow, Host: "example.com", PortLo: 8000, PortHi: 8999, PortGiven: true, Proto: TCP}, "allow example.com:8000-8999"},
		{"any port", "allow example.com:*",
			Rule{Action: Allow, Host: "example.com", PortLo: 1, PortHi: 65535, PortGiven: true, Proto: TCP}, "allow example.com:*"},
		{"full range written as star", "allow example.com:1-65535",
			Rule{Action: Allow, Host: "example.com", PortLo: 1, PortHi: 65535, PortGiven: true, Proto: TCP}, "allow example.com:*"},
		{"one-port range written as a port", "allow example.com:22-22",
			Rule{Action: Allow, Host: "example.com", PortLo: 22, PortHi: 22, PortGiven: true, Proto: TCP}, "allow example.com:22"},
		{"read", "allow GitHub.com READ",
			Rule{Action: Allow, Host: "github.com", PortLo: 443, PortHi: 443, Proto: TCP, Access: AccessRead}, "allow github.com read"},
		{"write with port and proto", "allow registry.example:8443/tcp write",
			Rule{Action: Allow, Host: "registry.example", PortLo: 8443, PortHi: 8443, PortGiven: true, Proto: TCP, Access: AccessWrite}, "allow registry.example:8443 write"},
		{"read on a wildcard, every port", "allow *.example.com:* read",
			Rule{Action: Allow, Host: "*.example.com", Wildcard: true, PortLo: 1, PortHi: 65535, PortGiven: true, Proto: TCP, Access: AccessRead}, "allow *.example.com:* read"},
		{"read with a tab and a comment", "allow\tgithub.com\tread # fetch only",
			Rule{Action: Allow, Host: "github.com", PortLo: 443, PortHi: 443, Proto: TCP, Access: AccessRead}, "allow github.com read"},
		{"udp", "allow time.example.com:123/udp",
			Rule{Action: Allow, Host: "time.example.com", PortLo: 123, PortHi: 123, PortGiven: true, Proto: UDP}, "allow time.example.com:123/udp"},
		{"explicit tcp dropped", "allow example.com/TCP",
			Rule{Action: Allow, Host: "example.com", PortLo: 443, PortHi: 443, Proto: TCP}, "allow example.com"},
		{"wildcard", "allow *.Example.com",
			Rule{Action: Allow, Host: "*.example.com", Wildcard: true, PortLo: 443, PortHi: 443, Proto: TCP}, "allow *.example.com"},
		{"any host", "deny *:25",
			Rule{Action: Deny, Host: "*", PortLo: 25, PortHi: 25, PortGiven: true, Proto: TCP}, "deny *:25"},
		{"underscore and punycode", "allow _srv.xn--bcher-kva.example",
			Rule{Action: Allow, Host: "_srv.xn--bcher-kva.example", PortLo: 443, PortHi: 443, Proto: TCP}, "allow _srv.xn--bcher-kva.example"},
		{"single-label name", "allow localhost:5432",
			Rule{Action: Allow, Host: "localhost", PortLo: 5432, PortHi: 5432, PortGiven: true, Proto: TCP}, "allow localhost:5432"},
		{"ipv4", "allow 127.0.0.1:5432",
			Rule{Action: Allow, Host: "127.0.0.1", Prefix: netip.MustParsePrefix("127.0.0.1/32"), PortLo: 5432, PortHi: 5432, PortGiven: true, Proto: TCP}, "allow 127.0.0.1:5432"},
		{"ipv4 /32 is the address", "allow 127.0.0.1/32",
			Rule{Action: Allow, Host: "127.0.0.1", Prefix: netip.MustParsePrefix("127.0.0.1/32"), PortLo: 443, PortHi: 443, Proto: TCP}, "allow 127.0.0.1"},
		{"ipv4 cidr with port", "allow 10.0.0.0/8:5432",
			Rule{Action: Allow, Host: "10.0.0.0/8", Prefix: netip.MustParsePrefix("10.0.0.0/8"), PortLo: 5432, PortHi: 5432, PortGiven: true, Proto: TCP}, "allow 10.0.0.0/8:5432"},
		{"ipv4 cidr with proto and no port", "deny 10.0.0.0/8/udp",
			Rule{Action: Deny, Host: "10.0.0.0/8", Prefix: netip.MustParsePrefix("10.0.0.0/8"), PortLo: 443, PortHi: 443, Proto: UDP}, "deny 10.0.0.0/8/udp"},
		{"ipv6 bracketed", "allow [::1]:8080",
			Rule{Action: Allow, Host: "::1", Prefix: netip.MustParsePrefix("::1/128"), PortLo: 8080, PortHi: 8080, PortGiven: true, Proto: TCP}, "allow [::1]:8080"},
		{"ipv6 written long", "allow [FD00:0:0:0:0:0:0:1]",
			Rule{Action: Allow, Host: "fd00::1", Prefix: netip.MustParsePrefix("fd00::1/128"), PortLo: 443, PortHi: 443, Proto: TCP}, "allow [fd00::1]"},
		{"ipv6 cidr with port", "allow [fd00::/8]:22",
			Rule{Action: Allow, Host: "fd00::/8", Prefix: netip.MustParsePrefix("fd00::/8"), PortLo: 22, PortHi: 22, PortGiven: true, Proto: TCP}, "allow [fd00::/8]:22"},
		{"ipv6 cidr, any port, udp", "deny [fd00::/8]:*/udp",
			Rule{Action: Deny, Host: "fd00::/8", Prefix: netip.MustParsePrefix("fd00::/8"), PortLo: 1, PortHi: 65535, PortGiven: true, Proto: UDP}, "deny [fd00::/8]:*/udp"},
		{"mapped ipv4 stored as ipv4", "allow [::ffff:127.0.0.1]:22",
			Rule{Action: Allow, Host: "127.0.0.1", Prefix: netip.MustParsePrefix("127.0.0.1/32"), PortLo: 22, PortHi: 22, PortGiven: true, Proto: TCP}, "allow 127.0.0.1:22"},
		{"mapped ipv4 range stored as ipv4", "deny [::ffff:10.0.0.0/104]",
			Rule{Action: Deny, Host: "10.0.0.0/8", Prefix: netip.MustParsePrefix("10.0.0.0/8"), PortLo: 443, PortHi: 443, Proto: TCP}, "deny 10.0.0.0/8"},
		{"tabs, spaces and a comment", "\t allow\t example.com:22   # for git\r",
			Rule{Action: Allow, Host: "example.com", PortLo: 22, PortHi: 22, PortGiven: true, Proto: TCP}, "allow example.com:22"},
		{"63-character label", "allow " + strings.Repeat("a", 63) + ".com",
			Rule{Action: Allow, Host: strings.Repeat("a", 63) + ".com", PortLo: 443, PortHi: 443, Proto: TCP}, "allow " + strings.Repeat("a", 63) + ".com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRule(tc.in, SourceProject)
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tc.in, err)
			}
			if r.Source != SourceProject || r.Line != 0 || r.Text != stripLine(tc.in) {
				t.Errorf("ParseRule(%q): Source %q, Line %d, Text %q", tc.in, r.Source, r.Line, r.Text)
			}
			got := r
			got.Source, got.Text = "", ""
			if got != tc.want {
				t.Errorf("ParseRule(%q)\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
			if s := r.String(); s != tc.canon {
				t.Errorf("ParseRule(%q).String() = %q, want %q", tc.in, s, tc.canon)
			}
			again, err := ParseRule(r.String(), SourceProject)
			if err != nil {
				t.Fatalf("ParseRule(%q), its own String: %v", r.String(), err)
			}
			if !sameRule(r, again) {
				t.Errorf("round trip of %q: %+v, then %+v", tc.in, r, again)
			}
		})
	}
}

// sameRule compares what a rule means, not where it was written.
func sameRule(a, b Rule) bool {
	a.Line, a.Text, b.Line, b.Text = 0, "", 0, ""
	return a == b
}

func TestParseRuleErrors(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct{ name, in, want string }{
		{"space in host", "allow exa mple.com",
			`"allow exa mple.com": a host has no spaces: write allow HOST[:PORTS][/tcp|udp] [read|write]`},
		{"unknown access word", "allow github.com push",
			`"allow github.com push": after the host comes read, write or nothing, not "push": write allow HOST[:PORTS][/tcp|udp] [read|write]`},
		{"three words after allow", "allow github.com read write",
			`"allow github.com read write": a host has no spaces: write allow HOST[:PORTS][/tcp|udp] [read|write]`},
		{"deny with an access", "deny github.com write",
			`"deny github.com write": deny takes no write: to let a host be read but not written, write allow HOST read`},
		{"read over udp", "allow example.com:53/udp read",
			`"allow example.com:53/udp read": read is for HTTP, which goes over tcp: leave out /udp, or the word read`},
		{"port after a space", "deny example.com 443",
			`"deny example.com 443": a host has no spaces: write deny HOST[:PORTS][/tcp|udp]`},
		{"no host", "allow",
			`"allow": allow needs a host: write allow HOST[:PORTS][/tcp|udp] [read|write]`},
		{"empty", "  # just a comment",
			`"": there is no rule: write allow HOST[:PORTS][/tcp|udp] [read|write] or deny HOST[:PORTS][/tcp|udp]`},
		{"not a rule keyword", "mode open",
			`"mode open": a rule starts with allow or deny, not "mode": write allow HOST[:PORTS][/tcp|udp] [read|write] or deny HOST[:PORTS][/tcp|udp]`},
		{"port zero", "allow example.com:0",
			`"allow example.com:0": "0" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"port too big", "allow example.com:65536",
			`"allow example.com:65536": "65536" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"port with leading zero", "allow example.com:0443",
			`"allow example.com:0443": "0443" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"port with a sign", "allow example.com:+443",
			`"allow example.com:+443": "+443" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"empty port", "allow example.com:",
			`"allow example.com:": "" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"backwards range", "allow example.com:9000-8000",
			`"allow example.com:9000-8000": the range 9000-8000 is backwards: write 8000-9000`},
		{"open range", "allow example.com:8000-",
			`"allow example.com:8000-": "8000-" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"unknown proto", "allow example.com:53/icmp",
			`"allow example.com:53/icmp": unknown protocol "icmp": write /tcp or /udp, or nothing for tcp`},
		{"empty proto", "allow example.com/",
			`"allow example.com/": a "/" needs a protocol after it: write /tcp or /udp, or nothing for tcp`},
		{"bad char in name", "allow exa$mple.com",
			`"allow exa$mple.com": "exa$mple.com" has "$": a name has only letters, digits, "-", "_" and dots`},
		{"non-ascii name", "allow bücher.de",
			`"allow bücher.de": the line holds a non-ASCII character: write an international name in punycode (xn--...), and spaces as plain spaces`},
		{"control character", "allow a.com\x00",
			`"allow a.com\x00": the line holds the control character "\x00": write the rule in plain text`},
		{"empty label", "allow a..com",
			`"allow a..com": "a..com" has an empty label (a dot at the start or two dots together): write a name like example.com`},
		{"two trailing dots", "allow a.com..",
			`"allow a.com..": "a.com." has an empty label (a dot at the start or two dots together): write a name like example.com`},
		{"leading dot", "allow .a.com",
			`"allow .a.com": ".a.com" has an empty label (a dot at the start or two dots together): write a name like example.com`},
		{"label too long", "allow " + long + ".com",
			`"allow ` + long + `.com": "` + long + `.com" has a label 64 characters long; a label has at most 63`},
		{"name too long", "allow " + strings.Repeat("a.", 127) + "com",
			`"allow ` + strings.Repeat("a.", 47) + `"...: the name is 257 characters long; a name has at most 253`},
		{"hyphen at a label's start", "allow -a.com",
			`"allow -a.com": "-a.com" has a label that starts or ends with "-"`},
		{"octal-looking ipv4", "allow 0177.0.0.1:22",
			`"allow 0177.0.0.1:22": "0177.0.0.1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{"short ipv4", "allow 127.1",
			`"allow 127.1": "127.1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{"ipv4 as one number", "allow 2130706433",
			`"allow 2130706433": "2130706433" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{"hex ipv4", "allow 0X7F.0.0.1",
			`"allow 0X7F.0.0.1": "0x7f.0.0.1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{"ipv4 as one hex number", "allow 0x7F000001:22",
			`"allow 0x7F000001:22": "0x7f000001" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{"only a dot", "allow .",
			`"allow .": the name is empty: write a name like example.com`},
		{"bad name after a wildcard", "allow *..example.com",
			`"allow *..example.com": ".example.com" has an empty label (a dot at the start or two dots together): write a name like example.com`},
		{"wildcard of nothing", "allow *.",
			`"allow *.": the name is empty: write a name like example.com`},
		{"ipv4 out of range", "allow 256.0.0.1",
			`"allow 256.0.0.1": "256.0.0.1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{"wildcard in the middle", "allow a.*.com",
			`"allow a.*.com": "a.*.com" has "*" where it cannot be: write *.example.com for every subdomain of example.com, or * for any host`},
		{"wildcard without a dot", "allow *example.com",
			`"allow *example.com": "*example.com" has "*" where it cannot be: write *.example.com for every subdomain of example.com, or * for any host`},
		{"unbracketed ipv6", "allow ::1",
			`"allow ::1": an IPv6 address goes in brackets, so its port cannot be mistaken for part of it: write [::1] or [::1]:PORT`},
		{"unbracketed ipv6 cidr", "allow fd00::/8",
			`"allow fd00::/8": an IPv6 address goes in brackets, so its port cannot be mistaken for part of it: write [fd00::/8] or [fd00::/8]:PORT`},
		{"ipv4 in brackets", "allow [10.0.0.1]:22",
			`"allow [10.0.0.1]:22": brackets are for IPv6: write 10.0.0.1 without them`},
		{"unclosed bracket", "allow [::1:22",
			`"allow [::1:22": "[::1:22" has no closing "]": write an IPv6 address as [fd00::1] or [fd00::1]:PORT`},
		{"junk after bracket", "allow [::1]22",
			`"allow [::1]22": after "]" comes :PORTS or nothing, not "22": write [::1]:PORT`},
		{"cidr port inside brackets", "allow [fd00::]/8:22",
			`"allow [fd00::]/8:22": after "]" comes :PORTS or nothing, not "/8:22": write [fd00::]:PORT`},
		{"bad ipv6", "allow [fd00::zz]",
			`"allow [fd00::zz]": "fd00::zz" is not an IPv6 address: write one like [fd00::1] or a range like [fd00::/8]`},
		{"zone", "allow [fe80::1%eth0]:22",
			`"allow [fe80::1%eth0]:22": an address with a zone ("%eth0") cannot be a rule: leave out the zone`},
		{"cidr with host bits", "allow 10.1.2.3/8",
			`"allow 10.1.2.3/8": 10.1.2.3/8 has address bits set past the /8: write 10.0.0.0/8`},
		{"ipv6 cidr with host bits", "allow [fd00::1/8]",
			`"allow [fd00::1/8]": fd00::1/8 has address bits set past the /8: write [fd00::/8]`},
		{"cidr too long", "allow 10.0.0.0/33",
			`"allow 10.0.0.0/33": "10.0.0.0/33" is not an address range: write a range like 10.0.0.0/8 or [fd00::/8]`},
		{"two cidrs", "allow 10.0.0.0/8/24",
			`"allow 10.0.0.0/8/24": "10.0.0.0/8/24" is not an address range: write a range like 10.0.0.0/8 or [fd00::/8]`},
		{"missing host before port", "allow :22",
			`"allow :22": the host is missing: write HOST or HOST:PORTS, e.g. example.com:443`},
		{"line too long", "allow " + strings.Repeat("a", 5000),
			`"allow ` + strings.Repeat("a", 94) + `"...: the line is 5006 bytes long; a line has at most 4096`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRule(tc.in, SourceSandbar)
			if err == nil {
				t.Fatalf("ParseRule(%q) accepted it", tc.in)
			}
			if err.Error() != tc.want {
				t.Errorf("ParseRule(%q)\n got %s\nwant %s", tc.in, err, tc.want)
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != 0 {
				t.Errorf("ParseRule(%q): error %T is not a *LineError with Line 0", tc.in, err)
			}
		})
	}
}
