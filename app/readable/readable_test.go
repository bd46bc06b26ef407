package readable

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the renderer gives")

// render reads a capture as a Claude Code session's log (each line its
// stdout) and renders it.
func render(t *testing.T, path string, claude bool) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	seq := int64(0)
	at := time.Date(2026, 11, 28, 8, 35, 0, 0, time.UTC)
	for sc.Scan() {
		seq++
		for _, l := range Log(store.LogLine{Seq: seq, Stream: "stdout", Time: at, Text: sc.Text()}, claude) {
			if strings.Contains(l.Text, "\n") {
				t.Errorf("line %d renders with a newline: %q", seq, l.Text)
			}
			if l.Seq != seq || l.Stream != "stdout" || !l.Time.Equal(at) {
				t.Errorf("line %d renders as %+v: the line's seq, stream and time are lost", seq, l)
			}
			out.WriteString(l.Text + "\n")
		}
	}
	return out.String()
}

// TestGolden: real captures of Claude Code's stream-json (a turn with
// Bash, Write and Read calls, a failing command and escapes in a
// result; the API failures of app/session/testdata/claude) render as
// the golden files say.
func TestGolden(t *testing.T) {
	captures, _ := filepath.Glob("../session/testdata/claude/*.jsonl")
	captures = append(captures, "testdata/tools.jsonl")
	for _, c := range captures {
		t.Run(filepath.Base(c), func(t *testing.T) {
			got := render(t, c, true)
			golden := filepath.Join("testdata", strings.TrimSuffix(filepath.Base(c), ".jsonl")+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./app/readable -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s renders as\n%s\nwant\n%s", c, got, want)
			}
			if strings.Contains(got, `"type"`) || strings.Contains(got, "session_id") {
				t.Errorf("%s: stream-json left in what a person reads:\n%s", c, got)
			}
		})
	}
}

// TestWrap: a long line breaks at spaces within the width, a word wider
// than it is cut, and the lines after the first keep the indent.
func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		in    string
		width int
		want  []string
	}{
		{"short", 20, []string{"short"}},
		{"the quick brown fox jumps over the lazy dog", 20, []string{"the quick brown fox", "jumps over the lazy", "dog"}},
		{"  indented result line that goes on and on", 20, []string{"  indented result", "  line that goes on", "  and on"}},
		{"▸ Bash: echo one two three four five six", 20, []string{"▸ Bash: echo one two", "  three four five", "  six"}},
		{strings.Repeat("x", 45), 20, []string{strings.Repeat("x", 20), strings.Repeat("x", 20), strings.Repeat("x", 5)}},
		{"é" + strings.Repeat("é", 24), 5, []string{strings.Repeat("é", 20), strings.Repeat("é", 5)}},
	} {
		got := Wrap(tt.in, tt.width)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
		for _, l := range got {
			if n := len([]rune(l)); n > max(tt.width, 20) {
				t.Errorf("Wrap(%q, %d) gives a line of %d runes: %q", tt.in, tt.width, n, l)
			}
		}
	}
}

// TestWrapBounded: a line of a megabyte wraps to at most wrapMaxRows
// lines, the last cut with "…".
func TestWrapBounded(t *testing.T) {
	got := Wrap(strings.Repeat("word ", 200000), 100)
	if len(got) > wrapMaxRows || !strings.HasSuffix(got[len(got)-1], "…") {
		t.Errorf("a megabyte wraps to %d lines, the last %q", len(got), got[len(got)-1])
	}
}
