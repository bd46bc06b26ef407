package policy

import (
	"net/netip"
	"testing"
)

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		want  bool
		words string
	}{
		// IPv4, each closed range and its edges.
		{"0.0.0.0", true, `"this host" (0.0.0.0/8), which reaches the host itself`},
		{"0.255.255.255", true, `"this host" (0.0.0.0/8), which reaches the host itself`},
		{"1.0.0.0", false, ""},
		{"10.0.2.2", true, "a private network address (RFC 1918)"},
		{"9.255.255.255", false, ""},
		{"11.0.0.0", false, ""},
		{"100.64.0.0", true, "shared address space (CGNAT, RFC 6598)"},
		{"100.100.100.100", true, "shared address space (CGNAT, RFC 6598)"},
		{"100.127.255.255", true, "shared address space (CGNAT, RFC 6598)"},
		{"100.128.0.0", false, ""},
		{"127.0.0.1", true, "host loopback"},
		{"127.0.0.2", true, "host loopback"},
		{"127.255.255.255", true, "host loopback"},
		{"169.254.169.254", true, "link-local (cloud metadata)"},
		{"172.16.0.1", true, "a private network address (RFC 1918)"},
		{"172.31.255.255", true, "a private network address (RFC 1918)"},
		{"172.32.0.0", false, ""},
		{"192.0.0.8", true, "reserved for IETF protocols (192.0.0.0/24)"},
		{"192.0.2.1", true, "reserved for documentation (192.0.2.0/24)"},
		{"192.0.3.1", false, ""},
		{"192.168.1.1", true, "a private network address (RFC 1918)"},
		{"198.18.0.5", true, "one of Sandbar's DNS answers (198.18.0.0/15), not a real address"},
		{"198.19.255.255", true, "one of Sandbar's DNS answers (198.18.0.0/15), not a real address"},
		{"198.20.0.0", false, ""},
		{"198.51.100.7", true, "reserved for documentation (198.51.100.0/24)"},
		{"203.0.113.9", true, "reserved for documentation (203.0.113.0/24)"},
		{"224.0.0.251", true, "multicast"},
		{"239.255.255.250", true, "multicast"},
		{"240.0.0.1", true, "reserved (240.0.0.0/4)"},
		{"255.255.255.255", true, "broadcast"},
		{"8.8.8.8", false, ""},
		{"93.184.216.34", false, ""},
		// IPv4 written in IPv6 is the IPv4.
		{"::ffff:127.0.0.1", true, "host loopback"},
		{"::ffff:169.254.169.254", true, "link-local (cloud metadata)"},
		{"::ffff:8.8.8.8", false, ""},
		// IPv6.
		{"::", true, "the unspecified address, which reaches the host itself"},
		{"::1", true, "host loopback"},
		{"::7f00:1", true, "a deprecated IPv4-compatible address (::/96)"},
		{"fd00::1", true, "a private network address (unique local, fc00::/7)"},
		{"fc00::1", true, "a private network address (unique local, fc00::/7)"},
		{"fe80::1", true, "link-local"},
		{"fe80::1%eth0", true, "link-local"},
		{"fec0::1", true, "site-local (fec0::/10, deprecated but still routed by some networks)"},
		{"ff02::1", true, "multicast"},
		{"2001:db8::1", true, "reserved for documentation (2001:db8::/32)"},
		{"2001::1", true, "Teredo (2001::/32), which carries an IPv4 address"},
		{"100::1", true, "discard-only (100::/64)"},
		{"64:ff9b:1::1", true, "local-use NAT64 (64:ff9b:1::/48)"},
		{"2606:4700::1111", false, ""},
		{"2a00:1450:4001::200e", false, ""},
		// NAT64 and 6to4 are judged by the IPv4 inside.
		{"64:ff9b::7f00:1", true, "NAT64 for 127.0.0.1, which is host loopback"},
		{"64:ff9b::a9fe:a9fe", true, "NAT64 for 169.254.169.254, which is link-local (cloud metadata)"},
		{"64:ff9b::808:808", false, ""},
		{"2002:7f00:1::", true, "6to4 for 127.0.0.1, which is host loopback"},
		{"2002:a00:1::1", true, "6to4 for 10.0.0.1, which is a private network address (RFC 1918)"},
		{"2002:808:808::1", false, ""},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			got, words := Forbidden(netip.MustParseAddr(tc.addr))
			if got != tc.want || words != tc.words {
				t.Errorf("Forbidden(%s) = %v, %q; want %v, %q", tc.addr, got, words, tc.want, tc.words)
			}
		})
	}
	if f, _ := Forbidden(netip.Addr{}); !f {
		t.Error("Forbidden of the zero Addr is false; an invalid address must be closed")
	}
}

func TestDefaults(t *testing.T) {
	rules := Defaults()
	if len(rules) == 0 {
		t.Fatal("no default rules")
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Source != SourceDefault || r.Action != Allow || r.Proto != TCP || r.Wildcard || r.Prefix.IsValid() || r.any() {
			t.Errorf("default %q: source %q, action %q, proto %q, wildcard %v; want exact names, allowed over tcp from the default source",
				r.Text, r.Source, r.Action, r.Proto, r.Wildcard)
		}
		if r.PortLo != r.PortHi || (r.PortLo != 443 && r.PortLo != 80) {
			t.Errorf("default %q: ports %d-%d; want 443 or 80", r.Text, r.PortLo, r.PortHi)
		}
		if seen[r.String()] {
			t.Errorf("default %q twice", r.String())
		}
		seen[r.String()] = true
	}
	// The model API takes writes (it is all POSTs); every registry and
	// code host in the list is read-only: each takes a push or publish
	// made with a token the agent brings (issue 21, finding 7).
	if r := rules[0]; r.String() != "allow api.anthropic.com" || r.ReadOnly() {
		t.Errorf("the first default is %q; want the model API, not read-only", r.String())
	}
	for _, r := range rules[1:] {
		if !r.ReadOnly() {
			t.Errorf("default %q lets writes through; a registry or code host in the defaults is read-only: write %s read", r.Text, r.String())
		}
	}
	for _, want := range []string{
		"allow api.anthropic.com", "allow registry.npmjs.org read", "allow registry.yarnpkg.com read",
		"allow pypi.org read", "allow files.pythonhosted.org read", "allow proxy.golang.org read", "allow sum.golang.org read",
		"allow crates.io read", "allow index.crates.io read", "allow static.crates.io read",
		"allow rubygems.org read", "allow index.rubygems.org read", "allow repo.maven.apache.org read", "allow repo1.maven.org read",
		"allow deb.debian.org:80 read", "allow deb.debian.org:443 read", "allow security.debian.org:80 read", "allow security.debian.org:443 read",
		"allow archive.ubuntu.com:80 read", "allow archive.ubuntu.com:443 read", "allow security.ubuntu.com:80 read",
		"allow security.ubuntu.com:443 read", "allow ports.ubuntu.com:80 read", "allow ports.ubuntu.com:443 read",
		"allow github.com read", "allow codeload.github.com read", "allow objects.githubusercontent.com read",
		"allow raw.githubusercontent.com read", "allow gitlab.com read",
	} {
		if !seen[want] {
			t.Errorf("the default allowlist lacks %q", want)
		}
		delete(seen, want)
	}
	for extra := range seen {
		t.Errorf("the default allowlist has %q, which this test does not know", extra)
	}
	// A fresh copy each call: changing one does not change the next.
	rules[0].Host = "changed.example"
	if Defaults()[0].Host == "changed.example" {
		t.Error("Defaults shares its slice between calls")
	}
}
