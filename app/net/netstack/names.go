package netstack

import (
	"net/netip"
	"strings"
	"sync"
)

// NamePrefix is the range Sandbar's DNS answers from: every name the
// guest asks for gets an address of its own here (RFC 2544's benchmarking
// range, routed nowhere), so a connection to it says which name the guest
// meant. The network then decides by name and port, and only a name it
// lets through is resolved, on the host, at connect time: a name the
// policy refuses never leaves the machine, not even as a DNS query.
var NamePrefix = netip.MustParsePrefix("198.18.0.0/15")

// maxNames bounds the names one session's DNS remembers. Past it the
// least recently handed out is forgotten and its address reused.
const maxNames = 1 << 15

// names maps the names the guest looked up to their addresses in
// NamePrefix and back.
type names struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	// ring holds the addresses in the order they were handed out; next is
	// where the next one goes.
	ring []netip.Addr
	next int
	size int
}

func newNames(size int) *names {
	if size <= 0 || size > 1<<17-2 {
		size = maxNames
	}
	return &names{byName: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}, size: size}
}

// addr returns name's address, handing out a new one when the name is new.
// name is already canonical (see canonicalName).
func (n *names) addr(name string) netip.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[name]; ok {
		return a
	}
	var a netip.Addr
	if len(n.ring) < n.size {
		// Offsets from 1: the range's first address is its network's.
		a = offset(NamePrefix.Addr(), len(n.ring)+1)
		n.ring = append(n.ring, a)
	} else {
		a = n.ring[n.next]
		delete(n.byName, n.byAddr[a])
		n.next = (n.next + 1) % n.size
	}
	n.byName[name] = a
	n.byAddr[a] = name
	return a
}

// name returns the name whose address a is, if the DNS handed it out.
func (n *names) name(a netip.Addr) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.byAddr[a]
	return name, ok
}

func offset(base netip.Addr, i int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// canonicalName lowercases name and drops one trailing dot; it reports
// false for anything that is not a DNS name as resolvers send them:
// labels of 1–63 letters, digits, '-' or '_', 253 bytes at most.
func canonicalName(name string) (string, bool) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return "", false
	}
	label := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if label == 0 {
				return "", false
			}
			label = 0
			continue
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case 'A' <= c && c <= 'Z':
		default:
			return "", false
		}
		label++
		if label > 63 {
			return "", false
		}
	}
	if label == 0 {
		return "", false
	}
	return strings.ToLower(name), true
}
