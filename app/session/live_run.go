package session

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"sandbar/app/sandbox"
)

// liveTools is a run's running tools: their tails by the guest's pid,
// and the Claude Code tool call that runs.
type liveTools struct {
	mu          sync.Mutex
	tails       map[int]*liveTail
	tool, input string
}

// onToolOutput takes a guest's tool:output: the bytes go into the tool's
// tail, and its snapshot is published; Done publishes the end.
func (r *run) onToolOutput(ev sandbox.Event) {
	l := &r.live
	l.mu.Lock()
	t := l.tails[ev.PID]
	if t == nil {
		if ev.Done || len(l.tails) >= maxLive {
			l.mu.Unlock()
			return
		}
		if l.tails == nil {
			l.tails = map[int]*liveTail{}
		}
		t = &liveTail{}
		l.tails[ev.PID] = t
	}
	t.write(ev.Payload())
	t.skipped += ev.Skipped
	t.binary = t.binary || ev.Binary
	lv := LiveOutput{PID: ev.PID, Tool: l.tool, Input: l.input, Elapsed: time.Duration(ev.Elapsed) * time.Millisecond,
		Skipped: t.skipped, Binary: t.binary, Done: ev.Done}
	lv.Lines, lv.Partial, lv.Total = t.snapshot(r.red.Redact)
	if ev.Done {
		delete(l.tails, ev.PID)
	}
	l.mu.Unlock()
	r.m.hub.publish(Event{Session: r.id, Time: ev.Time(), Kind: EventLive, Live: &lv})
}

// toolProgress is Claude Code's stream-json tool_progress line: a tool
// call still running, and for how long.
type toolProgress struct {
	Type    string `json:"type"`
	Tool    string `json:"tool_name"`
	Elapsed int64  `json:"elapsed_time_seconds"`
}

func parseToolProgress(line []byte) (toolProgress, bool) {
	var p toolProgress
	if !bytes.Contains(line, []byte(`"tool_progress"`)) || json.Unmarshal(line, &p) != nil || p.Type != "tool_progress" {
		return p, false
	}
	return p, p.Elapsed >= 0
}

// onToolProgress publishes Claude Code's own word that a tool runs,
// when no output of it is followed (the followed output's events carry
// the elapsed time themselves).
func (r *run) onToolProgress(p toolProgress) {
	l := &r.live
	l.mu.Lock()
	followed := len(l.tails) > 0
	tool, input := l.tool, l.input
	l.mu.Unlock()
	if followed {
		return
	}
	if tool == "" {
		tool = p.Tool
	}
	r.m.hub.publish(Event{Session: r.id, Time: time.Now(), Kind: EventLive,
		Live: &LiveOutput{Tool: tool, Input: input, Elapsed: time.Duration(p.Elapsed) * time.Second}})
}

// liveTool notes the Claude Code tool call that runs now.
func (r *run) liveTool(tool, input string) {
	r.live.mu.Lock()
	r.live.tool, r.live.input = tool, input
	r.live.mu.Unlock()
}

// endLive ends every live view: the tool's result, the turn's end or
// the agent's exit replaces it.
func (r *run) endLive() {
	l := &r.live
	l.mu.Lock()
	pids := make([]int, 0, len(l.tails)+1)
	for pid := range l.tails {
		pids = append(pids, pid)
	}
	had := l.tool != "" || len(pids) > 0
	l.tails, l.tool, l.input = nil, "", ""
	l.mu.Unlock()
	if !had {
		return
	}
	if len(pids) == 0 {
		pids = append(pids, 0)
	}
	for _, pid := range pids {
		r.m.hub.publish(Event{Session: r.id, Time: time.Now(), Kind: EventLive, Live: &LiveOutput{PID: pid, Done: true}})
	}
}
