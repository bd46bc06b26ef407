package hostproxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// noProxy is a NO_PROXY list: what goes directly, past the proxy.
type noProxy struct {
	all bool
	// simple exempts names without a dot (macOS's "Exclude simple
	// hostnames").
	simple  bool
	entries []noProxyEntry
	text    string
}

// noProxyEntry is one NO_PROXY item: a prefix (an address is a prefix of
// its full length) or a domain with its subdomains, on one port or any
// (0).
type noProxyEntry struct {
	prefix netip.Prefix
	domain string
	port   uint16
}

// parseNoProxy reads a comma (or space) separated list as curl and Go
// read it: "*" for everything; an address or CIDR prefix; a domain name,
// which covers its subdomains too ("example.com", ".example.com" and
// "*.example.com" alike); each optionally with ":port".
func parseNoProxy(s string) (noProxy, error) {
	np := noProxy{text: s}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f == "*" {
			np.all = true
			continue
		}
		var e noProxyEntry
		host := f
		if p, err := netip.ParsePrefix(f); err == nil {
			np.entries = append(np.entries, noProxyEntry{prefix: p.Masked()})
			continue
		} else if strings.Contains(f, "/") {
			return noProxy{}, fmt.Errorf("%q is not an address range (CIDR)", f)
		}
		if h, p, err := net.SplitHostPort(f); err == nil {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil || n == 0 {
				return noProxy{}, fmt.Errorf("%q: port %q is not a port number", f, p)
			}
			host, e.port = h, uint16(n)
		}
		host = strings.Trim(host, "[]")
		if a, err := netip.ParseAddr(host); err == nil {
			a = a.Unmap()
			e.prefix = netip.PrefixFrom(a, a.BitLen())
		} else {
			e.domain = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(host, "*"), "."), "."))
			if e.domain == "" {
				continue
			}
		}
		np.entries = append(np.entries, e)
	}
	return np, nil
}

// match says host (a name or an address) on port goes directly.
func (np noProxy) match(host string, port uint16) bool {
	if np.all {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	a, err := netip.ParseAddr(host)
	isAddr := err == nil
	if np.simple && !isAddr && !strings.Contains(host, ".") {
		return true
	}
	if isAddr {
		a = a.Unmap()
	}
	for _, e := range np.entries {
		if e.port != 0 && e.port != port {
			continue
		}
		switch {
		case e.prefix.IsValid():
			if isAddr && e.prefix.Contains(a) {
				return true
			}
		case !isAddr && (host == e.domain || strings.HasSuffix(host, "."+e.domain)):
			return true
		}
	}
	return false
}

// String is the list as it was set, or "nothing" when empty.
func (np noProxy) String() string {
	if strings.TrimSpace(np.text) == "" {
		return "nothing (NO_PROXY is empty)"
	}
	return np.text
}
