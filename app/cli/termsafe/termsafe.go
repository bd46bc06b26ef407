// Package termsafe shows bytes that came from a session's VM as text on
// the person's terminal: every byte a terminal would act on becomes a
// visible escape, so nothing the agent printed, named or logged can move
// the cursor, clear the screen, recolour, retitle the window, write the
// clipboard (OSC 52), or reorder what is shown (bidirectional overrides).
//
// Escaped are: C0 controls but newline and tab (Text) or all of them
// (Line), DEL, C1 controls as code points (U+0080–U+009F), the
// bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E and
// U+2066–U+2069, and bytes that are not UTF-8. A byte or C1 code point
// is written \xNN, any other rune \uNNNN. ESC itself is one of the C0
// controls, so no escape sequence (CSI, OSC, DCS, APC, PM, SOS) survives:
// what follows the ESC is shown as the plain text it is.
//
// Newline stays in Text because the CLI prints multi-line text (diffs,
// log lines) one line at a time anyway; tab stays because it only moves
// the cursor to the next tab stop. Carriage return and backspace, which
// can overwrite what is shown, are escaped.
//
// It is not a sanitiser for anything but a terminal: the bytes a person
// asks for as they are (`--raw`, `sandbar shell`) never pass through it.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text is s with everything a terminal would act on shown as escapes,
// but newline and tab: for text of many lines.
func Text(s string) string { return escape(s, false) }

// Line is s with everything a terminal would act on shown as escapes,
// newline and tab included: for one field (a name, a table cell, a
// title) that must stay on its line.
func Line(s string) string { return escape(s, true) }

// Clean reports whether s prints as it is in Text.
func Clean(s string) bool { return clean(s, false) }

func clean(s string, line bool) bool {
	for i, r := range s {
		if unsafe(r, line) || r == utf8.RuneError && badByte(s, i) {
			return false
		}
	}
	return true
}

func escape(s string, line bool) string {
	if clean(s, line) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && badByte(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r, line) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r, line):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafe reports whether a terminal would act on r; line: newline and
// tab too.
func unsafe(r rune, line bool) bool {
	switch {
	case r == '\n', r == '\t':
		return line
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f,
		r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// badByte reports whether the rune at s[i] decoded as RuneError because
// the byte is not UTF-8 (not because U+FFFD is written there).
func badByte(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}

// Writer escapes a stream as Text does. A UTF-8 sequence cut between two
// writes is kept until the next write completes it (or Flush shows its
// bytes as escapes), so escaping does not depend on how the stream was
// cut.
type Writer struct {
	w       io.Writer
	pending []byte // the start of a UTF-8 sequence cut at the end of the last write
}

// NewWriter returns a Writer that writes the escaped stream to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) written when the
// escaped bytes were.
func (t *Writer) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	t.pending = nil
	// Keep a cut sequence at the end: at most utf8.UTFMax-1 bytes that
	// start a rune and are not yet a full one.
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	if cut == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(t.w, Text(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what a cut UTF-8 sequence left pending, as escapes.
func (t *Writer) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	s := Text(string(t.pending))
	t.pending = nil
	_, err := io.WriteString(t.w, s)
	return err
}

// JSON is JSON text that encoding/json wrote, with every rune a terminal
// would act on written as a \uNNNN escape, which decodes to the same
// string. encoding/json already escapes C0 controls and U+2028/U+2029,
// but writes C1 controls and bidirectional overrides as they are. It
// suits only encoding/json's output: outside its strings there is
// nothing but ASCII punctuation, digits, letters and white space.
func JSON(b []byte) []byte {
	if clean(string(b), false) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		// encoding/json never writes a byte that is not UTF-8; were
		// there one, it would show as \ufffd.
		if unsafe(r, false) || r == utf8.RuneError && size == 1 {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
