package broker

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Credential is one brokered secret: the guest holds Sentinel, and the
// broker puts Value in its place in requests to Host.
type Credential struct {
	Name     string // e.g. ANTHROPIC_API_KEY; shown in logs and errors
	Sentinel string // what the guest holds, made by NewSentinel
	Value    string // the real secret; host memory only
	// Host is the only host the value may go to, e.g. api.anthropic.com.
	// For the API broker it is the upstream's host (empty means that host).
	// To bind one secret to several hosts, list it once per host.
	Host string
	// Header is the request header that carries it: "x-api-key",
	// "Authorization". The Interceptor swaps the sentinel only in this
	// header (in any header when empty); the API broker swaps in either
	// of the model API's credential headers (apiHeaders), since Claude
	// Code picks which, and in no other.
	Header string
}

const (
	sentinelPrefix = "sandbar-brokered-"
	sentinelHex    = 32 // hex digits after the prefix: 128 random bits
	// minScrubLen is the shortest value scrubbed from responses: a shorter
	// string turns up in ordinary text by chance, and no token a service
	// issues is that short.
	minScrubLen = 8
)

// NewSentinel returns a new sentinel for the secret called name:
// "sandbar-brokered-" and 32 hex digits from crypto/rand. It holds nothing
// derived from the secret or its name, so the guest learns nothing from it;
// every sentinel has the same shape, so the broker can tell its own from
// text that merely looks like one. name is used only in the error.
func NewSentinel(name string) (string, error) {
	var b [sentinelHex / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a placeholder for %s: %w", name, err)
	}
	return sentinelPrefix + hex.EncodeToString(b[:]), nil
}

// isSentinel reports whether s has the exact shape NewSentinel makes.
func isSentinel(s string) bool {
	if len(s) != len(sentinelPrefix)+sentinelHex || !strings.HasPrefix(s, sentinelPrefix) {
		return false
	}
	return hexRun(s[len(sentinelPrefix):]) == sentinelHex
}

// hexRun is the length of the run of lower-case hex digits s begins with.
func hexRun(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return i
		}
	}
	return len(s)
}

// check says what is wrong with c, in words that never repeat its value.
func (c Credential) check() error {
	switch {
	case c.Name == "":
		return errors.New("a brokered credential has no name")
	case !isSentinel(c.Sentinel):
		return fmt.Errorf("credential %s: its placeholder was not made by NewSentinel", c.Name)
	case c.Value == "":
		return fmt.Errorf("credential %s has an empty value: set it in Sandbar's secrets", c.Name)
	case strings.ContainsAny(c.Value, "\r\n\x00"):
		return fmt.Errorf("credential %s: its value holds a line break or NUL byte, which no header can carry", c.Name)
	case strings.Contains(c.Value, sentinelPrefix):
		return fmt.Errorf("credential %s: its value is a Sandbar placeholder, not the real secret", c.Name)
	}
	return nil
}

// swapper puts real values in place of sentinels in a request's headers.
type swapper struct {
	bound map[string]bound // sentinel → credential bound to this upstream
	// anyOf, when set, are the headers a credential with no header of
	// its own is swapped in (canonical names); else every header.
	anyOf map[string]bool
	// elsewhere holds the sentinels of credentials bound to other hosts:
	// they stay as they are, useless to whoever receives them.
	elsewhere map[string]bool
	// strict rejects a sentinel-shaped token that is neither bound here nor
	// elsewhere (the API broker: an unknown token is a stale or forged one,
	// and the upstream would only answer with a confusing 401 of its own).
	strict bool
}

type bound struct {
	name, value string
	header      string // canonical header name, or "" for any header
}

// errUnknownSentinel is returned by swap for a token no credential has.
var errUnknownSentinel = errors.New("unknown Sandbar placeholder")

// newSwapper binds the credentials whose Host is host (all of them when
// host is ""). With anyHeader, a bound credential is swapped in every
// header whatever its Header says.
func newSwapper(creds []Credential, host string, anyHeader, strict bool) (*swapper, error) {
	s := &swapper{bound: map[string]bound{}, elsewhere: map[string]bool{}, strict: strict}
	for _, c := range creds {
		if err := c.check(); err != nil {
			return nil, err
		}
		if host != "" && !strings.EqualFold(c.Host, host) {
			s.elsewhere[c.Sentinel] = true
			continue
		}
		b := bound{name: c.Name, value: c.Value}
		if !anyHeader && c.Header != "" {
			b.header = http.CanonicalHeaderKey(c.Header)
		}
		if old, ok := s.bound[c.Sentinel]; ok && old != b {
			return nil, fmt.Errorf("credentials %s and %s share a placeholder: give each its own (NewSentinel)", old.name, c.Name)
		}
		s.bound[c.Sentinel] = b
	}
	for k := range s.bound {
		delete(s.elsewhere, k)
	}
	return s, nil
}

// swap replaces, in place, the sentinels in h's values with the real
// values of the credentials bound here, also inside a "Basic" credential's
// base64. It returns the names of the credentials it used, or
// errUnknownSentinel (and changes nothing) when strict and a value holds a
// token that is not ours. A request with no sentinel passes untouched: the
// broker never adds a credential the guest did not ask for.
func (s *swapper) swap(h http.Header) ([]string, error) {
	var used []string
	type change struct {
		key string
		i   int
		v   string
	}
	var changes []change
	for key, vals := range h {
		for i, v := range vals {
			nv, err := s.value(key, v, &used)
			if err != nil {
				return nil, err
			}
			if nv != v {
				changes = append(changes, change{key, i, nv})
			}
		}
	}
	for _, c := range changes {
		h[c.key][c.i] = c.v
	}
	return used, nil
}

// value returns v with the sentinels allowed in header key swapped.
func (s *swapper) value(key, v string, used *[]string) (string, error) {
	if payload, ok := basicPayload(v); ok {
		dec, err := base64.StdEncoding.DecodeString(payload)
		if err == nil && strings.Contains(string(dec), sentinelPrefix) {
			nd, err := s.text(key, string(dec), used)
			if err != nil {
				return "", err
			}
			return v[:len(v)-len(payload)] + base64.StdEncoding.EncodeToString([]byte(nd)), nil
		}
	}
	if !strings.Contains(v, sentinelPrefix) {
		return v, nil
	}
	return s.text(key, v, used)
}

// text swaps the sentinel-shaped tokens of t.
func (s *swapper) text(key, t string, used *[]string) (string, error) {
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(t[i:], sentinelPrefix)
		if j < 0 {
			break
		}
		start := i + j
		end := start + len(sentinelPrefix)
		end += hexRun(t[end:])
		tok := t[start:end]
		i = end
		c, ok := s.bound[tok]
		switch {
		case ok && (c.header == key || c.header == "" && (s.anyOf == nil || s.anyOf[key])):
			b.WriteString(t[last:start])
			b.WriteString(c.value)
			last = end
			if !slices.Contains(*used, c.name) {
				*used = append(*used, c.name)
			}
		case ok || s.elsewhere[tok]:
			// Bound elsewhere, or to another header: it goes on as it is.
		case s.strict:
			return "", errUnknownSentinel
		}
	}
	if last == 0 {
		return t, nil
	}
	b.WriteString(t[last:])
	return b.String(), nil
}

// basicPayload returns the base64 part of a "Basic <base64>" value: a
// suffix of v (net/http trims the ends of header values).
func basicPayload(v string) (string, bool) {
	const scheme = "basic "
	t := strings.TrimLeft(v, " \t")
	if len(t) <= len(scheme) || !strings.EqualFold(t[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimLeft(t[len(scheme):], " "), true
}

// scrubber takes real values out of what an upstream sends back: headers
// get the sentinel in place of a value, bodies a mask of the same length
// (so a Content-Length stays true and bytes do not shift). Besides each
// value's own bytes it looks for the value in base64, standard or URL
// alphabet, at each of the three alignments a value can have inside encoded
// text (an echoed "Basic" credential, a token inside a JWT-like blob).
type scrubber struct {
	patterns []pattern // longest first
	first    [256]bool // first bytes of the patterns
	maxLen   int
	toSent   *strings.Replacer // literal value → sentinel
}

type pattern struct {
	find, mask []byte
}

func newScrubber(creds []Credential) *scrubber {
	s := &scrubber{}
	seen := map[string]bool{}
	var lits [][2]string // value, sentinel
	add := func(name, find string) {
		if len(find) < minScrubLen || seen[find] {
			return
		}
		seen[find] = true
		s.patterns = append(s.patterns, pattern{find: []byte(find), mask: maskFor(name, len(find))})
	}
	for _, c := range creds {
		if len(c.Value) < minScrubLen || seen[c.Value] {
			continue
		}
		add(c.Name, c.Value)
		lits = append(lits, [2]string{c.Value, c.Sentinel})
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for k := range 3 {
				add(c.Name, base64Core(enc, c.Value, k))
			}
		}
	}
	// Longest first, so a value that contains another is masked whole.
	slices.SortStableFunc(s.patterns, func(a, b pattern) int { return len(b.find) - len(a.find) })
	slices.SortStableFunc(lits, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	for _, p := range s.patterns {
		s.first[p.find[0]] = true
		s.maxLen = max(s.maxLen, len(p.find))
	}
	// strings.Replacer prefers the earlier pair at one position: longest.
	args := make([]string, 0, 2*len(lits))
	for _, l := range lits {
		args = append(args, l[0], l[1])
	}
	s.toSent = strings.NewReplacer(args...)
	return s
}

// base64Core is the part of the base64 of v that does not depend on what
// surrounds v, when v starts k bytes after a 3-byte group boundary: the
// characters made only of v's bits.
func base64Core(enc *base64.Encoding, v string, k int) string {
	e := enc.EncodeToString(append(make([]byte, k), v...))
	from := (8*k + 5) / 6      // first character whose bits all come from v
	to := 8 * (k + len(v)) / 6 // the characters before it end within v
	if to <= from {
		return ""
	}
	return e[from:to]
}

// maskFor is what a body gets in place of n bytes of a value:
// "[scrubbed:NAME]" padded with '*' or cut to n bytes.
func maskFor(name string, n int) []byte {
	m := []byte("[scrubbed:" + name + "]")
	if len(m) >= n {
		return m[:n]
	}
	return append(m, strings.Repeat("*", n-len(m))...)
}

// text returns t with every literal value replaced by its sentinel.
func (s *scrubber) text(t string) string {
	if len(s.patterns) == 0 {
		return t
	}
	return s.toSent.Replace(t)
}

// header scrubs every value of h in place.
func (s *scrubber) header(h http.Header) {
	if len(s.patterns) == 0 {
		return
	}
	for _, vals := range h {
		for i, v := range vals {
			vals[i] = s.value(v)
		}
	}
}

// value scrubs one header value: a "Basic" credential that holds a value
// gets the sentinel in its place, re-encoded, so the guest sees what it
// sent; a value anywhere else, the sentinel in the clear or a mask in
// base64.
func (s *scrubber) value(v string) string {
	if payload, ok := basicPayload(v); ok {
		if dec, err := base64.StdEncoding.DecodeString(payload); err == nil {
			if nd := s.text(string(dec)); nd != string(dec) {
				v = v[:len(v)-len(payload)] + base64.StdEncoding.EncodeToString([]byte(nd))
			}
		}
	}
	v = s.text(v)
	for _, p := range s.patterns {
		if strings.Contains(v, string(p.find)) {
			b := []byte(v)
			s.mask(b)
			return string(b)
		}
	}
	return v
}
