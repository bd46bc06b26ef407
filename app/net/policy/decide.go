package policy

import (
	"fmt"
	"net/netip"
	"strings"
)

// Dest is a connection the guest asks for.
type Dest struct {
	// Name is the name the guest looked up through Sandbar's DNS, if it
	// did; an IP literal here is taken as the address.
	Name string
	// Addr is the address the connection goes to, once known: the one
	// the name resolved to on the host, or the guest's IP literal.
	Addr  netip.Addr
	Port  uint16
	Proto Proto // "" is TCP
}

// Decision is Decide's answer.
type Decision struct {
	Allow bool
	// Rule is a copy of the rule that decided; nil when none did (the
	// mode, a closed address, or nothing in the allowlist).
	Rule *Rule
	// ReadOnly says the connection is allowed for HTTP reads only (the
	// deciding rule's Access is AccessRead): the network must read each
	// request and refuse the rest.
	ReadOnly bool
	// Reason says why in plain words for a person, and what to write to
	// change it where that is the person's to do.
	Reason string
}

// Decide says whether a session may open a connection to d, following the
// rules in the package doc. Call it with the name before resolving it on
// the host, and again with the name and the address it resolved to: the
// second call is the final word, and catches a name that resolves to a
// closed address.
func (p *Policy) Decide(d Dest) Decision {
	proto := d.Proto
	if proto == "" {
		proto = TCP
	}
	if proto != TCP && proto != UDP {
		return Decision{Reason: fmt.Sprintf("the protocol %s is not tcp or udp", quote(string(proto)))}
	}
	if d.Port == 0 {
		return Decision{Reason: "port 0 is not a port a connection can go to"}
	}
	addr := d.Addr
	if addr.IsValid() {
		addr = addr.Unmap().WithZone("")
	}
	var name string
	if d.Name != "" {
		if lit, ok := literal(d.Name); ok {
			if addr.IsValid() && addr != lit {
				return Decision{Reason: fmt.Sprintf("the name %s is the address %s, but the connection goes to %s", quote(d.Name), lit, addr)}
			}
			addr = lit
		} else {
			n, problem := canonicalName(d.Name)
			if problem != "" {
				return Decision{Reason: fmt.Sprintf("%s is not a host name Sandbar will look up: %s", quote(d.Name), problem)}
			}
			name = n
			if a, ok := p.hosts[name]; ok && !addr.IsValid() {
				addr = a
			}
		}
	}
	if name == "" && !addr.IsValid() {
		return Decision{Reason: "the connection names no host and no address"}
	}
	if p.mode == ModeOff {
		return Decision{Reason: "the session's network is off"}
	}
	for i := range p.rules {
		if r := &p.rules[i]; r.Action == Deny && r.matches(name, addr, d.Port, proto, true) {
			return Decision{Rule: copyRule(r), Reason: fmt.Sprintf("denied by %q in %s", r.String(), r.Source.where())}
		}
	}
	if addr.IsValid() {
		if closed, words := Forbidden(addr); closed {
			mapped := name != "" && p.hosts[name] == addr
			if r := p.allowBy(func(r *Rule) bool { return r.matches(name, addr, d.Port, proto, false) && r.opensClosed(name, mapped) }); r != nil {
				return Decision{Allow: true, Rule: copyRule(r), ReadOnly: r.ReadOnly(),
					Reason: fmt.Sprintf("allowed by %q in %s, which opens %s (%s)", r.String(), r.Source.where(), addr, words)}
			}
			return Decision{Reason: closedReason(name, addr, words, d.Port, proto, mapped)}
		}
	}
	if p.mode == ModeOpen {
		return Decision{Allow: true, Reason: "the session's network is open"}
	}
	if r := p.allowBy(func(r *Rule) bool { return r.matches(name, addr, d.Port, proto, false) }); r != nil {
		return Decision{Allow: true, Rule: copyRule(r), ReadOnly: r.ReadOnly(), Reason: fmt.Sprintf("allowed by %q in %s", r.String(), r.Source.where())}
	}
	host := name
	if host == "" {
		host = hostText(netip.PrefixFrom(addr, addr.BitLen()))
	}
	return Decision{Reason: fmt.Sprintf("%s:%d (%s) is not in the session's allowlist", host, d.Port, proto)}
}

// allowBy returns the allow rule that decides among those ok accepts: the
// first, unless it lets only reads through and a later one from
// Sandbar's, the project's or the session's rules lets anything through.
// The person's own word widens a read-only rule (the default allowlist's
// registries and forges); a repository's .sandbar/network does not, so a
// merged "allow github.com" cannot reopen pushes. nil when none is ok.
func (p *Policy) allowBy(ok func(*Rule) bool) *Rule {
	var read *Rule
	for i := range p.rules {
		r := &p.rules[i]
		switch {
		case r.Action != Allow || !ok(r):
		case read == nil && !r.ReadOnly():
			return r
		case read == nil:
			read = r
		case !r.ReadOnly() && r.Source != SourceRepository && r.Source != SourceDefault:
			return r
		}
	}
	return read
}

// matches reports whether the rule covers a connection: the port in its
// range, the same protocol, and the host: a name rule by name, an address
// rule by address, "*" by either. With embedded, an address rule also
// matches the IPv4 address inside a NAT64 or 6to4 address, so a deny of
// an IPv4 address cannot be gone round by spelling it in IPv6.
func (r *Rule) matches(name string, addr netip.Addr, port uint16, proto Proto, embedded bool) bool {
	if r.Proto != proto || port < r.PortLo || port > r.PortHi {
		return false
	}
	switch {
	case r.Prefix.IsValid():
		if !addr.IsValid() {
			return false
		}
		if r.Prefix.Contains(addr) {
			return true
		}
		v4, _, ok := embedded4(addr)
		return embedded && ok && r.Prefix.Contains(v4)
	case r.any():
		return true
	case r.Wildcard:
		return name != "" && strings.HasSuffix(name, r.Host[1:])
	}
	return name != "" && name == r.Host
}

// opensClosed reports whether a matching allow rule may open a closed
// address: it comes from Sandbar's, the project's or the session's rules,
// and it names the address (or a range holding it), or names the exact
// name, with its port written out, where that name is mapped (mapped: a
// host line of Sandbar's or the project's settings gives that very
// address). A name rule never opens what the name's DNS answers: "Allow"
// adds name rules for denials the guest caused, for names the guest
// chose, and whoever answers a name's DNS could point it at the host's
// loopback, a private network or cloud metadata once it is allowed. To
// reach a private host by name, allow the name and the address (allow
// db.internal:5432 and allow 10.0.0.5:5432), or map it with a host line.
func (r *Rule) opensClosed(name string, mapped bool) bool {
	switch r.Source {
	case SourceSandbar, SourceProject, SourceSession:
	default:
		return false
	}
	if r.Prefix.IsValid() {
		return true
	}
	return mapped && !r.Wildcard && !r.any() && r.PortGiven && name == r.Host
}

// closedReason says why a connection to a closed address is denied, and
// what rule would open it: the address's, or the name's where a host line
// maps the name to that address.
func closedReason(name string, addr netip.Addr, words string, port uint16, proto Proto, mapped bool) string {
	byAddr := ruleFor("", addr, port, proto).String()
	switch {
	case name == "":
		return fmt.Sprintf("%s is %s, closed to sessions: to allow it, add %q in Sandbar's or the project's network settings", addr, words, byAddr)
	case mapped:
		return fmt.Sprintf("%s is %s, which is %s, closed to sessions: to allow it, add %q in Sandbar's or the project's network settings",
			name, addr, words, ruleFor(name, addr, port, proto).String())
	}
	return fmt.Sprintf("%s is %s, which is %s, closed to sessions: to allow it, add %q in Sandbar's or the project's network settings",
		name, addr, words, byAddr)
}

// AllowRuleFor returns the rule that "Allow" adds for a denied connection:
// the exact name if d has one, else the address, with d's port and
// protocol written out. A name that resolved to a closed address gets the
// address instead: a name rule does not open a closed address its DNS
// gives (see opensClosed), and the person sees what they open.
// Its Source is src and its Text its String. It
// returns the zero Rule (Action "") when d names no valid host or address,
// or no port.
func AllowRuleFor(d Dest, src Source) Rule {
	proto := d.Proto
	if proto == "" {
		proto = TCP
	}
	addr := d.Addr
	name := ""
	if d.Name != "" {
		if lit, ok := literal(d.Name); ok {
			addr = lit
		} else if n, p := canonicalName(d.Name); p == "" {
			name = n
		}
	}
	if (proto != TCP && proto != UDP) || d.Port == 0 || (name == "" && !addr.IsValid()) {
		return Rule{}
	}
	if addr.IsValid() {
		if closed, _ := Forbidden(addr); closed {
			name = ""
		}
	}
	r := ruleFor(name, addr.Unmap().WithZone(""), d.Port, proto)
	r.Source, r.Text = src, r.String()
	return r
}

// ruleFor builds an allow rule for one port of a name, or of an address
// when name is "".
func ruleFor(name string, addr netip.Addr, port uint16, proto Proto) Rule {
	r := Rule{Action: Allow, Host: name, PortLo: port, PortHi: port, PortGiven: true, Proto: proto}
	if name == "" {
		r.Prefix = netip.PrefixFrom(addr, addr.BitLen())
		r.Host = prefixHost(r.Prefix)
	}
	return r
}

// literal reads a name that is an IP address, IPv6 with or without
// brackets; IPv4 in IPv6 is returned as IPv4, without a zone.
func literal(name string) (netip.Addr, bool) {
	if inner, ok := strings.CutPrefix(name, "["); ok {
		name, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return netip.Addr{}, false
		}
	}
	a, err := netip.ParseAddr(name)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func copyRule(r *Rule) *Rule {
	c := *r
	return &c
}
