package widget

import (
	"image/color"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// Streams of a log line, as the store names them.
const (
	streamStdout uint8 = iota
	streamStderr
	streamSystem
	streamChat
	streamExec
)

// streamNames are the streams' names, by code.
var streamNames = [...]string{streamStdout: "stdout", streamStderr: "stderr", streamSystem: "system", streamChat: "chat", streamExec: "exec"}

func streamCode(s string) uint8 {
	switch s {
	case "stderr":
		return streamStderr
	case "system":
		return streamSystem
	case "chat":
		return streamChat
	case "exec":
		return streamExec
	}
	return streamStdout
}

// logDisplayText is a line as a row of cols characters draws it: the
// time, then the text with tabs expanded and terminal escapes removed,
// cut with "…" where the row ends (Copy gives the whole line). left is
// how many characters of the text are scrolled off to the left; a "…"
// then stands for them.
func logDisplayText(l *logLine, cols, left int) string {
	const stamp = "15:04:05  "
	cols = max(cols-len(stamp), 8)
	t := l.text
	// Only the start of a long line can show: clean no more than that.
	long := false
	if limit := max(8*(cols+left), 256); len(t) > limit {
		t, long = t[:limit], true
	}
	if strings.IndexByte(t, '\x1b') >= 0 || strings.IndexByte(t, '\t') >= 0 || strings.IndexByte(t, '\r') >= 0 {
		t = cleanTerminalText(t)
	}
	if left > 0 {
		skip := 0
		for n := 0; skip < len(t) && n < left; n++ {
			_, w := utf8.DecodeRuneInString(t[skip:])
			skip += w
		}
		if skip >= len(t) && !long {
			t = ""
		} else {
			t = "…" + t[skip:]
		}
	}
	if long || len(t) > cols {
		cut, n := 0, 0
		for cut < len(t) && n < cols {
			_, w := utf8.DecodeRuneInString(t[cut:])
			cut += w
			n++
		}
		if long || cut < len(t) {
			_, last := utf8.DecodeLastRuneInString(t[:cut])
			t = t[:cut-last] + "…"
		}
	}
	return time.Unix(0, l.at).Format("15:04:05") + "  " + t
}

// logLineWidth is how many characters a line's text draws, counted up
// to limit (a line of a megabyte is not counted whole to scroll it).
func logLineWidth(text string, limit int) int {
	if len(text) > limit*4 {
		text = text[:limit*4]
	}
	if strings.IndexByte(text, '\x1b') >= 0 || strings.IndexByte(text, '\t') >= 0 || strings.IndexByte(text, '\r') >= 0 {
		text = cleanTerminalText(text)
	}
	return min(utf8.RuneCountInString(text), limit)
}

// cleanTerminalText expands tabs and drops ANSI escape sequences and
// carriage returns.
func cleanTerminalText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\x1b':
			if i+1 < len(s) && s[i+1] == '[' { // CSI: parameters, then a final byte
				i += 2
				for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
					i++
				}
			} else if i+1 < len(s) && s[i+1] == ']' { // OSC: up to BEL or ST
				i += 2
				for i < len(s) && s[i] != '\a' && !(s[i] == '\x1b' && i+1 < len(s) && s[i+1] == '\\') {
					i++
				}
				if i < len(s) && s[i] == '\x1b' {
					i++
				}
			} else {
				i++
			}
		case c == '\t':
			b.WriteString("    ")
		case c == '\r':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func streamColor(s uint8) color.Color {
	switch s {
	case streamStderr:
		return theme.Color(theme.ColorNameError)
	case streamSystem:
		return theme.Color(theme.ColorNamePrimary)
	case streamChat:
		return theme.Color(theme.ColorNameSuccess)
	case streamExec:
		return theme.Color(theme.ColorNameWarning)
	}
	return theme.Color(theme.ColorNameForeground)
}

func withAlpha(c color.Color, a uint8) color.Color {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = a
	return n
}

// formatCount writes n with thousands separators.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// logRowHeight is the height of one log row: a line of monospace text.
func logRowHeight() float32 {
	size := theme.Size(theme.SizeNameText)
	s, _ := fyne.CurrentApp().Driver().RenderedTextSize("Mg", size, fyne.TextStyle{Monospace: true}, nil)
	return s.Height
}
