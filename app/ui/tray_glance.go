package ui

import (
	"fmt"
	"strings"

	"sandbar/app/session"
	"sandbar/app/store"
)

// trayGlance counts what the tray's tooltip says of the sessions.
type trayGlance struct {
	running, waiting, paused, suspended, finished, failed int
}

// add counts s, whose notice (until the person looks) is n.
func (g *trayGlance) add(s store.Session, n notice) {
	switch {
	case session.Live(s.State) && s.State == session.StateRunning && s.Activity == session.ActivityWaiting:
		g.waiting++
	case s.State == session.StateRunning && s.Activity == session.ActivityPaused:
		g.paused++
	case session.Live(s.State):
		g.running++
	case s.State == session.StateSuspended:
		g.suspended++
	case n == noticeFinished:
		g.finished++
	case n == noticeFailed, n == noticeNotSaved:
		g.failed++
	}
}

// String is the tooltip: "Sandbar — 2 running, 1 waiting for you",
// "Sandbar — no sessions running".
func (g trayGlance) String() string {
	var parts []string
	if g.running > 0 {
		parts = append(parts, fmt.Sprintf("%d running", g.running))
	}
	if g.waiting > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for you", g.waiting))
	}
	if g.paused > 0 {
		parts = append(parts, fmt.Sprintf("%d paused (disk full)", g.paused))
	}
	if g.suspended > 0 {
		parts = append(parts, fmt.Sprintf("%d suspended", g.suspended))
	}
	if g.finished > 0 {
		parts = append(parts, fmt.Sprintf("%d finished", g.finished))
	}
	if g.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", g.failed))
	}
	if len(parts) == 0 {
		return "Sandbar — no sessions running"
	}
	return "Sandbar — " + strings.Join(parts, ", ")
}
