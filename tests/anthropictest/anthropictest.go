// Package anthropictest is a scripted Anthropic Messages API for tests: an
// HTTP server on the host's loopback that answers POST /v1/messages with
// the reply a test's Script chooses for each request, streamed as
// server-sent events the way the real API streams them (message_start,
// content_block_start/delta/stop, message_delta, message_stop), and that
// records every request it sees.
//
// It exists so tests can run the real Claude Code binary, with
// ANTHROPIC_BASE_URL pointing here and a fake key, and assert what it sent.
// It is not an emulator of the API: it does not count tokens, check keys or
// enforce limits, and it never reaches the network (it listens on
// 127.0.0.1 only).
package anthropictest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Script chooses the reply to one Messages request. Decide by what the
// request holds (its tools, the tool results in its last user message),
// not by how many requests came before: Claude Code also sends requests
// of its own (titles, summaries, checks) whose number and order change
// between releases.
type Script func(r *Request) Reply

// Reply is the assistant's answer to one request.
type Reply struct {
	Content []Block
	// StopReason is sent in message_delta; when empty it is "tool_use" if
	// Content holds a tool_use block, else "end_turn".
	StopReason string
	// Error, when set, is answered instead: the API's error body with
	// its HTTP status (401 authentication_error, 529 overloaded_error).
	Error *APIError
}

// APIError is an error answer of the API.
type APIError struct {
	Status  int
	Type    string // authentication_error, rate_limit_error, overloaded_error, ...
	Message string
}

// Block is one content block of a message: text, tool_use or, in
// requests, tool_result.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Text is a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// ToolUse is a tool_use block calling tool name with input (marshalled
// to JSON); id is what the tool_result that answers it will name.
func ToolUse(id, name string, input any) Block {
	b, err := json.Marshal(input)
	if err != nil {
		panic(fmt.Sprintf("anthropictest.ToolUse(%s): input does not marshal: %v", name, err))
	}
	return Block{Type: "tool_use", ID: id, Name: name, Input: b}
}

// Request is a POST /v1/messages body, as far as a script needs it.
type Request struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system,omitempty"`
	Messages  []Message       `json:"messages"`
	Tools     []Tool          `json:"tools,omitempty"`
}

// Tool is a tool the request offers the model.
type Tool struct {
	Name string `json:"name"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// UnmarshalJSON accepts content as a string (one text block) or as blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []Block{Text(s)}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// HasTool reports whether the request offers the model a tool named name.
func (r *Request) HasTool(name string) bool {
	return slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Name == name })
}

// ToolResult is a tool_result block with its content flattened to text.
type ToolResult struct {
	ToolUseID string
	Text      string
	IsError   bool
}

// LastTurn is the request's last message that is not Claude Code's own
// "system" one: Claude Code puts messages of that role among the turns
// (its environment, after the first prompt), and may put one after a
// tool's result. ok is false when there is none.
func (r *Request) LastTurn() (m Message, ok bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "system" {
			return r.Messages[i], true
		}
	}
	return Message{}, false
}

// ToolResults returns the tool results in the request's last user
// message: what the tools the model last called produced.
func (r *Request) ToolResults() []ToolResult {
	last, ok := r.LastTurn()
	if !ok || last.Role != "user" {
		return nil
	}
	var out []ToolResult
	for _, b := range last.Content {
		if b.Type == "tool_result" {
			out = append(out, ToolResult{ToolUseID: b.ToolUseID, Text: flatten(b.Content), IsError: b.IsError})
		}
	}
	return out
}

// flatten turns tool_result content (a string or text blocks) into text.
func flatten(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var blocks []Block
	json.Unmarshal(c, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Call is one HTTP request the server saw.
type Call struct {
	Time   time.Time
	Method string
	Path   string // without the query
	Query  url.Values
	Header http.Header
	Body   []byte
	// Messages is the parsed body of a POST /v1/messages; nil otherwise.
	Messages *Request
	// Reply is what the script answered to Messages.
	Reply *Reply
	// Status is the HTTP status the server answered.
	Status int
}

func (c Call) String() string {
	s := fmt.Sprintf("%s %s -> %d", c.Method, c.Path, c.Status)
	if c.Messages != nil {
		s += fmt.Sprintf(" (model %s, %d messages, %d tools, stream %t)", c.Messages.Model, len(c.Messages.Messages), len(c.Messages.Tools), c.Messages.Stream)
	}
	return s
}

// Server is a running scripted API.
type Server struct {
	// URL is the server's base URL on the host, http://127.0.0.1:PORT: the
	// value of ANTHROPIC_BASE_URL for a client on this machine.
	URL string
	// Port is the port it listens on.
	Port string

	script Script
	srv    *httptest.Server

	mu    sync.Mutex
	calls []Call
	seq   int
}

// Start starts a server answering with script on 127.0.0.1 and closes it
// when the test ends.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{script: script}
	// httptest listens on 127.0.0.1:0 (never on another address) and its
	// Close waits for every handler.
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	u, err := url.Parse(s.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.URL, s.Port = s.srv.URL, u.Port()
	t.Cleanup(s.srv.Close)
	return s
}

// Calls returns every request seen so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Log is the calls seen so far, one a line, for a failure message.
func (s *Server) Log() string {
	var b strings.Builder
	for _, c := range s.Calls() {
		fmt.Fprintln(&b, c)
	}
	return b.String()
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *Server) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// maxBody bounds a request body; Claude Code's largest (the system
// prompt and tool schemas) are a few hundred KiB.
const maxBody = 32 << 20

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(w, req)
	c := Call{Time: time.Now(), Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Header: req.Header.Clone(), Body: body}
	defer func() { s.record(c) }()
	if err != nil {
		c.Status = apiError(w, http.StatusRequestEntityTooLarge, "request_too_large", err.Error())
		return
	}
	switch {
	case req.Method == http.MethodPost && req.URL.Path == "/v1/messages":
		var r Request
		if err := json.Unmarshal(body, &r); err != nil {
			c.Status = apiError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a Messages request: "+err.Error())
			return
		}
		c.Messages = &r
		reply := s.script(&r)
		c.Reply = &reply
		if e := reply.Error; e != nil {
			c.Status = apiError(w, e.Status, e.Type, e.Message)
			return
		}
		c.Status = s.answer(w, &r, reply, len(body))
	case req.Method == http.MethodPost && req.URL.Path == "/v1/messages/count_tokens":
		c.Status = writeJSON(w, http.StatusOK, map[string]int{"input_tokens": tokens(len(body))})
	case (req.Method == http.MethodGet || req.Method == http.MethodHead) && req.URL.Path == "/":
		c.Status = http.StatusOK
		w.WriteHeader(c.Status)
	default:
		c.Status = apiError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("%s %s is not scripted", req.Method, req.URL.Path))
	}
}

func readBody(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read the body (%d bytes so far): %w", len(b), err)
	}
	return b, nil
}

// tokens is a rough token count for usage figures: about 4 bytes a token.
func tokens(bytes int) int { return bytes/4 + 1 }

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
	return status
}

// apiError answers the way the API does: {"type":"error","error":{...}}.
func apiError(w http.ResponseWriter, status int, kind, msg string) int {
	return writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": msg}})
}

// message is the assistant message in the API's shape.
type message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
}

type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// answer writes reply as one JSON message, or as the API's event stream
// when the request asked for one.
func (s *Server) answer(w http.ResponseWriter, r *Request, reply Reply, bodyLen int) int {
	n := s.next()
	content := slices.Clone(reply.Content)
	for i, b := range content {
		if b.Type == "tool_use" && b.ID == "" {
			content[i].ID = fmt.Sprintf("toolu_scripted_%d_%d", n, i)
		}
		if b.Type == "tool_use" && b.Input == nil {
			content[i].Input = json.RawMessage("{}")
		}
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if slices.ContainsFunc(content, func(b Block) bool { return b.Type == "tool_use" }) {
			stop = "tool_use"
		}
	}
	out := 0
	for _, b := range content {
		out += tokens(len(b.Text) + len(b.Input))
	}
	m := message{ID: fmt.Sprintf("msg_scripted_%d", n), Type: "message", Role: "assistant", Model: r.Model,
		Content: content, StopReason: &stop, Usage: usage{InputTokens: tokens(bodyLen), OutputTokens: out}}
	w.Header().Set("request-id", fmt.Sprintf("req_scripted_%d", n))
	if !r.Stream {
		return writeJSON(w, http.StatusOK, m)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ev := &eventWriter{w: w}
	start := m
	start.Content, start.StopReason, start.Usage.OutputTokens = []Block{}, nil, 1
	ev.send("message_start", map[string]any{"type": "message_start", "message": start})
	ev.send("ping", map[string]any{"type": "ping"})
	for i, b := range content {
		var first Block
		var deltas []map[string]any
		switch b.Type {
		case "tool_use":
			first = Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage("{}")}
			for _, part := range chunks(string(b.Input)) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": part})
			}
		default:
			first = Block{Type: "text"}
			for _, part := range chunks(b.Text) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": part})
			}
		}
		// Block's omitempty drops "text": "", which a text block's start
		// carries in the real stream.
		start := any(first)
		if first.Type == "text" {
			start = map[string]string{"type": "text", "text": ""}
		}
		ev.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		for _, d := range deltas {
			ev.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		ev.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": out}})
	ev.send("message_stop", map[string]any{"type": "message_stop"})
	return http.StatusOK
}

// chunks splits s into pieces of at most 24 bytes on rune boundaries, so
// a client has to join deltas as it must with the real API.
func chunks(s string) []string {
	const size = 24
	var out []string
	for len(s) > size {
		cut := size
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = size
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// eventWriter writes server-sent events and flushes each.
type eventWriter struct {
	w http.ResponseWriter
}

func (e *eventWriter) send(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("anthropictest: event %s does not marshal: %v", name, err))
	}
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}
