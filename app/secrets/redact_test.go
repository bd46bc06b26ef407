package secrets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"sandbar/app/secrets"
)

func TestRedact(t *testing.T) {
	r := secrets.NewRedactor(map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-api03-SECRET",
		"SHORT":             "abc",    // under MinRedactLen: ignored
		"PREFIX":            "sk-ant", // a prefix of the longer key
		"GITHUB_TOKEN":      "ghp_TOKEN",
		"SAME_AS_GITHUB":    "ghp_TOKEN",
		"EMPTY":             "",
	})
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"nothing here, abc", "nothing here, abc"},
		{"key=sk-ant-api03-SECRET;", "key=[redacted:ANTHROPIC_API_KEY];"},
		{"sk-ant-api03-SECRETsk-ant-api03-SECRET", "[redacted:ANTHROPIC_API_KEY][redacted:ANTHROPIC_API_KEY]"},
		// The shorter value inside the longer one does not break it up.
		{"sk-ant-api03-SECRET and sk-ant alone", "[redacted:ANTHROPIC_API_KEY] and [redacted:PREFIX] alone"},
		{"sk-ant-api03-SECRE", "[redacted:PREFIX]-api03-SECRE"},
		// Shared values show the first name in sorted order.
		{"ghp_TOKEN", "[redacted:GITHUB_TOKEN]"},
		{"ghp_TOKEsk-ant-api03-SECRETN", "ghp_TOKE[redacted:ANTHROPIC_API_KEY]N"},
		{"ünïcödé sk-ant-api03-SECRET ✓", "ünïcödé [redacted:ANTHROPIC_API_KEY] ✓"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactOverlap(t *testing.T) {
	// Values that overlap each other: leftmost first, longest at a tie.
	r := secrets.NewRedactor(map[string]string{"A": "xxabcd", "B": "abcdyy", "C": "abcdyyzz"})
	for _, tc := range []struct{ in, want string }{
		{"xxabcdyy", "[redacted:A]yy"},
		{"abcdyyzz", "[redacted:C]"},
		{"abcdyyz", "[redacted:B]z"},
		{"xabcdyyzz", "x[redacted:C]"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactNothing(t *testing.T) {
	for _, r := range []*secrets.Redactor{secrets.NewRedactor(nil), secrets.NewRedactor(map[string]string{"X": "ab"})} {
		if got := r.Redact("ab cd"); got != "ab cd" {
			t.Errorf("Redact = %q", got)
		}
		var buf bytes.Buffer
		w := r.Writer(&buf)
		io.WriteString(w, "ab ")
		io.WriteString(w, "cd")
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if buf.String() != "ab cd" {
			t.Errorf("Writer wrote %q", buf.String())
		}
	}
}

// writeSplit writes in through r's Writer in pieces cut at the given
// offsets and returns what came out.
func writeSplit(t *testing.T, r *secrets.Redactor, in string, cuts ...int) string {
	t.Helper()
	var buf bytes.Buffer
	w := r.Writer(&buf)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		n, err := io.WriteString(w, in[prev:c])
		if err != nil || n != c-prev {
			t.Fatalf("Write: %d, %v", n, err)
		}
		prev = c
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestWriterEverySplit(t *testing.T) {
	for _, tc := range []struct {
		secrets map[string]string
		ins     []string
		leak    []string // what may not be left in the output
	}{{
		secrets: map[string]string{
			"ANTHROPIC_API_KEY": "sk-ant-api03-SECRET",
			"PREFIX":            "sk-ant",
			"GITHUB_TOKEN":      "ghp_TOKEN",
		},
		ins: []string{
			"line 1\nexport ANTHROPIC_API_KEY=sk-ant-api03-SECRET\nline 3\n",
			"sk-ant-api03-SECRETghp_TOKENsk-ant-api03-SECRE",
			"ghp_TOKghp_TOKEN sk-ansk-ant sk-ant-api03-SECRET",
			"sk-ant-api03-SECRET",
		},
		leak: []string{"SECRET", "ghp_TOKEN"},
	}, {
		// Values in their JSON and line forms, the forms overlapping.
		secrets: map[string]string{
			"QUOTE": `pa"ss\wd`,
			"EMOJI": "k🔑\u2028e<",
			"LINES": "first line!\nsecond line!",
		},
		ins: []string{
			`x="pa\"ss\\wd" y=pa"ss\wd z=pa\\\"ss\\\\wd cut:pa\"ss\\w`,
			"k🔑\u2028e< k\\ud83d\\udd11\\u2028e<k\\uD83D\\uDD11\\u2028e<k🔑\\u2028e\\u003c cut:k🔑\\u2028",
			"first line!\nsecond line!\nfirst line!\\nsecond line! first line",
		},
		leak: []string{`pa"ss`, `ss\\wd`, "e<", "e\\u003c", "d83d", "D83D", "first line!", "second line!"},
	}} {
		r := secrets.NewRedactor(tc.secrets)
		for _, in := range tc.ins {
			want := r.Redact(in)
			for _, s := range tc.leak {
				if strings.Contains(want, s) {
					t.Fatalf("Redact left %q in %q", s, want)
				}
			}
			// Every single split point, and every pair.
			for i := 0; i <= len(in); i++ {
				if got := writeSplit(t, r, in, i); got != want {
					t.Fatalf("split at %d: %q, want %q", i, got, want)
				}
				for j := i; j <= len(in); j++ {
					if got := writeSplit(t, r, in, i, j); got != want {
						t.Fatalf("split at %d and %d: %q, want %q", i, j, got, want)
					}
				}
			}
			// One byte at a time.
			cuts := make([]int, 0, len(in))
			for i := 1; i < len(in); i++ {
				cuts = append(cuts, i)
			}
			if got := writeSplit(t, r, in, cuts...); got != want {
				t.Fatalf("byte by byte: %q, want %q", got, want)
			}
		}
	}
}

func TestWriterRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcxy-"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 300 {
		m := map[string]string{}
		for i := range 1 + rng.IntN(4) {
			m[string(rune('A'+i))] = word(4 + rng.IntN(5))
		}
		r := secrets.NewRedactor(m)
		// Text built partly from the values, so they occur and overlap.
		var sb strings.Builder
		for range 20 {
			if rng.IntN(2) == 0 {
				for _, v := range m {
					sb.WriteString(v[:1+rng.IntN(len(v))])
					break
				}
			} else {
				sb.WriteString(word(rng.IntN(4)))
			}
		}
		in := sb.String()
		want := r.Redact(in)
		var cuts []int
		for i := 1; i < len(in); i++ {
			if rng.IntN(4) == 0 {
				cuts = append(cuts, i)
			}
		}
		if got := writeSplit(t, r, in, cuts...); got != want {
			t.Fatalf("values %q, input %q cut at %v:\n got %q\nwant %q", m, in, cuts, got, want)
		}
	}
}

func TestWriterHoldsBackLittle(t *testing.T) {
	r := secrets.NewRedactor(map[string]string{"K": "0123456789"})
	var buf bytes.Buffer
	w := r.Writer(&buf)
	io.WriteString(w, "hello 01234")
	// "01234" may begin the value; everything before it is out.
	if buf.String() != "hello " {
		t.Fatalf("after the first write: %q", buf.String())
	}
	io.WriteString(w, "5678X")
	if buf.String() != "hello 012345678X" {
		t.Fatalf("after the second write: %q", buf.String())
	}
	io.WriteString(w, "012345678")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "hello 012345678X012345678" {
		t.Fatalf("after Close: %q", buf.String())
	}
	if _, err := w.Write([]byte("more")); !errors.Is(err, secrets.ErrWriterClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterError(t *testing.T) {
	r := secrets.NewRedactor(map[string]string{"K": "secret-value"})
	w := r.Writer(&failWriter{n: 1})
	if _, err := io.WriteString(w, "first line\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "second secret-value\n"); err == nil {
		t.Fatal("no error from a failing writer")
	}
	if _, err := io.WriteString(w, "third\n"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("the error is not sticky: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close hid the error")
	}
}

// FuzzWriter checks that the Writer writes what Redact returns, whatever
// the values and however the input is cut, with the values in the input
// raw and as encoding/json writes them, once and nested.
func FuzzWriter(f *testing.F) {
	f.Add("sk-ant-SECRET", "sk-ant", "xx sk-ant-SECRET yy sk-an", uint64(7))
	f.Add("pa\"ss\\wd\n<é>", "line one!\nline two!", "xx\\\"", uint64(8))
	f.Fuzz(func(t *testing.T, v1, v2, in string, seed uint64) {
		r := secrets.NewRedactor(map[string]string{"ONE": v1, "TWO": v2})
		rng := rand.New(rand.NewPCG(seed, seed))
		var forms []string
		for _, v := range []string{v1, v2} {
			for _, html := range []bool{true, false} {
				once := jsonString(t, v, html)
				forms = append(forms, v, once, jsonString(t, once, html), jsonString(t, `{"v": "`+once+`"}`, html))
			}
		}
		var sb strings.Builder
		for _, c := range []byte(in) {
			if rng.IntN(8) == 0 {
				f := forms[rng.IntN(len(forms))]
				sb.WriteString(f[:rng.IntN(len(f)+1)])
			}
			sb.WriteByte(c)
		}
		for range 1 + rng.IntN(3) {
			sb.WriteString(forms[rng.IntN(len(forms))])
		}
		in = sb.String()
		want := r.Redact(in)
		var cuts []int
		for i := 1; i < len(in); i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		if got := writeSplit(t, r, in, cuts...); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// jsonString returns s as encoding/json writes it between the quotes of a
// string, with or without HTML escaping.
func jsonString(t *testing.T, s string, html bool) string {
	t.Helper()
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	if err := e.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\"\n")
}

// TestRedactorConcurrent uses one Redactor from several goroutines, by
// Redact and by Writers of their own and one shared (run with -race).
func TestRedactorConcurrent(t *testing.T) {
	r := secrets.NewRedactor(map[string]string{"Q": `pa"ss\wd`, "L": "first line!\nsecond line!"})
	in := `x="pa\"ss\\wd" first line!\nsecond line! pa\\\"ss\\\\wd `
	want := r.Redact(in)
	var shared bytes.Buffer
	sw := r.Writer(&shared)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := r.Redact(in); got != want {
					t.Errorf("Redact = %q, want %q", got, want)
					return
				}
				var buf bytes.Buffer
				w := r.Writer(&buf)
				io.WriteString(w, in[:7])
				io.WriteString(w, in[7:])
				if err := w.Close(); err != nil || buf.String() != want {
					t.Errorf("Writer wrote %q (%v), want %q", buf.String(), err, want)
					return
				}
				io.WriteString(sw, in)
			}
		})
	}
	wg.Wait()
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if shared.String() != strings.Repeat(want, 8*50) {
		t.Errorf("the shared Writer wrote %d bytes, want %d", shared.Len(), 8*50*len(want))
	}
}
