package policy

import (
	"fmt"
	"net/netip"
	"strings"
)

const (
	maxName  = 253 // the longest DNS name, without its trailing dot (RFC 1035)
	maxLabel = 63  // the longest label of a name
)

// target is what a rule's HOST[:PORTS] names.
type target struct {
	host      string
	prefix    netip.Prefix
	wildcard  bool
	lo, hi    uint16
	portGiven bool
}

// parseTarget reads HOST[:PORTS]: a name, *.name, *, an IPv4 address or
// CIDR, or an IPv6 address or CIDR in brackets, with an optional port,
// range or "*" after a colon. The problem is "" when it is good.
func parseTarget(spec string) (target, string) {
	t := target{lo: 443, hi: 443}
	var hostPart, portPart string
	hasPort := false
	if rest, ok := strings.CutPrefix(spec, "["); ok {
		inner, after, closed := strings.Cut(rest, "]")
		if !closed {
			return t, fmt.Sprintf(`%q has no closing "]": write an IPv6 address as [fd00::1] or [fd00::1]:PORT`, cut(spec))
		}
		if after != "" {
			port, ok := strings.CutPrefix(after, ":")
			if !ok {
				return t, fmt.Sprintf(`after "]" comes :PORTS or nothing, not %q: write [%s]:PORT`, cut(after), cut(inner))
			}
			portPart, hasPort = port, true
		}
		if p := t.setIP(inner, true); p != "" {
			return t, p
		}
	} else {
		switch strings.Count(spec, ":") {
		case 0:
			hostPart = spec
		case 1:
			hostPart, portPart, _ = strings.Cut(spec, ":")
			hasPort = true
		default:
			return t, fmt.Sprintf("an IPv6 address goes in brackets, so its port cannot be mistaken for part of it: write [%s] or [%s]:PORT", cut(spec), cut(spec))
		}
		if p := t.setHost(hostPart); p != "" {
			return t, p
		}
	}
	if hasPort {
		lo, hi, p := parsePorts(portPart)
		if p != "" {
			return t, p
		}
		t.lo, t.hi, t.portGiven = lo, hi, true
	}
	return t, ""
}

// setHost reads an unbracketed host: *, *.name, a name, or an IPv4
// address or CIDR.
func (t *target) setHost(s string) string {
	switch {
	case s == "":
		return "the host is missing: write HOST or HOST:PORTS, e.g. example.com:443"
	case s == "*":
		t.host = "*"
		return ""
	case strings.Contains(s, "/"):
		return t.setIP(s, false)
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return t.setIP(s, false)
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		name, p := canonicalName(rest)
		if p != "" {
			return p
		}
		t.host, t.wildcard = "*."+name, true
		return ""
	}
	if strings.Contains(s, "*") {
		return fmt.Sprintf(`%q has "*" where it cannot be: write *.example.com for every subdomain of example.com, or * for any host`, cut(s))
	}
	name, p := canonicalName(s)
	if p != "" {
		return p
	}
	t.host = name
	return ""
}

// setIP reads an address or CIDR; bracketed says it was in brackets,
// which is for IPv6 only.
func (t *target) setIP(s string, bracketed bool) string {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		return fmt.Sprintf("an address with a zone (%q) cannot be a rule: leave out the zone", cut(s[i:]))
	}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		p, err = netip.ParsePrefix(s)
		if err != nil {
			return fmt.Sprintf("%q is not an address range: write a range like 10.0.0.0/8 or [fd00::/8]", cut(s))
		}
		if m := p.Masked(); m != p {
			return fmt.Sprintf("%s has address bits set past the /%d: write %s", p, p.Bits(), hostText(m))
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Sprintf("%q is not an IPv6 address: write one like [fd00::1] or a range like [fd00::/8]", cut(s))
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	switch {
	case bracketed && p.Addr().Is4():
		return fmt.Sprintf("brackets are for IPv6: write %s without them", p.Addr())
	case !bracketed && p.Addr().Is6():
		return fmt.Sprintf("an IPv6 address goes in brackets: write [%s]", cut(s))
	}
	// An IPv4 address written in IPv6 is matched as the IPv4 it is, so
	// the rule is stored as one.
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	t.prefix, t.host = p, prefixHost(p)
	return ""
}

// hostText writes a prefix as it is written in a rule, IPv6 bracketed.
func hostText(p netip.Prefix) string {
	if p.Addr().Is6() {
		return "[" + prefixHost(p) + "]"
	}
	return prefixHost(p)
}

// parsePorts reads a port, a range lo-hi or "*".
func parsePorts(s string) (lo, hi uint16, problem string) {
	if s == "*" {
		return 1, 65535, ""
	}
	bad := fmt.Sprintf("%q is not a port: write a number 1-65535, a range like 8000-8999, or * for every port", cut(s))
	a, b, isRange := strings.Cut(s, "-")
	lo, ok := parsePort(a)
	if !ok {
		return 0, 0, bad
	}
	hi = lo
	if isRange {
		if hi, ok = parsePort(b); !ok {
			return 0, 0, bad
		}
		if lo > hi {
			return 0, 0, fmt.Sprintf("the range %d-%d is backwards: write %d-%d", lo, hi, hi, lo)
		}
	}
	return lo, hi, ""
}

// parsePort reads 1-65535 in decimal, without a sign or leading zeros.
func parsePort(s string) (uint16, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > 65535 {
		return 0, false
	}
	return uint16(n), true
}

// canonicalName lower-cases s, drops one trailing dot, and checks that
// the rest is a DNS name: labels of 1 to 63 letters, digits, "-" or "_",
// not starting or ending with "-", at most 253 characters in all, and a
// last label that is not a number (which resolvers read as an IPv4
// address: 0177.0.0.1, 0x7f.1, 2130706433). The problem is "" when it is.
func canonicalName(s string) (string, string) {
	s = strings.TrimSuffix(s, ".")
	switch {
	case s == "":
		return "", "the name is empty: write a name like example.com"
	case len(s) > maxName:
		return "", fmt.Sprintf("the name is %d characters long; a name has at most %d", len(s), maxName)
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + ('a' - 'A')
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		case c >= 0x80:
			return "", fmt.Sprintf("%q is not ASCII: write an international name in punycode (xn--...)", cut(s))
		default:
			return "", fmt.Sprintf(`%q has %q: a name has only letters, digits, "-", "_" and dots`, cut(s), string(c))
		}
	}
	name := string(b)
	var last string
	for l := range strings.SplitSeq(name, ".") {
		switch {
		case l == "":
			return "", fmt.Sprintf("%q has an empty label (a dot at the start or two dots together): write a name like example.com", cut(name))
		case len(l) > maxLabel:
			return "", fmt.Sprintf("%q has a label %d characters long; a label has at most %d", cut(name), len(l), maxLabel)
		case l[0] == '-' || l[len(l)-1] == '-':
			return "", fmt.Sprintf(`%q has a label that starts or ends with "-"`, cut(name))
		}
		last = l
	}
	if numeric(last) {
		return "", fmt.Sprintf("%q is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1", cut(name))
	}
	return name, ""
}

// numeric reports whether a last label makes a name an IPv4 address to a
// resolver: all decimal digits, or 0x and hex digits (WHATWG URL, and
// inet_aton, which getaddrinfo uses).
func numeric(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}
