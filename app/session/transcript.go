package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// EntryKind says what a transcript entry is.
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
	EntryRetry      EntryKind = "api_retry"   // a request to the model API failed and is retried
)

// Entry is one item of a Claude Code session's transcript.
type Entry struct {
	Kind EntryKind `json:"kind"`
	Time time.Time `json:"time"`
	Text string    `json:"text,omitempty"`
	// Tool calls and results.
	Tool    string `json:"tool,omitempty"`
	ToolID  string `json:"tool_id,omitempty"`
	Input   string `json:"input,omitempty"` // the call's input, compact JSON
	IsError bool   `json:"is_error,omitempty"`
	// Results.
	CostUSD  float64       `json:"cost_usd,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Turns    int           `json:"turns,omitempty"`
	Subtype  string        `json:"subtype,omitempty"` // the result's: "success", "error_max_turns", ...
	// Trouble with the model API (retries, error results): Problem is
	// it in words ("The API key was refused"), APIError its APIProblem,
	// Status the HTTP status (0: none came).
	Problem    string `json:"problem,omitempty"`
	APIError   string `json:"api_error,omitempty"`
	Status     int    `json:"status,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	MaxRetries int    `json:"max_retries,omitempty"`
}

// claudeLine is the part of a Claude Code stream-json line we read.
type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"`
	Message *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// result
	IsError      bool    `json:"is_error"`
	Result       string  `json:"result"`
	DurationMS   int64   `json:"duration_ms"`
	NumTurns     int     `json:"num_turns"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	CostUSD      float64 `json:"cost_usd"` // older agents
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ParseClaudeLine turns one line of `claude --output-format stream-json`
// into transcript entries. ok is false when the line is not a stream-json
// object (the agent printed something else); unknown types give no
// entries but ok, so a newer agent's additions are ignored, not errors.
func ParseClaudeLine(line []byte, at time.Time) (entries []Entry, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var l claudeLine
	if err := json.Unmarshal(line, &l); err != nil || l.Type == "" {
		return nil, false
	}
	switch l.Type {
	case "system":
		switch l.Subtype {
		case "init":
			text := "agent started"
			if l.Model != "" {
				text += " (model " + l.Model + ")"
			}
			entries = append(entries, Entry{Kind: EntrySystem, Time: at, Text: text})
		case "api_retry":
			entries = append(entries, readAPIFields(line).retryEntry(Entry{Time: at}))
		}
	case "assistant", "user":
		if l.Message == nil {
			return nil, true
		}
		if l.Type == "assistant" && readAPIFields(line).apiErrorMessage() {
			// The turn's result follows and says it.
			return nil, true
		}
		for _, b := range contentBlocks(l.Message.Content) {
			switch b.Type {
			case "text":
				if l.Type == "assistant" && strings.TrimSpace(b.Text) != "" {
					entries = append(entries, Entry{Kind: EntryText, Time: at, Text: b.Text})
				}
			case "thinking":
				if b.Thinking != "" {
					entries = append(entries, Entry{Kind: EntryThinking, Time: at, Text: b.Thinking})
				}
			case "tool_use":
				entries = append(entries, Entry{Kind: EntryToolUse, Time: at, Tool: b.Name, ToolID: b.ID, Input: compact(b.Input)})
			case "tool_result":
				entries = append(entries, Entry{Kind: EntryToolResult, Time: at, ToolID: b.ToolUseID, Text: resultText(b.Content), IsError: b.IsError})
			}
		}
	case "result":
		cost := l.TotalCostUSD
		if cost == 0 {
			cost = l.CostUSD
		}
		e := Entry{Kind: EntryResult, Time: at, Text: l.Result, IsError: l.IsError || (l.Subtype != "" && l.Subtype != "success"),
			CostUSD: cost, Duration: time.Duration(l.DurationMS) * time.Millisecond, Turns: l.NumTurns, Subtype: l.Subtype}
		if e.IsError {
			readAPIFields(line).resultProblem(&e)
		}
		entries = append(entries, e)
	}
	return entries, true
}

// contentBlocks reads message content, which is a string or a list of
// blocks.
func contentBlocks(raw json.RawMessage) []contentBlock {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var blocks []contentBlock
	json.Unmarshal(raw, &blocks)
	return blocks
}

// resultText flattens a tool result's content (a string or text blocks).
func resultText(raw json.RawMessage) string {
	var parts []string
	for _, b := range contentBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else if b.Type != "" {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// UserMessage is the stdin line that sends text to an agent running with
// --input-format stream-json.
func UserMessage(text string) string {
	b, _ := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
	return string(b)
}

// Summary is one line for an entry, for logs and notifications.
func (e Entry) Summary() string {
	switch e.Kind {
	case EntryToolUse:
		in := e.Input
		if len(in) > 120 {
			in = in[:117] + "..."
		}
		return fmt.Sprintf("→ %s %s", e.Tool, in)
	case EntryToolResult:
		t := firstLine(e.Text)
		if e.IsError {
			return "✗ " + t
		}
		return "← " + t
	case EntryResult:
		if e.IsError {
			return "failed: " + lowerFirst(FailureReason(e))
		}
		return fmt.Sprintf("done: %d turns, %s, $%.4f", e.Turns, e.Duration.Round(time.Millisecond), e.CostUSD)
	}
	return firstLine(e.Text)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// readTranscript reads a transcript file.
func readTranscript(p string) ([]Entry, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
