package readable

import (
	"fmt"

	"sandbar/app/doctor"
	"sandbar/app/session"
)

// A running tool's live output (session.LiveOutput), as the Log tab's live
// area and `sandbar logs -f` show it: a header with the tool and its
// elapsed time, then its last lines marked "│". Its lines are already
// bounded and free of control sequences (session's liveTail); the CLI
// still passes them through termsafe.

// LiveHeader is the running tool and its elapsed time:
// "⋯ Bash: go test ./... · 12.3 s", or "⋯ running · 4.0 s" for a tool
// Claude Code did not name (another agent's).
func LiveHeader(l session.LiveOutput) string {
	what := "running"
	if l.Tool != "" {
		what = l.Tool
		if s := CallSummary(l.Tool, l.Input); s != "" {
			what += ": " + s
		}
	}
	return "⋯ " + clip(what, callMax) + " · " + seconds(l.Elapsed)
}

// LiveLine is one line of a running tool's output, marked.
func LiveLine(text string) string { return "  │ " + text }

// LiveSkipped says how much of a tool's output the live view left out;
// "" when none.
func LiveSkipped(l session.LiveOutput) string {
	if l.Binary {
		return fmt.Sprintf("  │ … binary output, not shown (%s so far)", doctor.HumanBytes(l.Skipped))
	}
	if l.Skipped == 0 {
		return ""
	}
	return fmt.Sprintf("  │ … %d bytes not shown (the tool wrote faster than the live view follows; its result has them)", l.Skipped)
}

// LiveView is the live area's lines: the header, the skipped note, the
// last lines.
func LiveView(l session.LiveOutput) []string {
	out := []string{LiveHeader(l)}
	if s := LiveSkipped(l); s != "" {
		out = append(out, s)
	}
	for _, t := range l.Lines {
		out = append(out, LiveLine(t))
	}
	return out
}
