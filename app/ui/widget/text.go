package widget

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// ClipRunes cuts s to n runes, saying how much was left out.
func ClipRunes(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n < 40 {
		return string(r[:n-1]) + "…"
	}
	return string(r[:n]) + fmt.Sprintf("… (%d more characters)", len(r)-n)
}

// RoundDuration keeps a duration readable (for a transcript's turns and
// the app's own timings): ms below a second, else 0.1 s.
func RoundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
