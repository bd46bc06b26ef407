package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"sandbar/guest/protocol"
)

// The users an ExecRequest may run as.
const (
	UserAgent = protocol.UserAgent // the agent's unprivileged user (the default)
	UserRoot  = protocol.UserRoot
)

// MaxWinSize bounds an ExecRequest's (and a Resize's) rows and columns;
// DefaultWorkdir is where a session's workspace is in the guest.
const (
	MaxWinSize     = protocol.MaxWinSize
	DefaultWorkdir = protocol.DefaultWorkdir
)

// ExecRequest is one command to run in the guest.
type ExecRequest struct {
	Argv []string
	Cwd  string
	Env  map[string]string
	// User is UserAgent (default) or UserRoot.
	User    string
	Timeout time.Duration
	Stdin   []byte

	// Interactive keeps stdin open: Process.Write feeds it and
	// Process.CloseWrite ends it (StartExec only).
	Interactive bool `json:",omitempty"`
	// PTY runs the command on a pseudo-terminal of Rows×Cols (0×0: the
	// guest's default) with TERM=Term; its output all comes as stdout.
	// It implies Interactive.
	PTY  bool   `json:",omitempty"`
	Rows int    `json:",omitempty"`
	Cols int    `json:",omitempty"`
	Term string `json:",omitempty"`
	// Tools runs the command with Sandbar's own tools (its sh and git),
	// whatever image the guest's root is: saves, changes and diffs.
	Tools bool `json:",omitempty"`
}

// ExecResult is how an exec ended.
type ExecResult struct {
	Code     int
	Signal   string
	TimedOut bool
}

// ErrNoPTY means the guest predates PTY and interactive execs.
var ErrNoPTY = errors.New("this guest image has no terminal support: rebuild it with `sandbar image build`, then restart the session")

// Exec runs req in the guest, writing its output to stdout and stderr (nil
// discards) as it arrives, and returns when it has exited. Cancelling ctx
// kills it (exec:kill) and returns ctx's error once the guest confirms.
// A command the guest could not start is an error naming why.
func (c *Client) Exec(ctx context.Context, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error) {
	req.Interactive, req.PTY = false, false
	p, err := c.StartExec(req, stdout, stderr)
	if err != nil {
		return ExecResult{}, err
	}
	return p.Wait(ctx)
}

// Process is an exec started by StartExec. Its output goes to the writers
// StartExec was given, on the Client's reader goroutine.
type Process struct {
	c     *Client
	id    string
	name  string
	p     *pendingExec
	ended chan struct{} // closed when Wait has its answer

	mu       sync.Mutex
	inflight int64         // stdin bytes sent and not yet acknowledged
	credit   chan struct{} // a token when inflight went down
	eof      bool
	wmu      sync.Mutex // one Write at a time, so pieces keep their order
}

// StartExec starts req in the guest and returns at once. With
// req.Interactive or req.PTY, Write feeds the program's stdin and, with
// PTY, Resize sizes its terminal. Wait must be called, and returns how it
// ended.
func (c *Client) StartExec(req ExecRequest, stdout, stderr io.Writer) (*Process, error) {
	id := "x" + strconv.FormatUint(c.nextID.Add(1), 10)
	cmd := protocol.Command{Cmd: protocol.CmdExec, ID: id, Argv: req.Argv, Cwd: req.Cwd, Env: req.Env,
		User: req.User, Timeout: req.Timeout.Milliseconds(),
		PTY: req.PTY, Rows: req.Rows, Cols: req.Cols, Term: req.Term, StdinOpen: req.Interactive && !req.PTY,
		Tools: req.Tools}
	if req.Stdin != nil {
		cmd.SetStdin(req.Stdin)
	}
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	name := "exec"
	if len(req.Argv) > 0 {
		name = "exec " + req.Argv[0]
	}
	if req.PTY || req.Interactive {
		select {
		case <-c.ready:
			if !c.readyEv.HasFeature(protocol.FeaturePTY) {
				return nil, fmt.Errorf("%s: %w", name, ErrNoPTY)
			}
		default:
			return nil, fmt.Errorf("%s: the guest is not ready yet", name)
		}
	}
	x := &Process{c: c, id: id, name: name, ended: make(chan struct{}), credit: make(chan struct{}, 1)}
	x.p = &pendingExec{stdout: stdout, stderr: stderr, result: make(chan protocol.Event, 1)}
	if req.PTY || req.Interactive {
		x.p.ack = x.acked
	}
	c.mu.Lock()
	c.execs[id] = x.p
	c.mu.Unlock()
	if err := c.Send(cmd); err != nil {
		x.forget()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return x, nil
}

func (x *Process) forget() {
	x.c.mu.Lock()
	delete(x.c.execs, x.id)
	x.c.mu.Unlock()
}

// acked runs on the reader goroutine: the guest handed n stdin bytes to
// the program.
func (x *Process) acked(n int64) {
	x.mu.Lock()
	x.inflight = max(0, x.inflight-n)
	x.mu.Unlock()
	select {
	case x.credit <- struct{}{}:
	default:
	}
}

// ErrExited is returned by Write and Resize once the process has ended.
var ErrExited = errors.New("the command has exited")

// Write sends p to the program's stdin in pieces, waiting while the
// guest holds a window's worth it has not handed over yet.
func (x *Process) Write(p []byte) (int, error) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.p.ack == nil {
		return 0, fmt.Errorf("%s: stdin was given up front: start it Interactive", x.name)
	}
	n := 0
	for len(p) > 0 {
		x.mu.Lock()
		room, eof := protocol.StdinWindow-x.inflight, x.eof
		x.mu.Unlock()
		if eof {
			return n, fmt.Errorf("%s: write after CloseWrite", x.name)
		}
		if room <= 0 {
			select {
			case <-x.credit:
				continue
			case <-x.ended:
				return n, ErrExited
			case <-x.c.done:
				return n, x.c.err
			}
		}
		k := int(min(room, int64(len(p)), protocol.MaxStdinPiece))
		cmd := protocol.Command{Cmd: protocol.CmdExecStdin, ID: x.id}
		cmd.SetStdin(p[:k])
		x.mu.Lock()
		x.inflight += int64(k)
		x.mu.Unlock()
		if err := x.send(cmd); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

// CloseWrite ends the program's stdin: a pipe is closed, a terminal gets
// its end-of-file character (^D).
func (x *Process) CloseWrite() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	already := x.eof
	x.eof = true
	x.mu.Unlock()
	if already || x.p.ack == nil {
		return nil
	}
	return x.send(protocol.Command{Cmd: protocol.CmdExecStdin, ID: x.id, EOF: true})
}

// Resize sets the size of the program's terminal.
func (x *Process) Resize(rows, cols int) error {
	cmd := protocol.Command{Cmd: protocol.CmdExecResize, ID: x.id, Rows: rows, Cols: cols}
	if err := cmd.Validate(); err != nil {
		return err
	}
	return x.send(cmd)
}

func (x *Process) send(cmd protocol.Command) error {
	select {
	case <-x.ended:
		return ErrExited
	default:
	}
	if err := x.c.Send(cmd); err != nil {
		return fmt.Errorf("%s: %w", x.name, err)
	}
	return nil
}

// Kill ends the process (exec:kill); Wait then returns its result.
func (x *Process) Kill() error { return x.send(protocol.Command{Cmd: protocol.CmdExecKill, ID: x.id}) }

// Wait returns when the process has exited. Cancelling ctx kills it and
// returns ctx's error once the guest confirms (or after 10 s).
func (x *Process) Wait(ctx context.Context) (ExecResult, error) {
	defer close(x.ended)
	c, p, name := x.c, x.p, x.name
	finished := make(chan struct{})
	defer close(finished)
	var ctxErr error
	done := ctx.Done()
	for {
		select {
		case ev := <-p.result:
			if ev.Ev == protocol.EvError {
				return ExecResult{}, fmt.Errorf("%s: the guest refused it: %s", name, ev.Message)
			}
			if ev.Error != "" {
				return ExecResult{}, fmt.Errorf("%s: %s", name, ev.Error)
			}
			res := ExecResult{Code: ev.Code, Signal: ev.Signal, TimedOut: ev.TimedOut}
			if ctxErr != nil {
				return res, ctxErr
			}
			if p.writeErr != nil {
				return res, fmt.Errorf("%s: write its output: %w", name, p.writeErr)
			}
			return res, nil
		case <-c.done:
			x.forget()
			return ExecResult{}, fmt.Errorf("%s: %w", name, c.err)
		case <-done:
			ctxErr = ctx.Err()
			done = nil
			c.Send(protocol.Command{Cmd: protocol.CmdExecKill, ID: x.id})
			// The guest answers with exec:result; bound the wait anyway.
			go func() {
				select {
				case <-time.After(10 * time.Second):
					x.forget()
					select {
					case p.result <- protocol.Event{Ev: protocol.EvExecResult, Code: -1, Signal: "SIGKILL"}:
					default:
					}
				case <-c.done:
				case <-finished:
				}
			}()
		}
	}
}
