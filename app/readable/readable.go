// Package readable turns a session's log into what a person reads. For
// Claude Code, whose stdout is stream-json, that is the assistant's text,
// one line per tool call ("▸ Bash: go test ./..."), each tool's result
// folded to a few lines, API retries in words and each turn's end with
// its time and cost; start-up facts shrink to one short line and the
// rest (usage blobs, the echoed tool results' metadata) is left out.
// Every other agent's lines, and every line that is not stream-json,
// stay as they are.
//
// The CLI (`sandbar logs`, `start --wait`, `chat --wait`) and the
// window's Log tab both render through it, so both read the same. It
// parses nothing itself: session.ParseClaudeLine reads the stream, as it
// does for the transcript. It escapes nothing either: what it returns is
// still the agent's bytes, which the CLI passes through termsafe and the
// window draws as plain text.
package readable

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"sandbar/app/session"
	"sandbar/app/store"
)

// ResultLines is how many lines of a tool's result are shown; the rest
// is counted ("… 12 more lines").
const ResultLines = 4

// Bounds of one readable line, in runes: a tool call's summary, a folded
// result's line, a thinking line.
const (
	callMax   = 160
	resultMax = 240
)

// Claude reports whether a session's agent writes Claude Code's
// stream-json, which this package renders; any other agent's log is
// shown as it is.
func Claude(a store.Agent) bool { return session.AgentKind(a.Kind) == session.AgentClaude }

// Log renders one line of a session's log: for a Claude Code session's
// stdout, the lines a person reads of it (none for a line that says
// nothing to a person); otherwise the line itself. The lines returned
// keep l's sequence number, time and stream, and hold no newline.
func Log(l store.LogLine, claude bool) []store.LogLine {
	if !claude || l.Stream != "stdout" {
		return []store.LogLine{l}
	}
	entries, ok := session.ParseClaudeLine([]byte(l.Text), l.Time)
	if !ok {
		return []store.LogLine{l}
	}
	var out []store.LogLine
	for _, e := range entries {
		for _, t := range Entry(e) {
			out = append(out, store.LogLine{Seq: l.Seq, Stream: l.Stream, Time: l.Time, Text: t})
		}
	}
	return out
}

// Entry is a transcript entry as lines of text, without newlines.
func Entry(e session.Entry) []string {
	switch e.Kind {
	case session.EntryText:
		return textLines(e.Text)
	case session.EntryThinking:
		if first, _, _ := strings.Cut(strings.TrimSpace(e.Text), "\n"); first != "" {
			return []string{"✻ " + clip(first, resultMax)}
		}
	case session.EntryToolUse:
		if s := CallSummary(e.Tool, e.Input); s != "" {
			return []string{"▸ " + e.Tool + ": " + s}
		}
		return []string{"▸ " + e.Tool}
	case session.EntryToolResult:
		return resultLines(e.Text, e.IsError)
	case session.EntryResult:
		return []string{TurnEnd(e)}
	case session.EntrySystem:
		return []string{"· " + e.Text}
	case session.EntryRetry:
		return []string{"↻ " + e.Text}
	case session.EntryUser:
		return prefixed("> ", textLines(e.Text))
	case session.EntryTrimmed:
		return []string{"[" + e.Text + "]"}
	}
	return nil
}

// TurnEnd is a turn's end in words: "✓ Turn done in 12.3 s · $0.0123",
// or "✗ Turn failed: " and why, with what to do.
func TurnEnd(e session.Entry) string {
	if e.IsError {
		return "✗ Turn failed: " + session.FailureReason(e)
	}
	return fmt.Sprintf("✓ Turn done in %s · $%.4f", seconds(e.Duration), e.CostUSD)
}

// seconds is a duration as "12.3 s", or "2 min 5 s" from a minute on.
func seconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// summaryKeys are the input fields that say what a tool call does, in
// the order they are looked for: a command, a path, a pattern, ...
var summaryKeys = [...]string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "prompt"}

// workspace is where a session's repository is in its VM: paths under it
// are shown relative to it, as the person's repository names them.
const workspace = "/workspace/"

// CallSummary is what a tool call does, on one line: the field of its
// input that matters most (Bash's command, Edit's file), else the input
// as compact JSON; "" for an empty input.
func CallSummary(tool, input string) string {
	var in map[string]any
	summary := input
	if json.Unmarshal([]byte(input), &in) == nil {
		if len(in) == 0 {
			return ""
		}
		for _, k := range summaryKeys {
			if s, ok := in[k].(string); ok && strings.TrimSpace(s) != "" {
				summary = strings.TrimPrefix(s, workspace)
				if k == "pattern" {
					if p, ok := in["path"].(string); ok && p != "" {
						summary += " in " + strings.TrimPrefix(p, workspace)
					}
				}
				break
			}
		}
	}
	return clip(strings.Join(strings.Fields(summary), " "), callMax)
}

// resultLines is a tool's result folded: its first ResultLines lines,
// indented, then how many more there are.
func resultLines(text string, isError bool) []string {
	lines := textLines(text)
	mark := "  "
	if isError {
		mark = "  ✗ "
	}
	if len(lines) == 0 {
		if isError {
			return []string{mark + "failed, with no output"}
		}
		return []string{"  (no output)"}
	}
	n := min(len(lines), ResultLines)
	out := make([]string, 0, n+1)
	for i, l := range lines[:n] {
		if i == 0 {
			out = append(out, mark+clip(l, resultMax))
		} else {
			out = append(out, "  "+clip(l, resultMax))
		}
	}
	if more := len(lines) - n; more > 0 {
		out = append(out, fmt.Sprintf("  … %d more %s", more, plural(more, "line", "lines")))
	}
	return out
}

// textLines is text split into lines, trailing spaces and the blank
// lines around it trimmed.
func textLines(text string) []string {
	text = strings.Trim(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if strings.TrimSpace(text) == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return lines
}

func prefixed(p string, lines []string) []string {
	for i := range lines {
		lines[i] = p + lines[i]
	}
	return lines
}

// clip cuts s to max runes, the last of them "…".
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Wrap breaks a line into lines of at most width runes, at spaces where
// it can, for a view that cannot wrap itself (the window's log view).
// The lines after the first keep its indent, or two spaces under a
// "▸ " or "✗ " mark. A width under 20 is taken as 20. At most
// wrapMaxRows lines come of one line (the agent's text is unbounded):
// the last then ends with "…".
func Wrap(line string, width int) []string {
	width = max(width, 20)
	n := utf8.RuneCountInString(line)
	if n <= width {
		return []string{line}
	}
	if limit := width * wrapMaxRows; n > limit {
		line = clip(line, limit)
	}
	rs := []rune(line)
	indent := 0
	for indent < len(rs) && rs[indent] == ' ' {
		indent++
	}
	if indent+1 < len(rs) && rs[indent+1] == ' ' && (rs[indent] == '▸' || rs[indent] == '✗' || rs[indent] == '✓') {
		indent += 2
	}
	indent = min(indent, width/2)
	pad := strings.Repeat(" ", indent)
	var out []string
	start, first := 0, true
	for start < len(rs) {
		room := width
		if !first {
			room -= indent
		}
		end := start + room
		if end >= len(rs) {
			end = len(rs)
		} else if sp := lastSpace(rs[start:end]); rs[end] != ' ' && sp > 0 {
			// Break at the last space, unless one is just past the room.
			end = start + sp
		}
		part := strings.TrimRight(string(rs[start:end]), " ")
		if !first {
			part = pad + part
		}
		out = append(out, part)
		start, first = end, false
		for start < len(rs) && rs[start] == ' ' {
			start++
		}
	}
	return out
}

// wrapMaxRows bounds the lines Wrap makes of one line.
const wrapMaxRows = 200

// lastSpace is the index of the last space in rs, 0 if none is past the
// start.
func lastSpace(rs []rune) int {
	for i := len(rs) - 1; i > 0; i-- {
		if rs[i] == ' ' {
			return i
		}
	}
	return 0
}
