package dockerbuild

import (
	"bytes"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

type v1Image = v1.Image

// maxLine bounds one line of the builder's output: the guest's output is
// hostile, and a line without an end must not grow without bound.
const maxLine = 1000

// lineWriter splits the builder's output into printable lines for fn,
// keeping the last tail of them.
type lineWriter struct {
	mu   sync.Mutex
	fn   func(string)
	tail int
	buf  []byte
	ring []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\n\r")
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		// A line past maxLine is cut into lines of maxLine.
		for len(w.buf)+len(seg) >= maxLine {
			room := maxLine - len(w.buf)
			w.buf = append(w.buf, seg[:room]...)
			w.emit()
			seg = seg[room:]
		}
		w.buf = append(w.buf, seg...)
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) emit() {
	l := printable(string(w.buf))
	w.buf = w.buf[:0]
	if strings.TrimSpace(l) == "" {
		return
	}
	w.ring = append(w.ring, l)
	if len(w.ring) > w.tail {
		w.ring = w.ring[len(w.ring)-w.tail:]
	}
	if w.fn != nil {
		w.fn(l)
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit()
	}
}

func (w *lineWriter) last() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ring...)
}

// printable drops terminal escapes and other control characters, and
// bytes that are not UTF-8.
func printable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune('?')
		case r == 0x1b:
			// An escape sequence: skip to its final byte.
			j := i + 1
			if j < len(s) && s[j] == '[' {
				j++
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
			}
			i = j + 1
			continue
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Bidi_Control, r):
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// capped keeps the first 4 KiB written to it, for an error.
type capped struct {
	mu  sync.Mutex
	buf []byte
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 4096 - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.TrimSpace(printable(strings.ReplaceAll(string(c.buf), "\n", " | ")))
}
