package session

import (
	"fmt"
	"unicode/utf8"
)

// Bounds of what an agent's output costs on the host's disk and in the
// engine's memory; the per-session byte caps are config's (ConsoleLogMax,
// AgentLogMax, StoredLogMax, TranscriptMax).
const (
	// maxLogText bounds one line of the log, in the store, agent.log and
	// the events, and the text and input of one transcript entry: a line
	// may be as long as the protocol joins (8 MiB). A Claude Code
	// transcript entry is parsed from the whole line first.
	maxLogText = 64 << 10
	// maxPendingLog bounds the log lines a session holds in memory for
	// the store: when the store falls behind a flood, the oldest pending
	// lines are dropped (agent.log and the events still had them).
	maxPendingLog = 8 << 20
	// flushPendingLog wakes the store's writer early.
	flushPendingLog = 1 << 20
)

// Markers that begin a log file started after older output was dropped
// (see caplog).
const (
	agentLogMarker = "[sandbar] earlier output trimmed\n"
	// transcriptMarker is an entry of kind EntryTrimmed.
	transcriptMarker = `{"kind":"trimmed"}` + "\n"
)

// boundLogText cuts text to maxLogText bytes, before a character the
// bound splits, and says how much was dropped.
func boundLogText(text string) string {
	if len(text) <= maxLogText {
		return text
	}
	cut := maxLogText
	for cut > maxLogText-utf8.UTFMax && cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … [line truncated: %d bytes dropped]", text[:cut], len(text)-cut)
}

// boundEntry cuts a transcript entry's text and input to maxLogText
// bytes each, saying how much was dropped.
func boundEntry(e Entry) Entry {
	e.Text = boundLogText(e.Text)
	e.Input = boundLogText(e.Input)
	return e
}
