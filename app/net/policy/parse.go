package policy

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The bounds on what one source may hold; text past them is refused, not
// cut, so a rule is never silently lost.
const (
	MaxText   = 1 << 20 // bytes of text
	MaxRules  = 10000   // allow, deny and host lines
	maxLine   = 4 << 10 // bytes in one line
	maxErrors = 20      // line errors reported before the rest are counted
)

// ErrTooLarge is wrapped by the error for text or rules past MaxText or
// MaxRules.
var ErrTooLarge = errors.New("network rules too large")

// LineError is a line that cannot be read. Its message says where, what
// is wrong and what to write instead:
//
//	line 3: "allow exa mple.com": a host has no spaces: write allow HOST[:PORTS][/tcp|udp]
type LineError struct {
	Line    int    // 1-based; 0 for a rule read alone by ParseRule
	Text    string // the line as written, without its comment
	Problem string // what is wrong and what to write instead
}

func (e *LineError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, quote(e.Text), e.Problem)
	}
	return quote(e.Text) + ": " + e.Problem
}

// File is one source's network settings, read by Parse.
type File struct {
	// Mode is the file's mode line; "" when it has none.
	Mode Mode
	// Rules are the allow and deny lines, in order.
	Rules []Rule
	// Hosts are the host lines: a canonical name to its address (IPv4
	// written in IPv6 is stored as IPv4).
	Hosts map[string]netip.Addr
	// NoDefaults is set by "defaults off".
	NoDefaults bool
}

// Parse reads a whole source (Sandbar's or a project's settings, a
// .sandbar/network file, rules given on the command line). Every rule's
// Source is src. A file with any bad line yields no File at all, so a
// deny line with a typo is never quietly dropped: the error joins a
// *LineError for each of the first 20 bad lines (errors.Join) and says
// how many more there were. Text over MaxText, or holding more than
// MaxRules rules, is refused with an error wrapping ErrTooLarge.
func Parse(text []byte, src Source) (File, error) {
	if len(text) > MaxText {
		return File{}, fmt.Errorf("%w: the text is %d bytes, more than the %d (1 MiB) Sandbar reads: shorten it (a wildcard or a range covers many hosts in one line)", ErrTooLarge, len(text), MaxText)
	}
	var (
		f        File
		errs     []error
		more     int
		modeLine int
		hostLine = map[string]int{}
		entries  int
	)
	fail := func(n int, text, problem string) {
		if len(errs) < maxErrors {
			errs = append(errs, &LineError{Line: n, Text: text, Problem: problem})
		} else {
			more++
		}
	}
	text = bytes.TrimPrefix(text, []byte("\ufeff")) // a byte order mark, as some editors write
	for n, rest := 1, text; len(rest) > 0; n++ {
		var raw []byte
		raw, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(raw) > maxLine {
			fail(n, string(raw), fmt.Sprintf("the line is %d bytes long; a line has at most %d", len(raw), maxLine))
			continue
		}
		line := stripLine(string(raw))
		if line == "" {
			continue
		}
		if p := badChars(line); p != "" {
			fail(n, line, p)
			continue
		}
		fs := fields(line)
		switch kw := strings.ToLower(fs[0]); kw {
		case string(Allow), string(Deny):
			if entries++; entries > MaxRules {
				errs = append(errs, fmt.Errorf("line %d: %w: more than %d rules in one place: use wildcards or ranges, or split them between Sandbar's and the project's settings", n, ErrTooLarge, MaxRules))
				return File{}, errors.Join(errs...)
			}
			r, p := parseRuleFields(Action(kw), fs[1:])
			if p != "" {
				fail(n, line, p)
				continue
			}
			r.Source, r.Line, r.Text = src, n, line
			f.Rules = append(f.Rules, r)
		case "mode":
			m, p := parseMode(fs)
			switch {
			case p != "":
				fail(n, line, p)
			case modeLine > 0:
				fail(n, line, fmt.Sprintf("the mode is already set on line %d: keep one mode line", modeLine))
			default:
				f.Mode, modeLine = m, n
			}
		case "host":
			if entries++; entries > MaxRules {
				errs = append(errs, fmt.Errorf("line %d: %w: more than %d rules in one place: split them between Sandbar's and the project's settings", n, ErrTooLarge, MaxRules))
				return File{}, errors.Join(errs...)
			}
			name, a, p := parseHostLine(fs)
			if p == "" {
				if prev, ok := hostLine[name]; ok {
					p = fmt.Sprintf("%s is already mapped on line %d: keep one host line for it", name, prev)
				}
			}
			if p != "" {
				fail(n, line, p)
				continue
			}
			if f.Hosts == nil {
				f.Hosts = map[string]netip.Addr{}
			}
			f.Hosts[name], hostLine[name] = a, n
		case "defaults":
			if len(fs) != 2 || strings.ToLower(fs[1]) != "off" {
				fail(n, line, "write defaults off to leave out the default allowlist; it is in force unless a line says so")
				continue
			}
			f.NoDefaults = true
		default:
			fail(n, line, fmt.Sprintf("unknown keyword %q: a line starts with mode, allow, deny, host or defaults", cut(fs[0])))
		}
	}
	if len(errs) > 0 {
		if more > 0 {
			errs = append(errs, fmt.Errorf("and %d more bad lines", more))
		}
		return File{}, errors.Join(errs...)
	}
	return f, nil
}

func parseMode(fs []string) (Mode, string) {
	const usage = "write mode allowlist, mode open or mode off"
	if len(fs) != 2 {
		return "", usage
	}
	m := Mode(strings.ToLower(fs[1]))
	if m.rank() < 0 {
		return "", fmt.Sprintf("unknown mode %q: %s", cut(fs[1]), usage)
	}
	return m, ""
}

// parseHostLine reads host NAME ADDR; ADDR is an IP address, IPv6 with or
// without brackets.
func parseHostLine(fs []string) (string, netip.Addr, string) {
	const usage = "write host NAME ADDRESS, e.g. host db.internal 10.0.0.5"
	if len(fs) != 3 {
		return "", netip.Addr{}, usage
	}
	name, p := canonicalName(fs[1])
	if p != "" {
		if _, err := netip.ParseAddr(strings.Trim(fs[1], "[]")); err == nil {
			p = "the name comes first, then its address: " + usage
		}
		return "", netip.Addr{}, p
	}
	s := fs[2]
	if inner, ok := strings.CutPrefix(s, "["); ok {
		s, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return "", netip.Addr{}, fmt.Sprintf(`%q has no closing "]": %s`, cut(fs[2]), usage)
		}
	}
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return "", netip.Addr{}, fmt.Sprintf("%q is not an IP address: %s", cut(fs[2]), usage)
	case a.Zone() != "":
		return "", netip.Addr{}, fmt.Sprintf("an address with a zone (%%%s) cannot be mapped: leave out the zone", cut(a.Zone()))
	}
	return name, a.Unmap(), ""
}

// stripLine drops a trailing carriage return, a # comment and the spaces
// and tabs around what is left.
func stripLine(s string) string {
	s = strings.TrimSuffix(s, "\r")
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(s, " \t")
}

// badChars says what is wrong with a control or non-ASCII character in a
// rule (comments may hold anything); "" when there is none.
func badChars(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\t':
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("the line holds the control character %q: write the rule in plain text", string(c))
		case c >= 0x80:
			return "the line holds a non-ASCII character: write an international name in punycode (xn--...), and spaces as plain spaces"
		}
	}
	return ""
}

// fields splits a line at spaces and tabs.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
}

// cut shortens text that goes into a message.
func cut(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// quote quotes text for a message, cut short and with anything odd
// escaped.
func quote(s string) string {
	const max = 100
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:max]) + "..."
}
