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
//   - start's "ca_cert": Sandbar's per-install CA and (version 4) the CA
//     certificates the host trusts beyond the stock bundle, PEM, at most
//     MaxCACert bytes of at most MaxCACerts CERTIFICATE blocks only (see
//     ParseCACert; a start that breaks this is refused as malformed). The
//     guest adds them to the system's trust and points the usual variables
//     at them for the agent and every exec, so HTTPS through the host's
//     credential broker, or a company's TLS-inspecting proxy, is trusted.
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
// The "interrupt" command came later without a version bump too: an older
// guest answers it with an error naming the unknown command.
//
// The package is not a transport: it neither dials nor retries.
package protocol

import (
	"errors"
	"fmt"
)

// Version is the protocol version the guest announces in system:ready.
// Version 3 added start's ca_cert and the ports event; version 4 let
// ca_cert carry the host's own CAs too (MaxCACert from 16 KiB to 512 KiB).
const Version = 4

// MaxLine bounds one encoded line, newline included.
const MaxLine = 1 << 20

// TrialMarker is the console line sandbar-init prints, then powers off,
// when booted with sandbar.trial=1: the host's proof that a hypervisor
// runs the guest (the KVM trial) and the floor of the boot benchmark.
const TrialMarker = "sandbar-init: trial ok"

// CaptureMarker starts the console line sandbar-init prints, then powers
// off, when booted with sandbar.capture once the prepared environment's
// disk is filled: files=N bytes=N workspace_paths=N follow it.
const CaptureMarker = "sandbar-init: capture ok"

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
	// CmdInterrupt sends SIGINT to the agent's process group: what Ctrl-C
	// does at a terminal, for agents that take it as "end this turn".
	// The agent is not stopped; one that does not handle SIGINT may exit,
	// and agent:exit says so.
	CmdInterrupt = "interrupt"
)

// Event names (guest → host).
const (
	EvReady        = "system:ready"
	EvAgentStarted = "agent:started"
	// EvAgentPrepared answers a start with prepare: the agent's user,
	// git, trust and branch are ready, and no agent runs.
	EvAgentPrepared = "agent:prepared"
	EvAgentStdout   = "agent:stdout"
	EvAgentStderr   = "agent:stderr"
	EvAgentExit     = "agent:exit"
	EvExecStdout    = "exec:stdout"
	EvExecStderr    = "exec:stderr"
	EvExecResult    = "exec:result"
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
	// EvToolOutput carries what a running tool of the agent writes to a
	// file (Claude Code's Bash tool writes its command's output to one):
	// Data or B64 (new bytes, at most MaxToolChunk), PID (the oldest
	// process holding the file), Elapsed (milliseconds since it
	// started), Skipped (bytes left out for the rate bound, or because
	// the file is binary: Binary) and Done (no process of the agent
	// holds the file any more). It comes at
	// least once a second while a tool runs, for its elapsed time. It is
	// a courtesy view: the host keeps no more of it than it shows.
	EvToolOutput = "tool:output"
)

// Bounds of tool:output: the bytes of one event, and the bytes a session's
// tools may send a second (in bursts of up to a second's worth); the rest
// is skipped and counted.
const (
	MaxToolChunk   = 8 << 10
	ToolOutputRate = 32 << 10
)

// Bounds of the session network's messages.
const (
	// MaxNetError bounds system:ready's net_error, in bytes.
	MaxNetError = 1024
	// MaxNotes bounds agent:started's notes, and MaxNote each one's
	// bytes.
	MaxNotes = 8
	MaxNote  = 512
	// MaxCACert bounds start's ca_cert, in bytes, and MaxCACerts the
	// certificates in it: Sandbar's CA and those the host trusts beyond
	// the stock bundle (a company's, a person's own), within what one
	// start line (MaxLine) holds beside the rest of it.
	MaxCACert  = 512 << 10
	MaxCACerts = 256
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
