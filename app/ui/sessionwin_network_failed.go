package ui

import (
	"fmt"
	"strings"

	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// maxFailedShown bounds the failed destinations Show failed lists.
const maxFailedShown = 50

// listFailed shows, below the list, each destination the rules allowed
// but the connection to which failed, and why (it said "see sandbar net
// ID" instead).
func (p *netPanel) listFailed() {
	p.detail.SetText(failedText(p.failedOnes, shortID(p.w.id)))
}

// failedText lists failed connections, one destination a line, the
// latest first.
func failedText(as []store.NetAttempt, id string) string {
	if len(as) == 0 {
		return "No allowed connection failed."
	}
	lines := []string{"Allowed, but the connection failed:"}
	for i, a := range as {
		if i == maxFailedShown {
			lines = append(lines, fmt.Sprintf("And %d more: sandbar net %s lists them all.", len(as)-i, id))
			break
		}
		lines = append(lines, fmt.Sprintf("%s (%s), %s: %s", destText(a), a.Proto, timesText(a),
			sbwidget.ClipRunes(displayLine(a.Error), 300)))
	}
	return strings.Join(lines, "\n")
}
