package secrets

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// replacer returns a strings.Replacer over r's patterns in r's order: it
// finds the leftmost match and, at one position, the earlier pattern,
// which is the rule Redact follows. It is the reference Redact is held to.
func (r *Redactor) replacer() *strings.Replacer {
	args := make([]string, 0, 2*len(r.pats))
	for _, p := range r.pats {
		args = append(args, p.value, p.repl)
	}
	return strings.NewReplacer(args...)
}

// randomText returns text made of pieces of r's patterns (whole, cut
// short, or run together) and random bytes from alphabet.
func randomText(rng *rand.Rand, r *Redactor, alphabet string, pieces int) string {
	var sb strings.Builder
	for range pieces {
		switch rng.IntN(3) {
		case 0:
			if len(r.pats) > 0 {
				v := r.pats[rng.IntN(len(r.pats))].value
				sb.WriteString(v[:1+rng.IntN(len(v))])
			}
		case 1:
			if len(r.pats) > 0 {
				sb.WriteString(r.pats[rng.IntN(len(r.pats))].value)
			}
		default:
			for range rng.IntN(5) {
				sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
		}
	}
	return sb.String()
}

func TestRedactMatchesReplacer(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "abcxy-\"\\\n\t<&é"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 500 {
		m := map[string]string{}
		for i := range 1 + rng.IntN(4) {
			m[string(rune('A'+i))] = word(2 + rng.IntN(12))
		}
		r := NewRedactor(m)
		in := randomText(rng, r, alphabet, 20)
		if got, want := r.Redact(in), r.replacer().Replace(in); got != want {
			t.Fatalf("values %q, input %q:\n got %q\nwant %q", m, in, got, want)
		}
	}
}

func FuzzRedactMatchesReplacer(f *testing.F) {
	f.Add("sk-ant-SECRET", "pa\"ss\\word\n", "xx sk-ant-SECRET yy pa\\\"ss", uint64(7))
	f.Fuzz(func(t *testing.T, v1, v2, in string, seed uint64) {
		r := NewRedactor(map[string]string{"ONE": v1, "TWO": v2})
		rng := rand.New(rand.NewPCG(seed, seed))
		in += randomText(rng, r, in+"x", 8)
		if got, want := r.Redact(in), r.replacer().Replace(in); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// TestWriterHoldsLessThanAPattern checks the Writer's memory bound: what
// it holds back between writes is shorter than the longest pattern.
func TestWriterHoldsLessThanAPattern(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	r := NewRedactor(map[string]string{
		"Q": `pa"ss\wd<é🔑`,
		"L": "first line!\nsecond line!\n",
		"K": "sk-ant-api03-SECRET",
	})
	longest := 0
	for _, p := range r.pats {
		longest = max(longest, len(p.value))
	}
	var sb strings.Builder
	w := r.Writer(&sb).(*redactWriter)
	for range 2000 {
		in := randomText(rng, r, "ab\\\"\n", 1+rng.IntN(3))
		if _, err := w.Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		if len(w.held) >= longest {
			t.Fatalf("holds %d bytes back, the longest pattern is %d: %q", len(w.held), longest, w.held)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
