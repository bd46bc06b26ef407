package widget

import "time"

// LogLine is one line of a log, as a LogView shows it.
type LogLine struct {
	Seq    int64  // 1, 2, ... in the order the lines were written
	Stream string // "stdout", "stderr", "system", "chat", "exec": picks its colour
	Time   time.Time
	Text   string
}

// EntryKind is what an Entry of a transcript is.
type EntryKind string

// Transcript entry kinds.
const (
	EntryUser       EntryKind = "user"        // a prompt or chat message sent to the agent
	EntryText       EntryKind = "text"        // assistant text
	EntryThinking   EntryKind = "thinking"    // assistant reasoning, when the agent shows it
	EntryToolUse    EntryKind = "tool_use"    // a tool call
	EntryToolResult EntryKind = "tool_result" // its result
	EntryResult     EntryKind = "result"      // end of a turn: cost, duration
	EntrySystem     EntryKind = "system"      // agent start-up facts (model, tools)
	EntryRetry      EntryKind = "api_retry"   // a failed request to the model API, retried: Text says it
	EntryTrimmed    EntryKind = "trimmed"     // older entries were dropped or not read: Text says it
)

// Entry is one item of a transcript, as a TranscriptView shows it.
type Entry struct {
	Kind EntryKind
	Time time.Time
	Text string
	// Tool calls and results.
	Tool    string
	ToolID  string
	Input   string // the call's input, compact JSON
	IsError bool
	// Results.
	CostUSD  float64
	Duration time.Duration
	Turns    int
	// Problem is, for a failed turn, what went wrong and what to do, in
	// words ("The API key was refused — set it in Settings").
	Problem string
}
