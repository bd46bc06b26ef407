package secrets

import (
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// minLineLen is the shortest line of a multi-line value that a Redactor
// looks for on its own, after trimming the spaces around it. A value
// printed raw reaches the logs split into lines, each redacted apart, so
// the whole value never matches; its lines do. Shorter lines ("}", "--",
// a short word) occur by chance too often to be worth redacting.
const minLineLen = 8

// escaping is one way a JSON encoder writes the contents of a string. Every
// way escapes '"' and '\', writes \n, \r and \t, and writes the other
// controls below U+0020 as \u00XX; the flags say what else it does.
type escaping uint8

const (
	// escHTML writes <, > and & as \u003c, \u003e and \u0026 (Go's
	// encoding/json, unless SetEscapeHTML(false)).
	escHTML escaping = 1 << iota
	// escLineSep writes U+2028 and U+2029 as \u2028 and \u2029 (Go's
	// encoding/json always; JavaScript leaves them raw).
	escLineSep
	// escASCII writes DEL and every non-ASCII rune as \uXXXX, a rune
	// outside the Basic Multilingual Plane as a UTF-16 surrogate pair
	// (Python's json.dumps, whose ensure_ascii is on by default).
	escASCII
	// escLongBF writes \b and \f as \u0008 and \u000c (Go before 1.22;
	// JavaScript, Python and later Go write the short forms).
	escLongBF
	// escUpper writes hexadecimal digits in upper case (.NET, some C
	// libraries; JavaScript, Go and Python use lower case).
	escUpper
)

// escapings returns the ways a value is looked for, first in agent output
// and then once more around that, as when a tool's JSON output is quoted
// inside Claude Code's stream-json. The first is JSON.stringify's (and
// Python's with ensure_ascii=False, and Rust's serde_json).
func escapings() [8]escaping {
	return [...]escaping{
		0,
		escUpper,
		escLineSep,
		escLineSep | escHTML,
		escLineSep | escLongBF,
		escLineSep | escHTML | escLongBF,
		escASCII,
		escASCII | escUpper,
	}
}

// forms returns the distinct strings that stand for v in output: v itself,
// v inside a JSON string literal in each of escapings, and each of those
// escaped once more. When v holds several lines, each line of at least
// minLineLen bytes (trimmed) and its forms are added too. The first form is
// v; their order is otherwise unspecified.
func forms(v string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	escaped := func(v string) {
		add(v)
		var once []string
		for _, e := range escapings() {
			if s := jsonEscape(v, e); s != v && !slices.Contains(once, s) {
				add(s)
				once = append(once, s)
			}
		}
		for _, s := range once {
			for _, e := range escapings() {
				add(jsonEscape(s, e))
			}
		}
	}
	escaped(v)
	if !strings.Contains(v, "\n") {
		return out
	}
	for line := range strings.SplitSeq(v, "\n") {
		// TrimSpace also drops the \r of a \r\n line end.
		if line = strings.TrimSpace(line); len(line) >= minLineLen {
			escaped(line)
		}
	}
	return out
}

// jsonEscape returns s as it appears between the quotes of a JSON string
// literal written with escaping e. A byte that is not valid UTF-8 is
// written as U+FFFD, escaped as \ufffd where Go or ensure_ascii would
// (JavaScript and Python never see such a byte: it was replaced, or
// refused, when the text was decoded).
func jsonEscape(s string, e escaping) string {
	const lower, upper = "0123456789abcdef", "0123456789ABCDEF"
	hex := lower
	if e&escUpper != 0 {
		hex = upper
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[r>>shift&0xf])
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\b' && e&escLongBF == 0:
				b.WriteString(`\b`)
			case c == '\f' && e&escLongBF == 0:
				b.WriteString(`\f`)
			case c < 0x20,
				c == 0x7f && e&escASCII != 0,
				(c == '<' || c == '>' || c == '&') && e&escHTML != 0:
				u(rune(c))
			default:
				b.WriteByte(c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		raw := s[i : i+size]
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			if e&(escASCII|escLineSep) != 0 {
				u(r)
			} else {
				b.WriteRune(r)
			}
		case e&escASCII != 0 && r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			u(hi)
			u(lo)
		case e&escASCII != 0,
			(r == '\u2028' || r == '\u2029') && e&escLineSep != 0:
			u(r)
		default:
			b.WriteString(raw)
		}
	}
	return b.String()
}
