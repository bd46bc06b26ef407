package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Corpus is what a hostile agent prints to take over a terminal.
var corpus = []string{
	"\x1b]0;pwned title\x07",              // OSC 0: window title
	"\x1b]2;pwned title\x1b\\",            // OSC 2, ST-terminated
	"\x1b]52;c;cHduZWQ=\x07",              // OSC 52: write the clipboard
	"\x1b[2J\x1b[H fake prompt $ ",        // CSI: clear, home
	"\x1bP+q544e\x1b\\",                   // DCS
	"\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos", // APC, PM, SOS
	"\u009b31mred\u009d0;t\u0007",         // C1 CSI and OSC as code points
	"\x9b31m raw C1 bytes \x9d",           // and as bare bytes
	"over\rwrite\bback\x7fdel\x00nul",     // CR, BS, DEL, NUL
	"bidi \u202eevil\u202c \u2066iso\u2069 \u200e\u200f \u061c",
	"bad utf-8 \xff\xfe\xc3",
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":         "plain\ttext\n",
		"é ü 日本":                "é ü 日本",
		"a\x1b[2Jb":             `a\x1b[2Jb`,
		"bell\a\r":              `bell\x07\x0d`,
		"c1 \u009b31m":          `c1 \x9b31m`,
		"bidi \u202eevil":       `bidi \u202eevil`,
		"arabic mark \u061c":    `arabic mark \u061c`,
		"bad \xff\xfe":          `bad \xff\xfe`,
		"replacement \uFFFD ok": "replacement \uFFFD ok",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := Line("two\nlines\tand a tab"), `two\x0alines\x09and a tab`; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	for _, s := range corpus {
		for _, out := range []string{Text(s), Line(s)} {
			if !Clean(out) || !utf8.ValidString(out) || strings.ContainsRune(out, 0x1b) {
				t.Errorf("%q escaped is %q, which a terminal would still act on", s, out)
			}
		}
	}
}

// TestWriter: a stream escapes as the whole text does, wherever it is
// cut between writes.
func TestWriter(t *testing.T) {
	in := strings.Join(corpus, "\n") + " ünï日本\u202e"
	want := Text(in)
	for cut := range len(in) + 1 {
		var b bytes.Buffer
		w := NewWriter(&b)
		for _, p := range []string{in[:cut], in[cut:]} {
			if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
				t.Fatalf("Write(%q) = %d, %v", p, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, b.String(), want)
		}
	}
	// A sequence left cut at the end shows as its bytes.
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Write([]byte("end \xe6\x97"))
	if b.String() != "end " {
		t.Errorf("before Flush: %q", b.String())
	}
	w.Flush()
	if b.String() != `end \xe6\x97` {
		t.Errorf("after Flush: %q", b.String())
	}
}

// TestJSON: what encoding/json leaves for the terminal is escaped, and
// the JSON still decodes to the same strings.
func TestJSON(t *testing.T) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(corpus); err != nil {
		t.Fatal(err)
	}
	out := JSON(b.Bytes())
	if !Clean(string(out)) || bytes.ContainsRune(out, 0x1b) {
		t.Fatalf("JSON left something for the terminal: %q", out)
	}
	var back []string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	var want []string
	json.Unmarshal(b.Bytes(), &want)
	if len(back) != len(want) {
		t.Fatalf("decoded %d strings, want %d", len(back), len(want))
	}
	for i := range want {
		if back[i] != want[i] {
			t.Errorf("string %d decodes as %q, want %q", i, back[i], want[i])
		}
	}
}
