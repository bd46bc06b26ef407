package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Mode says how much of the network a session has.
type Mode string

// The modes, from the most restrictive.
const (
	ModeOff       Mode = "off"       // nothing is reachable
	ModeAllowlist Mode = "allowlist" // only what an allow rule names (the default)
	ModeOpen      Mode = "open"      // everything but what a deny rule names and the closed ranges
)

// rank orders the modes by how much they open; -1 for a mode this
// package does not know, which Compose treats as off.
func (m Mode) rank() int {
	switch m {
	case ModeOff:
		return 0
	case ModeAllowlist:
		return 1
	case ModeOpen:
		return 2
	}
	return -1
}

// Proto is a transport protocol.
type Proto string

// The protocols a rule can name.
const (
	TCP Proto = "tcp" // the default
	UDP Proto = "udp"
)

// Source says where a rule came from; it decides what the rule may open
// (see the package doc) and names the place in a Decision's Reason.
type Source string

// The sources, from the broadest.
const (
	SourceDefault    Source = "default"    // Defaults, the default allowlist
	SourceSandbar    Source = "sandbar"    // Sandbar's settings
	SourceProject    Source = "project"    // a project's settings
	SourceRepository Source = "repository" // the repository's .sandbar/network file
	SourceSession    Source = "session"    // allowed for this session by the person
)

// where names a source's place in words a person recognises.
func (s Source) where() string {
	switch s {
	case SourceDefault:
		return "Sandbar's default allowlist"
	case SourceSandbar:
		return "Sandbar's settings"
	case SourceProject:
		return "the project's settings"
	case SourceRepository:
		return ".sandbar/network"
	case SourceSession:
		return "the rules allowed for this session"
	}
	return fmt.Sprintf("an unknown source (%q)", string(s))
}

// Action is what a rule does to the connections it matches.
type Action string

// The actions.
const (
	Allow Action = "allow"
	Deny  Action = "deny"
)

// Access is what an allow rule lets through a connection it allows.
type Access string

// The accesses. A rule that names none lets anything through, as
// AccessWrite does; the word is there so a person can write it where a
// read-only rule would otherwise decide (see Decide).
const (
	AccessAny Access = ""
	// AccessRead lets only HTTP reads through (see the package doc):
	// GET, HEAD, OPTIONS and git's fetch. Sandbar's network reads each
	// request, terminating TLS with Sandbar's CA, and refuses the rest.
	AccessRead Access = "read"
	// AccessWrite lets any request through; it implies read.
	AccessWrite Access = "write"
)

// Rule is one allow or deny line, in canonical form.
type Rule struct {
	Action Action
	// Host is the canonical host: a lower-case DNS name without its
	// trailing dot ("example.com"), a wildcard ("*.example.com"), "*" for
	// any host, or for an address rule the address or CIDR as netip
	// writes it, IPv6 without brackets ("10.0.0.0/8", "fd00::1").
	Host string
	// Prefix is set (IsValid) for an address or CIDR rule, a single
	// address being a full-length prefix. An IPv4 address or range
	// written in IPv6 (::ffff:10.0.0.0/104) is stored as IPv4.
	Prefix netip.Prefix
	// Wildcard is true for *.name: any subdomain of name at any depth,
	// not name itself.
	Wildcard bool
	// PortLo and PortHi bound the ports matched, both included; 443 when
	// the rule gives no port, 1 and 65535 for "*".
	PortLo, PortHi uint16
	// PortGiven is true when the rule wrote its port(s), "*" included.
	PortGiven bool
	Proto     Proto
	// Access is what an allow rule lets through: AccessRead for HTTP
	// reads only, else anything. A deny rule has none.
	Access Access
	Source Source
	// Line is the rule's line in its source, 1-based; 0 when it was
	// parsed alone (ParseRule) or built by AllowRuleFor.
	Line int
	// Text is the rule as written, without its comment.
	Text string
}

// any reports whether the rule is for any host ("*").
func (r *Rule) any() bool { return r.Host == "*" && !r.Prefix.IsValid() }

// String returns the rule's canonical text, which ParseRule reads back to
// the same rule: the port only when one was given ("*" for all), "/udp"
// only for UDP, an IPv6 address or range always in brackets.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(string(r.Action))
	b.WriteByte(' ')
	host := r.Host
	if r.Prefix.IsValid() {
		host = prefixHost(r.Prefix)
		if r.Prefix.Addr().Is6() {
			host = "[" + host + "]"
		}
	}
	b.WriteString(host)
	if r.PortGiven {
		b.WriteByte(':')
		b.WriteString(portsText(r.PortLo, r.PortHi))
	}
	if r.Proto != TCP {
		b.WriteByte('/')
		b.WriteString(string(r.Proto))
	}
	if r.Access != AccessAny {
		b.WriteByte(' ')
		b.WriteString(string(r.Access))
	}
	return b.String()
}

// ReadOnly reports whether the rule lets only HTTP reads through.
func (r *Rule) ReadOnly() bool { return r.Access == AccessRead }

// prefixHost writes a prefix as a rule's host: the bare address for a
// full-length prefix, else the CIDR.
func prefixHost(p netip.Prefix) string {
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr().String()
	}
	return p.String()
}

func portsText(lo, hi uint16) string {
	switch {
	case lo == 1 && hi == 65535:
		return "*"
	case lo == hi:
		return strconv.Itoa(int(lo))
	}
	return strconv.Itoa(int(lo)) + "-" + strconv.Itoa(int(hi))
}

// ruleUsage is how to write an allow or deny line, for error messages.
const ruleUsage = "HOST[:PORTS][/tcp|udp]"

// usage is how to write what follows action: an allow rule may end in
// read or write.
func usage(action Action) string {
	if action == Allow {
		return ruleUsage + " [read|write]"
	}
	return ruleUsage
}

// ParseRule reads one allow or deny line ("allow example.com:8000-8999",
// "deny 10.0.0.0/8:*/udp", "allow github.com read"); a trailing # comment is dropped. The rule's
// Source is src and its Line 0. A failure is a *LineError (Line 0) that
// says what is wrong and what to write instead.
func ParseRule(s string, src Source) (Rule, error) {
	if len(s) > maxLine {
		return Rule{}, &LineError{Text: s, Problem: fmt.Sprintf("the line is %d bytes long; a line has at most %d", len(s), maxLine)}
	}
	text := stripLine(s)
	if p := badChars(text); p != "" {
		return Rule{}, &LineError{Text: text, Problem: p}
	}
	f := fields(text)
	if len(f) == 0 {
		return Rule{}, &LineError{Text: text, Problem: "there is no rule: write allow " + usage(Allow) + " or deny " + ruleUsage}
	}
	kw := strings.ToLower(f[0])
	if kw != string(Allow) && kw != string(Deny) {
		return Rule{}, &LineError{Text: text, Problem: fmt.Sprintf("a rule starts with allow or deny, not %q: write allow %s or deny %s", cut(f[0]), usage(Allow), ruleUsage)}
	}
	r, p := parseRuleFields(Action(kw), f[1:])
	if p != "" {
		return Rule{}, &LineError{Text: text, Problem: p}
	}
	r.Source, r.Text = src, text
	return r, nil
}

// parseRuleFields reads what follows allow or deny; the problem is "" when
// the rule is good.
func parseRuleFields(action Action, f []string) (Rule, string) {
	switch {
	case len(f) == 0:
		return Rule{}, fmt.Sprintf("%s needs a host: write %s %s", action, action, usage(action))
	case len(f) > 2:
		return Rule{}, fmt.Sprintf("a host has no spaces: write %s %s", action, usage(action))
	}
	var access Access
	if len(f) == 2 {
		switch a := Access(strings.ToLower(f[1])); {
		case a != AccessRead && a != AccessWrite && action == Allow && onlyLetters(f[1]):
			return Rule{}, fmt.Sprintf("after the host comes read, write or nothing, not %q: write allow %s", cut(f[1]), usage(action))
		case a != AccessRead && a != AccessWrite:
			return Rule{}, fmt.Sprintf("a host has no spaces: write %s %s", action, usage(action))
		case action == Deny:
			return Rule{}, fmt.Sprintf("deny takes no %s: to let a host be read but not written, write allow HOST read", a)
		default:
			access = a
		}
	}
	spec := f[0]
	proto := TCP
	if strings.HasSuffix(spec, "/") {
		return Rule{}, `a "/" needs a protocol after it: write /tcp or /udp, or nothing for tcp`
	}
	if i := strings.LastIndexByte(spec, '/'); i >= 0 && onlyLetters(spec[i+1:]) {
		switch p := Proto(strings.ToLower(spec[i+1:])); p {
		case TCP, UDP:
			proto = p
		default:
			return Rule{}, fmt.Sprintf("unknown protocol %q: write /tcp or /udp, or nothing for tcp", cut(spec[i+1:]))
		}
		spec = spec[:i]
	}
	t, p := parseTarget(spec)
	if p != "" {
		return Rule{}, p
	}
	if access != AccessAny && proto != TCP {
		return Rule{}, fmt.Sprintf("%s is for HTTP, which goes over tcp: leave out /%s, or the word %s", access, proto, access)
	}
	return Rule{
		Action:    action,
		Host:      t.host,
		Prefix:    t.prefix,
		Wildcard:  t.wildcard,
		PortLo:    t.lo,
		PortHi:    t.hi,
		PortGiven: t.portGiven,
		Proto:     proto,
		Access:    access,
	}, ""
}

func onlyLetters(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
