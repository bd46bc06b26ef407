package ui

import (
	"fmt"
	"strings"

	"sandbar/app/session"
)

// Bounds of the diff view. A diff is made by git inside the session's VM
// (Backend.FileDiff): its text is the agent's, shown as characters and
// never acted on, and cut to these bounds before it reaches a widget.
const (
	diffMaxBytes   = 2 << 20 // of the diff's text
	diffMaxLines   = 5000    // lines shown
	diffMaxLineLen = 2000    // characters of one line
)

// diffLines turns a diff's text into the lines the view shows: at most
// diffMaxBytes of it, diffMaxLines lines of at most diffMaxLineLen
// characters, each control character shown as its picture (␛ for ESC), so
// nothing in the text can act on the view. more says what was left out,
// "" when nothing was.
func diffLines(text string) (lines []string, more string) {
	cutBytes := 0
	if len(text) > diffMaxBytes {
		cutBytes = len(text) - diffMaxBytes
		text = text[:diffMaxBytes]
	}
	truncated := strings.HasSuffix(text, session.DiffTruncated)
	text = strings.TrimSuffix(text, session.DiffTruncated)
	lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	cutLines := 0
	if len(lines) > diffMaxLines {
		cutLines = len(lines) - diffMaxLines
		lines = lines[:diffMaxLines]
	}
	for i, l := range lines {
		lines[i] = displayLine(l)
	}
	switch {
	case cutLines > 0:
		more = fmt.Sprintf("… %d more lines", cutLines)
	case cutBytes > 0 || truncated:
		more = "… the diff goes on"
	}
	if more != "" {
		more += ": open the read-only copy (Files or Editor above) to see the whole file"
	}
	return lines, more
}

// displayLine is one line of a diff as shown: tabs as four spaces,
// control characters as \xNN and \uNNNN, bytes that are not UTF-8 as �,
// and at most diffMaxLineLen characters.
func displayLine(l string) string {
	var b strings.Builder
	n := 0
	for _, r := range l { // a byte that is not UTF-8 comes as U+FFFD
		if n == diffMaxLineLen {
			b.WriteString(" …")
			break
		}
		n++
		switch {
		case r == '\t':
			b.WriteString("    ")
		// As the command line shows them (termsafe): the Control
		// Pictures block (␛) is in none of the theme's fonts, and drew
		// as whatever the system had, or as boxes.
		case r < 0x20, r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			fmt.Fprintf(&b, `\u%04x`, r) // C1 controls and bidi overrides
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
