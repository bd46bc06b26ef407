package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sandbar/vm/caplog"
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
	// EntryTrimmed begins a transcript read whose older entries are not
	// there: dropped by the transcript's cap (config.TranscriptMax), or
	// before the newest maxTranscriptRead bytes a read takes.
	EntryTrimmed EntryKind = "trimmed"
)

// TrimmedText is what an EntryTrimmed says.
const TrimmedText = "earlier output trimmed"

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
		return fmt.Sprintf("done: %s, %s, $%.4f", plural(e.Turns, "turn", "turns"), e.Duration.Round(time.Millisecond), e.CostUSD)
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

// Bounds of a read of the transcript: the newest maxTranscriptRead
// bytes of it (transcript.jsonl.1 and transcript.jsonl), and a line at
// most maxTranscriptLine long (longer ones, which Sandbar no longer
// writes, are skipped).
const (
	maxTranscriptRead = 8 << 20
	maxTranscriptLine = 1 << 20
)

// readTranscript reads the newest entries of a transcript file and its
// older copy, in a stream, never more than maxTranscriptRead bytes of
// them. When older entries were dropped or not read, the first entry is
// an EntryTrimmed.
func readTranscript(p string) ([]Entry, error) {
	return readTranscriptTail(p, maxTranscriptRead, maxTranscriptLine)
}

// readTranscriptTail is readTranscript reading at most window bytes,
// and lines at most maxLine long.
func readTranscriptTail(p string, window int64, maxLine int) ([]Entry, error) {
	type part struct {
		f    *os.File
		size int64
	}
	var parts []part
	defer func() {
		for _, pt := range parts {
			pt.f.Close()
		}
	}()
	var total int64
	for _, name := range []string{caplog.Older(p), p} {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		parts = append(parts, part{f, fi.Size()})
		total += fi.Size()
	}
	skip := max(0, total-window)
	trimmed := skip > 0
	var out []Entry
	for _, pt := range parts {
		if skip >= pt.size {
			skip -= pt.size
			continue
		}
		// Start at the line after skip: read from the byte before it, so
		// a line that begins exactly at skip is kept.
		from := max(0, skip-1)
		if _, err := pt.f.Seek(from, io.SeekStart); err != nil {
			return nil, err
		}
		r := bufio.NewReaderSize(io.LimitReader(pt.f, pt.size-from), 64<<10)
		if skip > 0 {
			if _, _, err := readLine(r, 0); err != nil {
				skip = 0
				continue
			}
		}
		skip = 0
		for {
			line, ok, err := readLine(r, maxLine)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			var e Entry
			if !ok || json.Unmarshal(line, &e) != nil {
				continue
			}
			if e.Kind == EntryTrimmed {
				trimmed = true
				continue
			}
			out = append(out, e)
		}
	}
	if trimmed {
		out = append([]Entry{{Kind: EntryTrimmed, Text: TrimmedText}}, out...)
	}
	return out, nil
}

// readLine reads one line of r without its newline, keeping at most max
// bytes of it: ok is false when the line was longer (and dropped). A last
// line without a newline counts; io.EOF comes only when nothing is left.
func readLine(r *bufio.Reader, max int) (line []byte, ok bool, err error) {
	ok = true
	for {
		chunk, err := r.ReadSlice('\n')
		if ok && len(line)+len(chunk) <= max {
			line = append(line, chunk...)
		} else {
			ok, line = false, nil
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && (len(chunk) > 0 || len(line) > 0 || !ok):
			return bytes.TrimSuffix(line, []byte("\n")), ok, nil
		case err != nil:
			return nil, false, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), ok, nil
	}
}
