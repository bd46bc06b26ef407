package protocol

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// fullScan is the rule textual implements, without its shortcuts.
func fullScan(p []byte) bool {
	extra := 0
	for _, c := range p {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"', '\\', '\n', '\r', '\t':
			extra++
		default:
			extra += 5
		}
	}
	return extra <= len(p)/3 && utf8.Valid(p)
}

// TestTextualShortcuts checks the early exits of textual change no
// answer, on inputs on both sides of the rule.
func TestTextualShortcuts(t *testing.T) {
	inputs := [][]byte{
		nil, {},
		[]byte("plain text\n"),
		[]byte("héllo wörld ✓\n"),
		bytes.Repeat([]byte{0}, 1000),
		bytes.Repeat([]byte("a\x00"), 100),
		bytes.Repeat([]byte("abcdefghij\x00"), 100),
		[]byte(strings.Repeat("x", 300) + "\xff"),
		[]byte("\xff" + strings.Repeat("x", 300)),
		[]byte(strings.Repeat("y", 255) + "é" + strings.Repeat("z", 10)),
		[]byte(strings.Repeat("\"\\", 200)),
		[]byte(strings.Repeat("\t\n", 100) + "ok"),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abc \n\t\"\\\x00\x01\x7f\xc3\xa9\xe2\x9c\x93\xff\x80")
	for range 2000 {
		b := make([]byte, rng.IntN(700))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		inputs = append(inputs, b)
	}
	for i := range 50 {
		b := make([]byte, 1+rng.IntN(4096))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		inputs = append(inputs, b, bytes.Repeat([]byte{'a' + byte(i%26)}, rng.IntN(9000)))
	}
	for i, in := range inputs {
		if got, want := textual(in), fullScan(in); got != want {
			t.Fatalf("input %d (%q...): textual = %v, the rule says %v", i, in[:min(len(in), 40)], got, want)
		}
	}
}

func TestSetPayloadCopies(t *testing.T) {
	in := []byte{0, 1, 2, 0xff}
	var e Event
	e.SetPayload(in)
	in[0] = 9
	if e.B64[0] != 0 {
		t.Fatal("SetPayload kept a reference to its input")
	}
}
