package policy

import (
	"fmt"
	"net/netip"
)

// closedRange is a range of addresses closed to sessions unless a rule
// opens it by name (see the package doc); words read after "X is".
type closedRange struct {
	prefix netip.Prefix
	words  string
}

// closed4 and closed6 are read-only tables, the more specific ranges
// first where they overlap.
var closed4 = []closedRange{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this host" (0.0.0.0/8), which reaches the host itself`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private network address (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "host loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private network address (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved for IETF protocols (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved for documentation (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private network address (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "one of Sandbar's DNS answers (198.18.0.0/15), not a real address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved for documentation (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved for documentation (203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
}

var closed6 = []closedRange{
	{netip.MustParsePrefix("::/128"), "the unspecified address, which reaches the host itself"},
	{netip.MustParsePrefix("::1/128"), "host loopback"},
	// The rest of ::/96 is the deprecated IPv4-compatible form (::a.b.c.d),
	// which some stacks still route as IPv4.
	{netip.MustParsePrefix("::/96"), "a deprecated IPv4-compatible address (::/96)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	// Teredo hides an IPv4 address, XORed, in its last 32 bits.
	{netip.MustParsePrefix("2001::/32"), "Teredo (2001::/32), which carries an IPv4 address"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved for documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("fc00::/7"), "a private network address (unique local, fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (fec0::/10, deprecated but still routed by some networks)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Forbidden reports whether a is closed to sessions by default, and which
// range it is in, in words that read after "a is": "host loopback", "a
// private network address (RFC 1918)", "link-local (cloud metadata)". An
// IPv4 address written in IPv6 (::ffff:127.0.0.1) is judged as the IPv4
// it is; a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address by the IPv4
// address inside it. The zone is ignored. An invalid address is
// forbidden: it is not an address.
func Forbidden(a netip.Addr) (bool, string) {
	if !a.IsValid() {
		return true, "not a valid address"
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return inClosed(closed4, a)
	}
	if v4, how, ok := embedded4(a); ok {
		if f, words := Forbidden(v4); f {
			return true, fmt.Sprintf("%s for %s, which is %s", how, v4, words)
		}
		return false, ""
	}
	return inClosed(closed6, a)
}

func inClosed(ranges []closedRange, a netip.Addr) (bool, string) {
	for _, r := range ranges {
		if r.prefix.Contains(a) {
			return true, r.words
		}
	}
	return false, ""
}

// embedded4 returns the IPv4 address a NAT64 or 6to4 address carries, and
// which of the two it is.
func embedded4(a netip.Addr) (netip.Addr, string, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case sixTo4.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}
