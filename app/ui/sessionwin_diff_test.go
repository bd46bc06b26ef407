package ui

import (
	"strings"
	"testing"
	"unicode/utf8"

	"sandbar/app/session"
)

// TestDiffLinesShowsTextOnly: a diff comes from the agent's VM, so what
// the view shows of it is characters only, within bounds.
func TestDiffLinesShowsTextOnly(t *testing.T) {
	lines, more := diffLines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new \x1b]0;title\x07 \x1b[2J\r\u202eevil\tend \xff\n")
	if more != "" || len(lines) != 5 {
		t.Fatalf("diffLines: %d lines, more %q", len(lines), more)
	}
	got := lines[4]
	want := `+new \x1b]0;title\x07 \x1b[2J\x0d\u202eevil    end �`
	if got != want {
		t.Errorf("line shown as %q, want %q", got, want)
	}
	for _, r := range strings.Join(lines, "") {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			t.Errorf("a control character %U reaches the view", r)
		}
	}

	// Long lines, many lines, much text, and the manager's own cut.
	long := strings.Repeat("é", diffMaxLineLen+50)
	lines, _ = diffLines("+" + long + "\n")
	if n := utf8.RuneCountInString(lines[0]); n > diffMaxLineLen+2 || !strings.HasSuffix(lines[0], "…") {
		t.Errorf("a long line is shown with %d characters, ending %q", n, lines[0][len(lines[0])-8:])
	}
	many := strings.Repeat("+x\n", diffMaxLines+7)
	lines, more = diffLines(many)
	if len(lines) != diffMaxLines || !strings.Contains(more, "7 more lines") || !strings.Contains(more, "read-only copy") {
		t.Errorf("%d lines, more %q; want %d and a note of 7 more pointing at the read-only copy", len(lines), more, diffMaxLines)
	}
	huge := strings.Repeat(strings.Repeat("y", 1000)+"\n", diffMaxBytes/1000+10)
	lines, more = diffLines(huge)
	if len(strings.Join(lines, "\n")) > diffMaxBytes || more == "" {
		t.Errorf("a %d-byte diff is shown whole (%d lines), more %q", len(huge), len(lines), more)
	}
	lines, more = diffLines("+a\n" + session.DiffTruncated)
	if len(lines) != 1 || !strings.Contains(more, "goes on") {
		t.Errorf("a diff the manager cut: %q, more %q", lines, more)
	}
}
