package session

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func same(s string) string { return s }

// TestLiveTail: what a tool writes becomes bounded lines a person reads:
// escape sequences out (colours, titles, cursor moves), controls out, a
// carriage return starting the line afresh, invalid UTF-8 and C1
// controls replaced or dropped, pieces joined across writes.
func TestLiveTail(t *testing.T) {
	tests := []struct {
		name    string
		writes  []string
		want    []string
		partial bool
		total   int64
	}{
		{"lines", []string{"a\nb\n"}, []string{"a", "b"}, false, 2},
		{"a partial line", []string{"a\nbc"}, []string{"a", "bc"}, true, 1},
		{"joined across writes", []string{"he", "llo\nwor", "ld\n"}, []string{"hello", "world"}, false, 2},
		{"colours", []string{"\x1b[1;31mred\x1b[0m ok\n"}, []string{"red ok"}, false, 1},
		{"an escape cut across writes", []string{"x\x1b[3", "1my\n"}, []string{"xy"}, false, 1},
		{"a title (OSC) ended by BEL and by ST", []string{"\x1b]0;evil\x07a\x1b]2;evil\x1b\\b\n"}, []string{"ab"}, false, 1},
		{"a carriage return redraws the line", []string{"10%\r50%\r100%\n"}, []string{"100%"}, false, 1},
		{"CRLF", []string{"a\r\nb\r\n"}, []string{"a", "b"}, false, 2},
		{"controls dropped, tab as a space", []string{"a\x07\x08b\tc\x00\n"}, []string{"ab c"}, false, 1},
		{"invalid UTF-8 and C1", []string{"a\xffb\xc2\x9bc\n"}, []string{"a\uFFFDbc"}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lt liveTail
			for _, w := range tt.writes {
				lt.write([]byte(w))
			}
			lines, partial, total := lt.snapshot(same)
			if !slices.Equal(lines, tt.want) || partial != tt.partial || total != tt.total {
				t.Errorf("got %q partial %v total %d, want %q %v %d", lines, partial, total, tt.want, tt.partial, tt.total)
			}
		})
	}
}

// TestLiveTailBounded: a flood keeps LiveLines lines of at most
// LiveLineMax runes, and an endless line or escape holds no more than a
// line's worth.
func TestLiveTailBounded(t *testing.T) {
	var lt liveTail
	for i := 0; i < 10000; i++ {
		lt.write([]byte(strings.Repeat("é", 1000) + "\n"))
	}
	lt.write([]byte(strings.Repeat("x", 1<<20)))
	lines, partial, total := lt.snapshot(same)
	if len(lines) != LiveLines || !partial || total != 10000 {
		t.Fatalf("%d lines (partial %v, total %d), want %d, a partial one, 10000", len(lines), partial, total, LiveLines)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > LiveLineMax || !strings.HasSuffix(l, "…") {
			t.Fatalf("a line of %d runes, want at most %d ending in …", n, LiveLineMax)
		}
	}
	if cap(lt.cur) > 2*curMax {
		t.Errorf("the line being written holds %d bytes", cap(lt.cur))
	}
	lt.write([]byte("\n\x1b[" + strings.Repeat("1", 1<<20)))
	if len(lt.cur) != 0 {
		t.Errorf("an endless escape sequence left %d bytes in the line", len(lt.cur))
	}
}

// TestLiveTailRedacts: every line shown goes through the redactor.
func TestLiveTailRedacts(t *testing.T) {
	var lt liveTail
	lt.write([]byte("token sk-secret\nand sk-secret again"))
	lines, _, _ := lt.snapshot(func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[redacted]") })
	if want := []string{"token [redacted]", "and [redacted] again"}; !slices.Equal(lines, want) {
		t.Errorf("got %q, want %q", lines, want)
	}
}
