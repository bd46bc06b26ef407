package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Agent health: what Claude Code's stream says about its model API, in
// words a person can act on. Claude Code reports a failed request it
// will retry as a system line,
//
//	{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2500,"error_status":401,"error":"authentication_failed",...}
//
// (error_status null, error "unknown" when the API could not be reached
// at all), and a request that failed for good as a synthetic assistant
// message (is_api_error_message) followed by the turn's result with
// is_error, api_error_status, api_error_type ("authentication_error",
// "rate_limit_error", "overloaded_error") or api_error
// ("connection_failed"). testdata/claude holds such lines of the real
// binary.

// APIProblem is what went wrong with a request to the model API.
type APIProblem string

// Problems with the model API, as the stream tells them.
const (
	APIUnreachable APIProblem = "unreachable" // no connection, no answer
	APIAuth        APIProblem = "auth"        // 401: the key was refused
	APIForbidden   APIProblem = "forbidden"   // 403
	APIRateLimited APIProblem = "rate_limit"  // 429
	APIOverloaded  APIProblem = "overloaded"  // 529
	APIServer      APIProblem = "server"      // other 5xx
	APIRequest     APIProblem = "request"     // other 4xx
	APIOther       APIProblem = "other"
)

// Words says the problem for a person, as a header line: "The API key
// was refused".
func (p APIProblem) Words(status int) string {
	switch p {
	case APIUnreachable:
		return "Can't reach the Anthropic API"
	case APIAuth:
		return "The API key was refused"
	case APIForbidden:
		return "The API refused access (403)"
	case APIRateLimited:
		return "Rate limited by the API"
	case APIOverloaded:
		return "The Anthropic API is overloaded"
	case APIServer:
		if status > 0 {
			return fmt.Sprintf("The Anthropic API failed (HTTP %d)", status)
		}
		return "The Anthropic API failed"
	case APIRequest:
		if status > 0 {
			return fmt.Sprintf("The API rejected a request (HTTP %d)", status)
		}
		return "The API rejected a request"
	}
	return "The model API failed"
}

// advice is what to do about a problem that ended a turn.
func (p APIProblem) advice() string {
	switch p {
	case APIAuth:
		return "set it in Settings"
	case APIForbidden:
		return "check the key's permissions, then restart the session"
	case APIUnreachable:
		return "check the network, then restart the session"
	case APIRateLimited:
		return "wait a while, then restart the session"
	case APIOverloaded, APIServer:
		return "restart the session in a moment"
	}
	return "restart the session to try again"
}

// classifyAPI reads a failed request's HTTP status (0: none came) and
// the error names Claude Code gives it; the names, where they are
// specific, win over the status.
func classifyAPI(status int, names ...string) APIProblem {
	for _, n := range names {
		switch n {
		case "authentication_failed", "authentication_error":
			if status == 403 {
				return APIForbidden
			}
			return APIAuth
		case "permission_error":
			return APIForbidden
		case "rate_limit", "rate_limit_error":
			return APIRateLimited
		case "overloaded", "overloaded_error":
			return APIOverloaded
		case "connection_failed", "connection_error", "timeout":
			return APIUnreachable
		}
	}
	switch {
	case status == 0:
		return APIUnreachable
	case status == 401:
		return APIAuth
	case status == 403:
		return APIForbidden
	case status == 429:
		return APIRateLimited
	case status == 529:
		return APIOverloaded
	case status >= 500:
		return APIServer
	case status >= 400:
		return APIRequest
	}
	return APIOther
}

// retryText is a retry's line: "Can't reach the Anthropic API — retry 3/10".
func retryText(p APIProblem, status, attempt, max int) string {
	if max > 0 {
		return fmt.Sprintf("%s — retry %d/%d", p.Words(status), attempt, max)
	}
	return fmt.Sprintf("%s — retry %d", p.Words(status), attempt)
}

// FailureReason is the reason a session whose turn ended with result e
// (an error) fails with: the problem and what to do, "The API key was
// refused — set it in Settings".
func FailureReason(e Entry) string {
	if e.Problem != "" {
		return e.Problem + " — " + APIProblem(e.APIError).advice()
	}
	switch e.Subtype {
	case "error_max_turns":
		return "The agent stopped at its limit of turns — restart the session to go on"
	case "error_max_budget_usd":
		return "The agent stopped at its spending limit — restart the session to go on"
	}
	if first := firstLine(e.Text); first != "" {
		return "The agent's turn ended with an error: " + first
	}
	return "The agent's turn ended with an error"
}

// lenientInt reads a JSON number; null, absent or anything else is 0.
func lenientInt(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) != nil {
		return 0
	}
	return n
}

// lenientString reads a JSON string; anything else is "".
func lenientString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// apiFields are the parts of a stream-json line that speak of the model
// API, read leniently: a newer agent may change their types, and such a
// line must not be lost whole.
type apiFields struct {
	Attempt        json.RawMessage `json:"attempt"`
	MaxRetries     json.RawMessage `json:"max_retries"`
	ErrorStatus    json.RawMessage `json:"error_status"`
	Error          json.RawMessage `json:"error"`
	APIErrorStatus json.RawMessage `json:"api_error_status"`
	APIErrorType   json.RawMessage `json:"api_error_type"`
	APIError       json.RawMessage `json:"api_error"`
	IsAPIErrorMsg  json.RawMessage `json:"is_api_error_message"`
}

func readAPIFields(line []byte) apiFields {
	var f apiFields
	json.Unmarshal(line, &f)
	return f
}

// retryEntry is the transcript entry of an api_retry line.
func (f apiFields) retryEntry(e Entry) Entry {
	status := lenientInt(f.ErrorStatus)
	p := classifyAPI(status, lenientString(f.Error))
	e.Kind = EntryRetry
	e.APIError = string(p)
	e.Status = status
	e.Attempt, e.MaxRetries = lenientInt(f.Attempt), lenientInt(f.MaxRetries)
	e.Problem = p.Words(status)
	e.Text = retryText(p, status, e.Attempt, e.MaxRetries)
	return e
}

// apiErrorMessage reports whether an assistant line is Claude Code's
// stand-in for a request that failed for good: its result follows, and
// says the same.
func (f apiFields) apiErrorMessage() bool {
	return bytes.Equal(bytes.TrimSpace(f.IsAPIErrorMsg), []byte("true"))
}

// resultProblem fills in what an error result says of the model API.
func (f apiFields) resultProblem(e *Entry) {
	status := lenientInt(f.APIErrorStatus)
	kind, apiErr := lenientString(f.APIErrorType), lenientString(f.APIError)
	if status == 0 && kind == "" && apiErr == "" {
		return
	}
	p := classifyAPI(status, kind, apiErr)
	e.APIError, e.Status, e.Problem = string(p), status, p.Words(status)
}

// lowerFirst is s with its first letter lower-cased, for words that go
// inside a sentence ("failed: the API key was refused").
func lowerFirst(s string) string {
	if s == "" || strings.HasPrefix(s, "API") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
