// Package protocol is the wire format between the Sandbar host and the
// guest supervisor: the command and event types and a line codec that both
// sides import. It is pure Go with no OS specifics, so it compiles on every
// platform the host runs on.
//
// The stream is JSON, one object per line, each line at most MaxLine bytes
// including its newline. Commands (host→guest) carry "cmd"; events
// (guest→host) carry "ev". Any command may carry "id", which the events it
// causes repeat.
//
// Units and encodings, fixed here once:
//
//   - Command.Time is the host wall clock in Unix nanoseconds (int64).
//   - Event.TS is the sender's wall clock in Unix milliseconds (int64).
//   - Event.Seq starts at 1 and grows by one per event on a stream; the
//     Writer assigns both Seq and TS.
//   - Durations (stats_interval, grace, timeout) are integer milliseconds.
//   - Output bytes travel in "data" when they are valid UTF-8 and in "b64"
//     (standard base64) otherwise; Event.Payload returns the bytes either
//     way, and Event.SetPayload picks the field.
//   - An agent output line longer than a line allows is split into several
//     events; all but the last carry "more": true, and LineJoiner
//     reassembles them. The line's own newline is never part of the data.
//   - Stats.CPU is the percentage of all vCPUs together (0–100).
//
// Version 3 added the session network's two messages:
//
//   - start's "ca_cert": Sandbar's per-install CA, PEM, at most MaxCACert
//     bytes of CERTIFICATE blocks only (see ParseCACert; a start that
//     breaks this is refused as malformed). The guest adds it to the
//     system's trust and points the usual variables at it for the agent
//     and every exec, so HTTPS through the host's credential broker is
//     trusted.
//   - "ports": the guest's whole current set of listening TCP ports that
//     the host can reach at the guest's address, sorted, each once, at most
//     MaxPorts of them ("truncated": true when more were left out). A port
//     with "loopback": true is one the program listens on at loopback only;
//     the guest relays it from its own address. The guest sends the set
//     once when it starts watching (with the first start, even when empty:
//     then "ports" is absent) and again whenever it changes.
//
// system:ready's "net_error" came later without a version bump (an older
// host ignores it): when the host asked for a network (sandbar.net) and
// the guest could not bring it up, the guest boots anyway and says why
// here, in at most MaxNetError bytes of text for a person to read, such as
// "DHCP on eth0: no offer within 3s". Absent, the network is as the host
// asked, or off.
//
// The package is not a transport: it neither dials nor retries.
package protocol

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Version is the protocol version the guest announces in system:ready.
// Version 3 added start's ca_cert and the ports event.
const Version = 3

// MaxLine bounds one encoded line, newline included.
const MaxLine = 1 << 20

// TrialMarker is the console line sandbar-init prints, then powers off,
// when booted with sandbar.trial=1: the host's proof that a hypervisor
// runs the guest (the KVM trial) and the floor of the boot benchmark.
const TrialMarker = "sandbar-init: trial ok"

// Command names (host → guest).
const (
	CmdStart    = "start"
	CmdChat     = "chat"
	CmdStop     = "stop"
	CmdExec     = "exec"
	CmdExecKill = "exec:kill"
	// CmdExecStdin feeds stdin to a running exec that asked for a PTY or
	// for stdin_open; CmdExecResize changes a PTY exec's window size.
	CmdExecStdin  = "exec:stdin"
	CmdExecResize = "exec:resize"
	CmdSetTime    = "settime"
	CmdShutdown   = "shutdown"
)

// Event names (guest → host).
const (
	EvReady        = "system:ready"
	EvAgentStarted = "agent:started"
	EvAgentStdout  = "agent:stdout"
	EvAgentStderr  = "agent:stderr"
	EvAgentExit    = "agent:exit"
	EvExecStdout   = "exec:stdout"
	EvExecStderr   = "exec:stderr"
	EvExecResult   = "exec:result"
	// EvExecStdinAck says how many bytes of exec:stdin the guest has
	// handed to the program (N): the host's stdin window opens by that.
	EvExecStdinAck = "exec:stdin_ack"
	EvStats        = "stats"
	EvError        = "error"
	// EvWorkspace says files in the workspace changed (debounced); the
	// host asks for the details with an exec when it wants them.
	EvWorkspace = "workspace:changed"
	// EvPorts carries the guest's current set of reachable listening TCP
	// ports (Ports, Truncated); see the package comment.
	EvPorts = "ports"
)

// Bounds of the session network's messages.
const (
	// MaxNetError bounds system:ready's net_error, in bytes.
	MaxNetError = 1024
	// MaxCACert bounds start's ca_cert, in bytes.
	MaxCACert = 16 << 10
	// MaxPorts bounds the ports one ports event lists.
	MaxPorts = 256
)

// FeaturePTY in system:ready's features says the guest serves PTY and
// interactive execs (exec pty/stdin_open, exec:stdin, exec:resize). They
// were added without a version bump; a host checks the feature instead.
const FeaturePTY = "pty"

// Bounds of interactive execs.
const (
	// MaxStdinPiece bounds the stdin bytes of one exec:stdin.
	MaxStdinPiece = 32 << 10
	// StdinWindow is how many stdin bytes a host may have sent to one
	// exec and not yet seen acknowledged (exec:stdin_ack); the guest
	// refuses more.
	StdinWindow = 256 << 10
	// MaxWinSize bounds a PTY's rows and columns.
	MaxWinSize = 4096
	// MaxTermLen bounds the TERM a PTY exec may name.
	MaxTermLen = 64
	// DefaultRows and DefaultCols size a PTY whose exec names no size.
	DefaultRows = 24
	DefaultCols = 80
)

// Users a start or exec may ask for.
const (
	UserAgent = "agent"
	UserRoot  = "root"
)

// Defaults the guest applies when a field is left out.
const (
	DefaultWorkdir       = "/workspace"
	DefaultStatsInterval = 2000 // ms
	DefaultGrace         = 5000 // ms
)

// Command is one host→guest message. It is flat: each command uses the
// fields its comment names and leaves the others empty.
type Command struct {
	Cmd string `json:"cmd"`
	ID  string `json:"id,omitempty"`

	// start
	Workdir       string            `json:"workdir,omitempty"`
	Branch        string            `json:"branch,omitempty"`
	Agent         *Agent            `json:"agent,omitempty"`
	Git           *GitIdentity      `json:"git,omitempty"`
	StatsInterval int64             `json:"stats_interval,omitempty"` // ms
	Env           map[string]string `json:"env,omitempty"`            // start, exec; secrets travel only here
	// CACert is Sandbar's CA certificate in PEM (CERTIFICATE blocks
	// only, at most MaxCACert bytes), for the guest to trust.
	CACert string `json:"ca_cert,omitempty"`

	// start, settime: host wall clock in Unix nanoseconds; 0 means unset.
	Time int64 `json:"time,omitempty"`

	// chat
	Text string `json:"text,omitempty"`

	// stop
	Grace int64 `json:"grace,omitempty"` // ms

	// exec
	Argv    []string `json:"argv,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	User    string   `json:"user,omitempty"`
	Timeout int64    `json:"timeout,omitempty"` // ms, 0 = none
	// Stdin is written to the exec's stdin, then closed; without it the
	// exec reads /dev/null. Bytes that are not UTF-8 travel in StdinB64
	// instead (see SetStdin).
	Stdin    string `json:"stdin,omitempty"`     // exec, exec:stdin
	StdinB64 []byte `json:"stdin_b64,omitempty"` // exec, exec:stdin
	// PTY runs the exec on a new pseudo-terminal (its stdin, stdout and
	// stderr; output comes as exec:stdout), sized Rows×Cols (default
	// 24×80) with TERM set to Term (default xterm-256color). Its stdin
	// stays open for exec:stdin.
	PTY  bool   `json:"pty,omitempty"`
	Rows int    `json:"rows,omitempty"` // exec with pty, exec:resize
	Cols int    `json:"cols,omitempty"` // exec with pty, exec:resize
	Term string `json:"term,omitempty"`
	// StdinOpen keeps a pipe exec's stdin open after Stdin, for
	// exec:stdin.
	StdinOpen bool `json:"stdin_open,omitempty"`

	// exec:stdin: no more stdin follows. A pipe exec's stdin is closed;
	// a PTY exec gets the terminal's end-of-file character (^D).
	EOF bool `json:"eof,omitempty"`
}

// DefaultTerm is the TERM of a PTY exec that names none.
const DefaultTerm = "xterm-256color"

// Agent says what to run as the session's agent.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	User    string   `json:"user,omitempty"` // "agent" (default) or "root"
}

// GitIdentity is written to the agent user's git configuration.
type GitIdentity struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// WallTime returns Time as a time.Time, and false when it is unset.
func (c Command) WallTime() (time.Time, bool) {
	if c.Time == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, c.Time), true
}

// StdinBytes returns the exec's stdin, whichever field carries it.
func (c Command) StdinBytes() []byte {
	if c.StdinB64 != nil {
		return c.StdinB64
	}
	return []byte(c.Stdin)
}

// SetStdin stores p in Stdin when it is valid UTF-8, else in StdinB64.
func (c *Command) SetStdin(p []byte) {
	if utf8.Valid(p) {
		c.Stdin, c.StdinB64 = string(p), nil
		return
	}
	c.Stdin, c.StdinB64 = "", append([]byte{}, p...)
}

// Validate reports whether c is a command the guest can act on. Errors wrap
// ErrMalformed (or ErrUnknown, which wraps it).
func (c Command) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMalformed, c.Cmd, fmt.Sprintf(format, a...))
	}
	if c.StatsInterval < 0 || c.Grace < 0 || c.Timeout < 0 {
		return bad("durations must not be negative")
	}
	switch c.Cmd {
	case CmdStart:
		if c.Agent == nil || c.Agent.Command == "" {
			return bad("agent.command is required")
		}
		if !validUser(c.Agent.User) {
			return bad("agent.user must be %q or %q, not %q", UserAgent, UserRoot, c.Agent.User)
		}
		if c.CACert != "" {
			if _, err := ParseCACert(c.CACert); err != nil {
				return bad("ca_cert: %v", err)
			}
		}
	case CmdExec:
		if c.ID == "" {
			return bad("id is required")
		}
		if len(c.Argv) == 0 || c.Argv[0] == "" {
			return bad("argv must name a program")
		}
		if c.Stdin != "" && c.StdinB64 != nil {
			return bad("stdin and stdin_b64 are exclusive")
		}
		if !validUser(c.User) {
			return bad("user must be %q or %q, not %q", UserAgent, UserRoot, c.User)
		}
		if c.PTY {
			if err := validWinSize(c.Rows, c.Cols, true); err != nil {
				return bad("%v", err)
			}
			if !validTerm(c.Term) {
				return bad("term must be at most %d letters, digits or ._+- characters, not %q", MaxTermLen, c.Term)
			}
			if c.StdinOpen {
				return bad("pty and stdin_open are exclusive: a PTY's stdin is always open")
			}
		} else if c.Rows != 0 || c.Cols != 0 || c.Term != "" {
			return bad("rows, cols and term need pty")
		}
	case CmdExecStdin:
		if c.ID == "" {
			return bad("id of the exec to feed is required")
		}
		if c.Stdin != "" && c.StdinB64 != nil {
			return bad("stdin and stdin_b64 are exclusive")
		}
		if n := len(c.StdinBytes()); n > MaxStdinPiece {
			return bad("%d bytes of stdin is more than %d: split it", n, MaxStdinPiece)
		}
	case CmdExecResize:
		if c.ID == "" {
			return bad("id of the exec to resize is required")
		}
		if err := validWinSize(c.Rows, c.Cols, false); err != nil {
			return bad("%v", err)
		}
	case CmdExecKill:
		if c.ID == "" {
			return bad("id of the exec to kill is required")
		}
	case CmdSetTime:
		if c.Time == 0 {
			return bad("time is required")
		}
	case CmdChat, CmdStop, CmdShutdown:
	case "":
		return fmt.Errorf("%w: the object has no \"cmd\"", ErrMalformed)
	default:
		return fmt.Errorf("%w: command %q (this guest speaks protocol version %d)", ErrUnknown, c.Cmd, Version)
	}
	return nil
}

func validUser(u string) bool { return u == "" || u == UserAgent || u == UserRoot }

// validWinSize checks a PTY size; zero means the default only where
// optional.
func validWinSize(rows, cols int, optional bool) error {
	if optional && rows == 0 && cols == 0 {
		return nil
	}
	if rows < 1 || rows > MaxWinSize || cols < 1 || cols > MaxWinSize {
		return fmt.Errorf("rows and cols must be 1 to %d, not %d×%d", MaxWinSize, rows, cols)
	}
	return nil
}

func validTerm(t string) bool {
	if len(t) > MaxTermLen {
		return false
	}
	for _, r := range t {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '+' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

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
	case EvAgentStarted, EvAgentStdout, EvAgentStderr, EvAgentExit,
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

// ParseCACert checks a ca_cert: at most MaxCACert bytes holding one or
// more PEM blocks of type CERTIFICATE, without headers, and nothing but
// white space around them. It returns the blocks. It does not parse the
// certificates themselves (crypto/x509 would grow the guest's init); the
// host sends a CA it made.
func ParseCACert(s string) ([]*pem.Block, error) {
	if len(s) > MaxCACert {
		return nil, fmt.Errorf("%d bytes is more than %d", len(s), MaxCACert)
	}
	var blocks []*pem.Block
	rest := []byte(s)
	for {
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 {
			break
		}
		if !bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			return nil, errors.New("text outside a PEM block: send PEM CERTIFICATE blocks only")
		}
		var b *pem.Block
		b, rest = pem.Decode(rest)
		switch {
		case b == nil:
			return nil, errors.New("a PEM block does not decode")
		case b.Type != "CERTIFICATE":
			return nil, fmt.Errorf("a PEM block of type %q: only CERTIFICATE is taken", b.Type)
		case len(b.Headers) > 0:
			return nil, errors.New("a CERTIFICATE block has headers")
		case len(b.Bytes) == 0:
			return nil, errors.New("a CERTIFICATE block is empty")
		}
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	// pem.Decode passes over a block it cannot read to the next one.
	if n := strings.Count(s, "-----BEGIN "); n != len(blocks) {
		return nil, fmt.Errorf("%d of %d PEM blocks do not decode", n-len(blocks), n)
	}
	return blocks, nil
}

// Errors a Reader reports inside a *LineError.
var (
	// ErrTooLong: a line was longer than MaxLine; it was skipped.
	ErrTooLong = errors.New("line longer than protocol.MaxLine")
	// ErrMalformed: a line was not a valid message; it was skipped.
	ErrMalformed = errors.New("malformed message")
	// ErrUnknown: a well-formed message names a command or event this side
	// does not know. It wraps ErrMalformed.
	ErrUnknown = fmt.Errorf("unknown name: %w", ErrMalformed)
)

// LineError is a problem with one line. The Reader skipped that line and
// can go on reading the next one.
type LineError struct {
	Line int    // 1-based line number on the stream
	Len  int    // bytes in the line, newline included
	Cmd  string // the "cmd" or "ev" name, when it could be read
	ID   string // the "id", when it could be read
	Err  error  // ErrTooLong, or wraps ErrMalformed
}

func (e *LineError) Error() string {
	if errors.Is(e.Err, ErrTooLong) {
		return fmt.Sprintf("protocol line %d: %d bytes is more than %d: the sender must split it", e.Line, e.Len, MaxLine)
	}
	return fmt.Sprintf("protocol line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// IsRecoverable reports whether err concerns one line only, so reading can
// go on. I/O errors such as io.EOF are not recoverable.
func IsRecoverable(err error) bool {
	var le *LineError
	return errors.As(err, &le)
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
