package secrets

import (
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
)

// MinRedactLen is the shortest value a Redactor looks for. Shorter values
// are ignored: "abc" or "1" occur by chance in ordinary output, and
// redacting every such occurrence would mangle logs while revealing which
// short strings a secret consists of.
const MinRedactLen = 4

// Every pattern is at least 4 bytes long: its first four bytes index it
// (Redactor.buckets). This fails to compile if MinRedactLen breaks that.
const _ = uint(MinRedactLen - 4)

// Redactor replaces secret values with "[redacted:NAME]" in text and
// streams, in the forms they take in agent output: raw, inside a JSON
// string (as JavaScript, Go or Python escape it, once or twice), and line
// by line. It is safe for concurrent use; a Writer it returns is too.
type Redactor struct {
	pats []pattern // longest first, then by name; distinct values

	// Where a pattern may start, by what it starts with: its first byte,
	// its first two (a bit per pair), its first three, and its first four
	// (the patterns that start so, in the order of pats).
	first   [256]bool
	pairs   [1 << 16 / 64]uint64
	three   map[uint32]bool
	buckets map[uint32][]int32
}

type pattern struct {
	value, repl string
}

// NewRedactor returns a Redactor for secrets (name → value). Values shorter
// than MinRedactLen bytes are ignored (see MinRedactLen). Each value is
// looked for in these forms, all shown as "[redacted:NAME]":
//
//   - the value itself;
//   - the value inside a JSON string literal, as written by JavaScript's
//     JSON.stringify, Go's encoding/json (with or without HTML escaping,
//     before or since Go 1.22) and Python's json.dumps (ensure_ascii, in
//     lower- or upper-case hex);
//   - each of those escaped once more, as when a tool's JSON output is
//     quoted inside Claude Code's stream-json;
//   - for a value of several lines, each line at least 8 bytes long once
//     trimmed, and its JSON forms: a value printed raw reaches a log split
//     into lines, which are redacted one by one.
//
// When two names share a form, the name first in sorted order is shown.
// Most values have one to a few forms; one with every kind of character
// escaped has at most 73, and each of its lines as many again.
func NewRedactor(secrets map[string]string) *Redactor {
	r := &Redactor{three: map[uint32]bool{}, buckets: map[uint32][]int32{}}
	seen := map[string]bool{}
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := secrets[n]
		if len(v) < MinRedactLen {
			continue
		}
		repl := "[redacted:" + n + "]"
		for _, f := range forms(v) {
			if !seen[f] {
				seen[f] = true
				r.pats = append(r.pats, pattern{value: f, repl: repl})
			}
		}
	}
	// Longest first: at any position the longest form that matches wins,
	// so a value that contains another, or a value's line, is redacted
	// whole. SortStable keeps name order among equal lengths.
	slices.SortStableFunc(r.pats, func(a, b pattern) int { return len(b.value) - len(a.value) })
	for i, p := range r.pats {
		v := p.value
		r.first[v[0]] = true
		pair := uint(v[0])<<8 | uint(v[1])
		r.pairs[pair/64] |= 1 << (pair % 64)
		r.three[uint32(v[0])|uint32(v[1])<<8|uint32(v[2])<<16] = true
		k := key4(v, 0)
		r.buckets[k] = append(r.buckets[k], int32(i))
	}
	return r
}

func key4[S string | []byte](s S, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// next finds the first position at or after i where a pattern matches in
// s, and returns it with the index of the pattern: of all that match there,
// the longest. Unless final, it stops instead, with the pattern -1, at the
// first position where the input so far is a proper prefix of a pattern
// that would be preferred over any that matches there: more input may
// decide either way. With nothing found it returns len(s), -1.
func next[S string | []byte](r *Redactor, s S, i int, final bool) (int, int) {
	n := len(s)
	for ; i+1 < n; i++ {
		pair := uint(s[i])<<8 | uint(s[i+1])
		if r.pairs[pair/64]&(1<<(pair%64)) == 0 {
			continue
		}
		if n-i < 4 {
			break
		}
		for _, pi := range r.buckets[key4(s, i)] {
			v := r.pats[pi].value
			if len(v) <= n-i {
				if string(s[i:i+len(v)]) == v {
					return i, int(pi)
				}
			} else if !final && string(s[i:]) == v[:n-i] {
				return i, -1
			}
		}
	}
	if !final {
		// Fewer than four bytes left: a pattern may begin here.
		for ; i < n; i++ {
			switch n - i {
			case 1:
				if r.first[s[i]] {
					return i, -1
				}
			case 2:
				if pair := uint(s[i])<<8 | uint(s[i+1]); r.pairs[pair/64]&(1<<(pair%64)) != 0 {
					return i, -1
				}
			case 3:
				if r.three[uint32(s[i])|uint32(s[i+1])<<8|uint32(s[i+2])<<16] {
					return i, -1
				}
			}
		}
	}
	return n, -1
}

// Redact returns s with every occurrence of a value, in any of its forms,
// replaced by "[redacted:NAME]". Matches are found left to right, and at
// one position the longest form wins; replaced text is not searched again.
func (r *Redactor) Redact(s string) string {
	if len(r.pats) == 0 {
		return s
	}
	at, pi := next(r, s, 0, true)
	if pi < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	done := 0
	for pi >= 0 {
		p := r.pats[pi]
		b.WriteString(s[done:at])
		b.WriteString(p.repl)
		done = at + len(p.value)
		at, pi = next(r, s, done, true)
	}
	b.WriteString(s[done:])
	return b.String()
}

// Writer returns a writer that redacts what is written through it to w. A
// value split across Write calls is still redacted: fewer bytes than the
// longest form of a value, that could begin one, are held back until the
// next Write shows whether they do. Close writes what is held back (it does not close w); a Writer
// must be closed or that tail is lost. The output is exactly Redact of all
// the input, whatever the split.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	return &redactWriter{r: r, w: w}
}

// ErrWriterClosed is returned by a Write after Close.
var ErrWriterClosed = errors.New("redacting writer is closed")

type redactWriter struct {
	r      *Redactor
	w      io.Writer
	mu     sync.Mutex
	held   []byte // input not yet decided: a possible start of a value
	out    []byte // scratch output buffer
	err    error  // sticky error from w
	closed bool
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	switch {
	case rw.closed:
		return 0, ErrWriterClosed
	case rw.err != nil:
		return 0, rw.err
	}
	if len(rw.r.pats) == 0 {
		n, err := rw.w.Write(p)
		rw.err = err
		return n, err
	}
	rw.held = append(rw.held, p...)
	rw.out = rw.out[:0]
	rest := rw.r.scan(rw.held, &rw.out, false)
	if err := rw.flush(); err != nil {
		return 0, err
	}
	// Keep the undecided tail, in a buffer of its own so held never grows
	// without bound.
	rw.held = append(rw.held[:0], rest...)
	return len(p), nil
}

// Close writes the held-back tail, redacted. It does not close the
// underlying writer.
func (rw *redactWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.closed {
		return rw.err
	}
	rw.closed = true
	if rw.err != nil || len(rw.held) == 0 {
		return rw.err
	}
	rw.out = rw.out[:0]
	rw.r.scan(rw.held, &rw.out, true)
	rw.held = nil
	return rw.flush()
}

func (rw *redactWriter) flush() error {
	if len(rw.out) == 0 {
		return nil
	}
	if _, err := rw.w.Write(rw.out); err != nil {
		rw.err = err
		return err
	}
	return nil
}

// scan appends the redacted form of b to out and returns the suffix of b
// it could not decide yet: the point from which one of the patterns (one
// preferred over any that matches there) might still match once more input
// arrives. With final set, nothing more will arrive and everything is
// decided.
func (r *Redactor) scan(b []byte, out *[]byte, final bool) []byte {
	done := 0
	for {
		at, pi := next(r, b, done, final)
		*out = append(*out, b[done:at]...)
		if at == len(b) {
			return nil
		}
		if pi < 0 {
			return b[at:]
		}
		p := r.pats[pi]
		*out = append(*out, p.repl...)
		done = at + len(p.value)
	}
}
