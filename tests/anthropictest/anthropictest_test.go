package anthropictest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// script answers like the end-to-end test's: a Bash call first, text once
// the call's result comes back, and plain text to requests without tools.
func script(r *Request) Reply {
	if !r.HasTool("Bash") {
		return Reply{Content: []Block{Text("A title")}}
	}
	if res := r.ToolResults(); len(res) > 0 {
		return Reply{Content: []Block{Text("The tool said: " + res[0].Text + " — ✓ done")}}
	}
	return Reply{Content: []Block{Text("Committing."), ToolUse("toolu_1", "Bash", map[string]string{"command": "echo héllo > hello.txt && git add hello.txt && git commit -qm 'add hello'", "description": "commit hello.txt"})}}
}

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
}

// post sends a Messages request and returns the response, which the test
// reads.
func post(t *testing.T, s *Server, path string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "sk-ant-test-unit")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readEvents parses a text/event-stream body the way an SSE client does.
func readEvents(t *testing.T, r io.Reader) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				out = append(out, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("event %s: data is not JSON: %v: %s", cur.name, err, line)
			}
		default:
			t.Fatalf("unexpected line in the stream: %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.name != "" {
		t.Fatalf("the stream ends inside event %s (no blank line after it)", cur.name)
	}
	return out
}

// assembled is a message rebuilt from its stream.
type assembled struct {
	stop   string
	blocks []map[string]any // with "text" joined and "input" parsed
}

// assemble rebuilds the message from events and checks their order.
func assemble(t *testing.T, evs []event) assembled {
	t.Helper()
	var names []string
	var m assembled
	partial := map[int]string{}
	for _, ev := range evs {
		names = append(names, ev.name)
		if ev.data["type"] != ev.name {
			t.Errorf("event %s carries type %v", ev.name, ev.data["type"])
		}
		switch ev.name {
		case "content_block_start":
			if i := int(ev.data["index"].(float64)); i != len(m.blocks) {
				t.Errorf("block %d starts at index %d", len(m.blocks), i)
			}
			m.blocks = append(m.blocks, ev.data["content_block"].(map[string]any))
		case "content_block_delta":
			i := int(ev.data["index"].(float64))
			d := ev.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				m.blocks[i]["text"] = m.blocks[i]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[i] += d["partial_json"].(string)
			default:
				t.Errorf("delta type %v", d["type"])
			}
		case "content_block_stop":
			i := int(ev.data["index"].(float64))
			if p, ok := partial[i]; ok {
				var in map[string]any
				if err := json.Unmarshal([]byte(p), &in); err != nil {
					t.Errorf("block %d: the joined input_json_delta is not JSON: %v: %s", i, err, p)
				}
				m.blocks[i]["input"] = in
			}
		case "message_delta":
			m.stop = ev.data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	// The API's order: start, ping, per block start/delta.../stop, then
	// message_delta and message_stop.
	var shape []string
	for _, n := range names {
		if len(shape) == 0 || shape[len(shape)-1] != n || n != "content_block_delta" {
			shape = append(shape, n)
		}
	}
	want := []string{"message_start", "ping"}
	for range m.blocks {
		want = append(want, "content_block_start", "content_block_delta", "content_block_stop")
	}
	want = append(want, "message_delta", "message_stop")
	if !slices.Equal(shape, want) {
		t.Errorf("events %v\nwant   %v (deltas folded)", shape, want)
	}
	return m
}

func userText(s string) map[string]any { return map[string]any{"role": "user", "content": s} }

var bashTool = []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}

func TestStreamToolUseThenText(t *testing.T) {
	s := Start(t, script)
	if host, _, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://")); host != "127.0.0.1" {
		t.Errorf("the server listens on %s: want 127.0.0.1 only", s.URL)
	}

	// Turn one: the prompt; the answer is a Bash call.
	resp := post(t, s, "/v1/messages?beta=true", map[string]any{
		"model": "claude-test", "max_tokens": 1024, "stream": true, "tools": bashTool,
		"messages": []any{userText("commit hello")},
	})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readEvents(t, resp.Body)
	m := assemble(t, evs)
	if m.stop != "tool_use" || len(m.blocks) != 2 {
		t.Fatalf("stop %q, blocks %v", m.stop, m.blocks)
	}
	if m.blocks[0]["type"] != "text" || m.blocks[0]["text"] != "Committing." {
		t.Errorf("block 0 = %v", m.blocks[0])
	}
	use := m.blocks[1]
	in, _ := use["input"].(map[string]any)
	if use["type"] != "tool_use" || use["id"] != "toolu_1" || use["name"] != "Bash" ||
		in["command"] != "echo héllo > hello.txt && git add hello.txt && git commit -qm 'add hello'" {
		t.Errorf("block 1 = %v", use)
	}
	start := evs[0].data["message"].(map[string]any)
	if start["model"] != "claude-test" || start["role"] != "assistant" || start["stop_reason"] != nil {
		t.Errorf("message_start carries %v", start)
	}

	// Turn two carries the tool's result; the answer is text.
	resp = post(t, s, "/v1/messages", map[string]any{
		"model": "claude-test", "max_tokens": 1024, "stream": true, "tools": bashTool,
		"messages": []any{
			userText("commit hello"),
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": in}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1",
				"content": []any{map[string]any{"type": "text", "text": "committed: add hello"}}}}},
		},
	})
	m = assemble(t, readEvents(t, resp.Body))
	if m.stop != "end_turn" || len(m.blocks) != 1 || m.blocks[0]["text"] != "The tool said: committed: add hello — ✓ done" {
		t.Errorf("turn two: stop %q, blocks %v", m.stop, m.blocks)
	}

	calls := s.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls:\n%s", s.Log())
	}
	if calls[0].Path != "/v1/messages" || calls[0].Query.Get("beta") != "true" || calls[0].Header.Get("X-Api-Key") != "sk-ant-test-unit" {
		t.Errorf("call 0 = %+v", calls[0])
	}
	if res := calls[0].Messages.ToolResults(); res != nil {
		t.Errorf("turn one has tool results %v", res)
	}
	res := calls[1].Messages.ToolResults()
	if len(res) != 1 || res[0] != (ToolResult{ToolUseID: "toolu_1", Text: "committed: add hello"}) {
		t.Errorf("turn two's tool results = %+v", res)
	}
	if calls[1].Reply == nil || calls[1].Reply.Content[0].Text != "The tool said: committed: add hello — ✓ done" {
		t.Errorf("turn two's recorded reply = %+v", calls[1].Reply)
	}
}

func TestNotStreamingAndOtherEndpoints(t *testing.T) {
	s := Start(t, script)

	// No stream: one JSON message. No tools: the script's title.
	resp := post(t, s, "/v1/messages", map[string]any{"model": "claude-small", "max_tokens": 32, "messages": []any{userText("name this")}})
	var msg struct {
		Type, Role, Model string
		StopReason        string `json:"stop_reason"`
		Content           []Block
		Usage             struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || msg.Type != "message" || msg.Model != "claude-small" || msg.StopReason != "end_turn" ||
		len(msg.Content) != 1 || msg.Content[0].Text != "A title" || msg.Usage.InputTokens < 1 {
		t.Errorf("status %d, message %+v", resp.StatusCode, msg)
	}

	resp = post(t, s, "/v1/messages/count_tokens", map[string]any{"model": "claude-small", "messages": []any{userText("count me")}})
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || resp.StatusCode != 200 || count.InputTokens < 1 {
		t.Errorf("count_tokens: status %d, %+v, %v", resp.StatusCode, count, err)
	}

	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodHead, "/", 200},
		{http.MethodGet, "/", 200},
		{http.MethodGet, "/api/hello", 404},
		{http.MethodPost, "/v1/complete", 404},
	} {
		req, _ := http.NewRequest(c.method, s.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
		if c.status == 404 && !strings.Contains(string(body), `"not_found_error"`) {
			t.Errorf("%s %s: body %s: want the API's error shape", c.method, c.path, body)
		}
	}

	// A body that is not a Messages request is refused the API's way, and
	// the script never sees it.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader("{not json"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad body: status %d, want 400", resp.StatusCode)
	}

	calls := s.Calls()
	var got []string
	for _, c := range calls {
		got = append(got, c.Method+" "+c.Path)
	}
	want := []string{"POST /v1/messages", "POST /v1/messages/count_tokens", "HEAD /", "GET /", "GET /api/hello", "POST /v1/complete", "POST /v1/messages"}
	if !slices.Equal(got, want) {
		t.Errorf("recorded %v\nwant     %v", got, want)
	}
	if last := calls[len(calls)-1]; last.Status != 400 || last.Messages != nil || string(last.Body) != "{not json" {
		t.Errorf("the bad request was recorded as %+v", last)
	}
}

// A message's content may be a string or blocks; a tool_result's content
// may be a string or text blocks. Only the last user message's results
// count.
func TestRequestParsing(t *testing.T) {
	var r Request
	body := `{"model":"m","messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"out\n","is_error":true},{"type":"text","text":"and more"}]}
	],"tools":[{"name":"Read"},{"name":"Bash"}]}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if c := r.Messages[0].Content; len(c) != 1 || c[0].Type != "text" || c[0].Text != "hi" {
		t.Errorf("string content = %+v", r.Messages[0].Content)
	}
	if !r.HasTool("Bash") || r.HasTool("Write") {
		t.Errorf("tools = %+v", r.Tools)
	}
	if res := r.ToolResults(); !slices.Equal(res, []ToolResult{{ToolUseID: "a", Text: "out\n", IsError: true}}) {
		t.Errorf("tool results = %+v", res)
	}
	r.Messages = r.Messages[:2]
	if res := r.ToolResults(); res != nil {
		t.Errorf("with an assistant message last, tool results = %+v", res)
	}
}

// TestToolResultsPastASystemMessage: Claude Code puts messages of its
// own "system" role among the turns; one after a tool's result must not
// hide that result (a script that missed it asked for the tool again and
// again).
func TestToolResultsPastASystemMessage(t *testing.T) {
	var r Request
	body := `{"messages":[
		{"role":"user","content":"Add hello.txt"},
		{"role":"system","content":"# Environment"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"committed: add hello"}]},
		{"role":"system","content":"a reminder"}]}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	res := r.ToolResults()
	if len(res) != 1 || res[0].ToolUseID != "toolu_1" || res[0].Text != "committed: add hello" {
		t.Errorf("ToolResults = %+v, want toolu_1's result", res)
	}
	r.Messages = r.Messages[:3]
	if res := r.ToolResults(); res != nil {
		t.Errorf("ToolResults with the assistant's turn last = %+v, want none", res)
	}
}
