package policy

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// Layer is one source's settings, given to Compose.
type Layer struct {
	Source Source
	File   File
}

// Policy is the network policy of one session: the mode, the rules of
// every layer and the host mappings. It is immutable once Compose has
// built it, and safe for concurrent use.
type Policy struct {
	mode  Mode
	rules []Rule // the defaults, then Sandbar's, the project's, the repository's and the session's
	hosts map[string]netip.Addr
}

// Mode is the mode in force.
func (p *Policy) Mode() Mode { return p.mode }

// Rules returns a copy of the rules in force, in the order Decide reads
// them: the default allowlist, then Sandbar's settings, the project's,
// the repository's and the session's, each in its own order.
func (p *Policy) Rules() []Rule { return slices.Clone(p.rules) }

// Hosts returns a copy of the names Sandbar's DNS maps for this session,
// from the host lines of Sandbar's and the project's settings.
func (p *Policy) Hosts() map[string]netip.Addr { return maps.Clone(p.hosts) }

// layerOrder is the order Compose reads the layers in, whatever order
// they are given in.
var layerOrder = [...]Source{SourceSandbar, SourceProject, SourceRepository, SourceSession}

// Compose builds a session's policy from its layers (see the package doc
// for how the mode is chosen and what each source may do). sessionMode
// is the mode chosen for this session (--no-network is ModeOff); ""
// leaves it to the layers. Several layers may share a source; a layer
// of SourceDefault or an unknown source is ignored. Every rule is read
// again through its String, so a Rule built by hand obeys the same checks
// as one parsed, and keeps its Line and Text.
//
// The notes say, in plain words for the session's log, what was ignored
// or narrowed and why.
func Compose(sessionMode Mode, layers ...Layer) (*Policy, []string) {
	c := composer{bySource: map[Source][]Layer{}}
	for _, l := range layers {
		if !slices.Contains(layerOrder[:], l.Source) {
			c.note("network rules from %s are ignored: the default allowlist is built in, and a layer is Sandbar's, the project's, the repository's or the session's", l.Source.where())
			continue
		}
		c.bySource[l.Source] = append(c.bySource[l.Source], l)
	}
	p := &Policy{mode: c.mode(sessionMode), hosts: c.hosts()}
	if !c.noDefaults() {
		p.rules = Defaults()
	}
	for _, src := range layerOrder {
		for _, l := range c.bySource[src] {
			for _, r := range l.File.Rules {
				if r, ok := c.rule(r, src); ok {
					p.rules = append(p.rules, r)
				}
			}
		}
	}
	return p, c.notes
}

type composer struct {
	bySource map[Source][]Layer
	notes    []string
}

func (c *composer) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// mode chooses the mode: the session's choice, else the project's, else
// Sandbar's, else allowlist; then narrowed, never widened, by the
// repository. A mode this package does not know is taken as off.
func (c *composer) mode(sessionMode Mode) Mode {
	m, from := ModeAllowlist, "the default"
	for _, src := range []Source{SourceSandbar, SourceProject} {
		for _, l := range c.bySource[src] {
			if l.File.Mode != "" {
				m, from = l.File.Mode, src.where()
			}
		}
	}
	if sessionMode != "" {
		m, from = sessionMode, "the session's choice"
	}
	if m.rank() < 0 {
		c.note("the network mode %q (from %s) is not allowlist, open or off: the session's network is off", cut(string(m)), from)
		m = ModeOff
	}
	for _, l := range c.bySource[SourceRepository] {
		switch rm := l.File.Mode; {
		case rm == "" || rm == m:
		case rm == ModeOpen:
			c.note(".sandbar/network asks for mode open; a repository cannot open the network: set it in the project's settings")
		case rm.rank() < 0:
			c.note(".sandbar/network asks for the mode %q, which is not allowlist, open or off: the session's network is off", cut(string(rm)))
			m = ModeOff
		case rm.rank() < m.rank():
			c.note(".sandbar/network sets mode %s, narrowing the network from mode %s (from %s)", rm, m, from)
			m = rm
		default:
			c.note(".sandbar/network asks for mode %s; a repository can only narrow the network, and mode %s (from %s) is narrower", rm, m, from)
		}
	}
	for _, l := range c.bySource[SourceSession] {
		if l.File.Mode != "" {
			c.note("the session's rules ask for mode %s, which is ignored: the mode is chosen when the session starts", modeText(l.File.Mode))
		}
	}
	return m
}

// modeText writes a mode for a note, quoted if it is not one this
// package knows (it may come from a File built by hand).
func modeText(m Mode) string {
	if m.rank() < 0 {
		return quote(string(m))
	}
	return string(m)
}

// noDefaults reports whether a layer said "defaults off". The repository
// may say it too: leaving out the defaults only narrows.
func (c *composer) noDefaults() bool {
	off := false
	for _, src := range []Source{SourceSandbar, SourceProject, SourceRepository} {
		for _, l := range c.bySource[src] {
			off = off || l.File.NoDefaults
		}
	}
	for _, l := range c.bySource[SourceSession] {
		if l.File.NoDefaults {
			c.note("the session's rules say defaults off, which is ignored: set it in Sandbar's or the project's network settings")
		}
	}
	return off
}

// hosts gathers the host lines of Sandbar's and the project's settings,
// the project's winning for a name both map; the repository's and the
// session's are ignored with a note.
func (c *composer) hosts() map[string]netip.Addr {
	hosts := map[string]netip.Addr{}
	for _, src := range layerOrder {
		for _, l := range c.bySource[src] {
			for _, name := range slices.Sorted(maps.Keys(l.File.Hosts)) {
				a := l.File.Hosts[name]
				n, p := canonicalName(name)
				if p == "" && (!a.IsValid() || a.Zone() != "") {
					p = fmt.Sprintf("%v is not an address without a zone", a)
				}
				switch {
				case p != "":
					c.note("a host line in %s is left out: %s", src.where(), p)
				case src == SourceRepository:
					c.note(`.sandbar/network maps %s to %s; a repository cannot map names: add "host %s %s" in the project's settings`, n, a, n, a)
				case src == SourceSession:
					c.note(`the session's rules map %s to %s, which is ignored: add "host %s %s" in Sandbar's or the project's settings`, n, a, n, a)
				default:
					hosts[n] = a.Unmap()
				}
			}
		}
	}
	return hosts
}

// rule checks a layer's rule and says whether to keep it. A repository
// cannot allow any host, or every name under a top-level domain, which
// would be mode open by another name; its allows of closed addresses are
// kept for the public addresses they cover, with a note.
func (c *composer) rule(r Rule, src Source) (Rule, bool) {
	k, err := ParseRule(r.String(), src)
	if err != nil {
		c.note("a rule in %s is left out: %v", src.where(), err)
		return Rule{}, false
	}
	k.Line, k.Text = r.Line, r.Text
	if k.Text == "" {
		k.Text = k.String()
	}
	if src != SourceRepository || k.Action != Allow {
		return k, true
	}
	at := ".sandbar/network"
	if k.Line > 0 {
		at = fmt.Sprintf(".sandbar/network line %d", k.Line)
	}
	switch {
	case k.any():
		c.note("%s (%s) is ignored: a repository cannot allow every host: set mode open in the project's settings", at, quote(k.Text))
		return Rule{}, false
	case k.Wildcard && !strings.Contains(k.Host[2:], "."):
		c.note("%s (%s) is ignored: a repository cannot allow a whole top-level domain: allow it in the project's settings", at, quote(k.Text))
		return Rule{}, false
	case k.Prefix.IsValid() && k.Prefix.IsSingleIP():
		if closed, words := Forbidden(k.Prefix.Addr()); closed {
			c.note("%s (%s) has no effect: %s is %s, which a repository cannot open: to allow it, add %q in Sandbar's or the project's network settings",
				at, quote(k.Text), k.Prefix.Addr(), words, k.String())
		}
	case k.Prefix.IsValid() && coversClosed(k.Prefix):
		c.note("%s (%s) covers addresses closed to sessions, which a repository cannot open: it allows only the others", at, quote(k.Text))
	}
	return k, true
}

// coversClosed reports whether a range holds any closed address.
func coversClosed(p netip.Prefix) bool {
	closed := closed4
	if p.Addr().Is6() {
		if p.Overlaps(nat64) || p.Overlaps(sixTo4) {
			return true
		}
		closed = closed6
	}
	for _, r := range closed {
		if p.Overlaps(r.prefix) {
			return true
		}
	}
	return false
}
