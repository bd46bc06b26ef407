package protocol

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Event is one guest→host message, flat like Command.
type Event struct {
	Ev  string `json:"ev"`
	Seq uint64 `json:"seq"`
	TS  int64  `json:"ts"` // Unix milliseconds
	ID  string `json:"id,omitempty"`

	// system:ready
	Version int    `json:"version,omitempty"`
	Kernel  string `json:"kernel,omitempty"`
	CPUs    int    `json:"cpus,omitempty"`
	Memory  uint64 `json:"memory,omitempty"` // bytes
	// Features names what this guest serves beyond Version (FeaturePTY).
	Features []string `json:"features,omitempty"`
	// NetError says why the guest has no network although the host gave
	// it one (see the package comment); "" when it has.
	NetError string `json:"net_error,omitempty"`

	// agent:started
	PID int `json:"pid,omitempty"`
	// Notes are what the guest did about the start that the session's
	// log should say (on an image's root: which user the agent runs as,
	// that sudo is not in the image): at most MaxNotes of MaxNote bytes.
	Notes []string `json:"notes,omitempty"`

	// agent:stdout, agent:stderr, exec:stdout, exec:stderr
	Data string `json:"data,omitempty"`
	B64  []byte `json:"b64,omitempty"`
	More bool   `json:"more,omitempty"` // agent lines only: another piece follows

	// agent:exit, exec:result. A process killed by signal N reports
	// Code 128+N and Signal its name ("SIGKILL").
	Code     int    `json:"code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"` // exec:result: it could not start

	// exec:stdin_ack: stdin bytes handed to the program since the last ack.
	N int64 `json:"n,omitempty"`

	// stats
	CPU      float64 `json:"cpu,omitempty"` // percent of all vCPUs, 0–100
	MemUsed  uint64  `json:"mem_used,omitempty"`
	MemTotal uint64  `json:"mem_total,omitempty"`
	Disk     *Disks  `json:"disk,omitempty"`
	Procs    int     `json:"procs,omitempty"`

	// error (ID above is the failing command's, when known)
	Cmd     string `json:"cmd,omitempty"`
	Message string `json:"message,omitempty"`

	// ports: sorted by Port, each port once, at most MaxPorts; Truncated
	// says more were listening and were left out.
	Ports     []Port `json:"ports,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`

	// tool:output (with PID, Data or B64)
	Elapsed int64 `json:"elapsed,omitempty"` // milliseconds
	Skipped int64 `json:"skipped,omitempty"` // bytes
	Done    bool  `json:"done,omitempty"`
	// Binary says the file holds binary data (a NUL, or bytes that are
	// not text): from then on none of it is sent, and Skipped counts it.
	Binary bool `json:"binary,omitempty"`
}

// Port is one listening TCP port of a ports event, reachable at the
// guest's address.
type Port struct {
	Port uint16 `json:"port"`
	// Loopback says the program listens on loopback only (127.0.0.0/8 or
	// ::1) and the guest's supervisor relays the port from the guest's
	// address to it.
	Loopback bool `json:"loopback,omitempty"`
}

// Disks is the disk part of a stats event.
type Disks struct {
	Workspace Usage `json:"workspace"`
	Scratch   Usage `json:"scratch"`
}

// Usage is used and total bytes of one file system.
type Usage struct {
	Used  uint64 `json:"used"`
	Total uint64 `json:"total"`
}

// Time returns TS as a time.Time.
func (e Event) Time() time.Time { return time.UnixMilli(e.TS) }

// Payload returns the output bytes of a data event, whichever field
// carries them.
func (e Event) Payload() []byte {
	if e.B64 != nil {
		return e.B64
	}
	return []byte(e.Data)
}

// SetPayload stores p in Data when it is valid UTF-8 that JSON does not
// inflate by more than base64 would (mostly printable text), else in B64.
// It copies p.
func (e *Event) SetPayload(p []byte) {
	if textual(p) {
		e.Data, e.B64 = string(p), nil
		return
	}
	e.Data, e.B64 = "", append([]byte{}, p...)
}

// textual reports whether p is valid UTF-8 whose JSON escapes add at
// most a third to its length. It gives up at the first invalid UTF-8 in
// p's first bytes (random binary) or once the escapes pass the third
// (zeros), instead of scanning all of p: under emulation a full scan cost
// about a second per 100 MB of binary output.
func textual(p []byte) bool {
	// A prefix that ends where a rune starts is valid if p is.
	k := min(len(p), 256)
	for k > 0 && k < len(p) && !utf8.RuneStart(p[k]) {
		k--
	}
	if !utf8.Valid(p[:k]) {
		return false
	}
	limit, extra := len(p)/3, 0
	for _, c := range p {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"', '\\', '\n', '\r', '\t':
			extra++
		default:
			extra += 5
		}
		if extra > limit {
			return false
		}
	}
	return utf8.Valid(p)
}

// IsData reports whether ev is one of the output events.
func IsData(ev string) bool {
	switch ev {
	case EvAgentStdout, EvAgentStderr, EvExecStdout, EvExecStderr:
		return true
	}
	return false
}

// Validate reports whether e is an event the host can act on.
func (e Event) Validate() error {
	switch e.Ev {
	case EvReady:
		if len(e.NetError) > MaxNetError {
			return fmt.Errorf("%w: %s's net_error is %d bytes, more than %d", ErrMalformed, e.Ev, len(e.NetError), MaxNetError)
		}
	case EvAgentStarted:
		if len(e.Notes) > MaxNotes {
			return fmt.Errorf("%w: %s has %d notes, more than %d", ErrMalformed, e.Ev, len(e.Notes), MaxNotes)
		}
		for _, n := range e.Notes {
			if len(n) > MaxNote {
				return fmt.Errorf("%w: %s has a note of %d bytes, more than %d", ErrMalformed, e.Ev, len(n), MaxNote)
			}
		}
	case EvAgentPrepared, EvAgentStdout, EvAgentStderr, EvAgentExit,
		EvStats, EvError, EvWorkspace:
	case EvExecStdinAck:
		if e.ID == "" || e.N <= 0 || e.N > StdinWindow {
			return fmt.Errorf("%w: %s needs an id and 1 to %d bytes, not %d", ErrMalformed, e.Ev, StdinWindow, e.N)
		}
	case EvExecStdout, EvExecStderr, EvExecResult:
		if e.ID == "" {
			return fmt.Errorf("%w: %s without id", ErrMalformed, e.Ev)
		}
	case EvPorts:
		if len(e.Ports) > MaxPorts {
			return fmt.Errorf("%w: %s lists %d ports, more than %d", ErrMalformed, e.Ev, len(e.Ports), MaxPorts)
		}
		var last uint16
		for _, p := range e.Ports {
			if p.Port <= last {
				return fmt.Errorf("%w: %s: port %d is 0, out of order or listed twice", ErrMalformed, e.Ev, p.Port)
			}
			last = p.Port
		}
	case EvToolOutput:
		if n := len(e.Data) + len(e.B64); n > MaxToolChunk {
			return fmt.Errorf("%w: %s carries %d bytes, more than %d", ErrMalformed, e.Ev, n, MaxToolChunk)
		}
		if e.Elapsed < 0 || e.Skipped < 0 {
			return fmt.Errorf("%w: %s with a negative elapsed or skipped", ErrMalformed, e.Ev)
		}
	case "":
		return fmt.Errorf("%w: the object has no \"ev\"", ErrMalformed)
	default:
		return fmt.Errorf("%w: event %q (this host speaks protocol version %d)", ErrUnknown, e.Ev, Version)
	}
	if e.Data != "" && e.B64 != nil {
		return fmt.Errorf("%w: %s carries both data and b64", ErrMalformed, e.Ev)
	}
	return nil
}

// HasFeature reports whether a system:ready event names feature f.
func (e Event) HasFeature(f string) bool {
	for _, g := range e.Features {
		if g == f {
			return true
		}
	}
	return false
}
