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

// Redactor replaces secret values with "[redacted:NAME]" in text and
// streams. It is safe for concurrent use; a Writer it returns is too.
type Redactor struct {
	pats     []pattern // longest value first, then by name
	first    [256]bool // first bytes of the values
	maxLen   int
	replacer *strings.Replacer
}

type pattern struct {
	value, repl string
}

// NewRedactor returns a Redactor for secrets (name → value). Values shorter
// than MinRedactLen bytes are ignored (see MinRedactLen). When two names
// share a value, the name first in sorted order is shown.
func NewRedactor(secrets map[string]string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := secrets[n]
		if len(v) < MinRedactLen || seen[v] {
			continue
		}
		seen[v] = true
		r.pats = append(r.pats, pattern{value: v, repl: "[redacted:" + n + "]"})
	}
	// Longest first: at any position the longest value that matches wins,
	// so a value that contains another is redacted whole. SortStable keeps
	// name order among equal lengths.
	slices.SortStableFunc(r.pats, func(a, b pattern) int { return len(b.value) - len(a.value) })
	args := make([]string, 0, 2*len(r.pats))
	for _, p := range r.pats {
		args = append(args, p.value, p.repl)
		r.first[p.value[0]] = true
		r.maxLen = max(r.maxLen, len(p.value))
	}
	// strings.Replacer matches leftmost first and, at one position, prefers
	// the earlier argument: exactly the longest-first rule above.
	r.replacer = strings.NewReplacer(args...)
	return r
}

// Redact returns s with every occurrence of a value replaced by
// "[redacted:NAME]". Matches are found left to right, and at one position
// the longest value wins; replaced text is not searched again.
func (r *Redactor) Redact(s string) string {
	if len(r.pats) == 0 {
		return s
	}
	return r.replacer.Replace(s)
}

// Writer returns a writer that redacts what is written through it to w. A
// value split across Write calls is still redacted: up to maxLen-1 bytes
// that could begin a value are held back until the next Write shows whether
// they do. Close writes what is held back (it does not close w); a Writer
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
// it could not decide yet: the point from which one of the values (one
// preferred over any that matches there) might still match once more input
// arrives. With final set, nothing more will arrive and everything is
// decided.
func (r *Redactor) scan(b []byte, out *[]byte, final bool) []byte {
	i, done := 0, 0
	for i < len(b) {
		if !r.first[b[i]] {
			// Skip to the next byte that can start a value.
			j := i + 1
			for j < len(b) && !r.first[b[j]] {
				j++
			}
			i = j
			continue
		}
		rest := b[i:]
		decided := false
		for _, p := range r.pats {
			if len(rest) >= len(p.value) {
				if string(rest[:len(p.value)]) == p.value {
					*out = append(*out, b[done:i]...)
					*out = append(*out, p.repl...)
					i += len(p.value)
					done = i
					decided = true
					break
				}
				continue
			}
			if !final && p.value[:len(rest)] == string(rest) {
				// A value preferred to any shorter match here may still
				// match: wait for more input.
				*out = append(*out, b[done:i]...)
				return b[i:]
			}
		}
		if !decided {
			i++
		}
	}
	*out = append(*out, b[done:]...)
	return nil
}
