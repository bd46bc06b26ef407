package ui

import (
	"strings"

	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// healthWords is a retrying or failed session's state in its tray line:
// what its reason says, in a few words ("can't reach the Anthropic API —
// retry 3/10", "failed: the API key was refused — set it in Settings").
func healthWords(s store.Session) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s.Reason), "\n")
	first = sbwidget.ClipRunes(first, 80)
	if s.State == session.StateFailed {
		if first == "" {
			return "failed"
		}
		return "failed: " + lowerFirst(first)
	}
	if first == "" {
		return "retrying"
	}
	return lowerFirst(first)
}

// lowerFirst lower-cases a sentence's first letter for the middle of a
// line, leaving an initialism ("API …") as it is.
func lowerFirst(s string) string {
	if len(s) < 2 || s[1] >= 'A' && s[1] <= 'Z' {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
