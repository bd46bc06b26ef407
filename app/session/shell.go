package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"sandbar/app/sandbox"
	"sandbar/guest/protocol"
)

// Terminal is an interactive command in a session's VM, as Shell starts
// it: writes go to its stdin, and Wait returns how it ended. Both the
// local Manager and the engine's Remote hand one out.
type Terminal interface {
	io.Writer
	// CloseWrite ends its stdin (on a terminal: ^D).
	CloseWrite() error
	// Resize sets its terminal's size.
	Resize(rows, cols int) error
	// Wait returns when it has exited; cancelling ctx kills it.
	Wait(ctx context.Context) (sandbox.ExecResult, error)
}

var _ Terminal = (*sandbox.Process)(nil)

// ShellCommand is what Shell runs when the request names nothing: the
// agent user's login shell, in the workspace.
var ShellCommand = []string{"bash", "-l"}

// Shell starts an interactive command in a running session's VM, by
// default ShellCommand as the agent user in the workspace: on a
// pseudo-terminal when req.PTY, else on pipes with stdin open. Its output
// is redacted. The caller must Wait.
func (m *Manager) Shell(ctx context.Context, ref string, req sandbox.ExecRequest, stdout, stderr io.Writer) (Terminal, error) {
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.shell(req, stdout, stderr)
}

func (r *run) shell(req sandbox.ExecRequest, stdout, stderr io.Writer) (Terminal, error) {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return nil, fmt.Errorf("session %s is not running yet: %w", r.id, ErrState)
	}
	if len(req.Argv) == 0 {
		req.Argv = ShellCommand
	}
	req.Interactive, req.Stdin, req.Timeout = true, nil, 0
	how := "pipes"
	if req.PTY {
		how = "a terminal"
	}
	r.addLine("exec", fmt.Sprintf("$ %s (shell on %s)", r.red.Redact(strings.Join(req.Argv, " ")), how))
	outW, errW := r.red.Writer(orDiscard(stdout)), r.red.Writer(orDiscard(stderr))
	p, err := sb.Client.StartExec(req, outW, errW)
	if err != nil {
		return nil, err
	}
	return &redactedTerminal{Process: p, outW: outW, errW: errW}, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// redactedTerminal flushes its redacting writers once the command ends.
type redactedTerminal struct {
	*sandbox.Process
	outW, errW io.WriteCloser
}

func (t *redactedTerminal) Wait(ctx context.Context) (sandbox.ExecResult, error) {
	res, err := t.Process.Wait(ctx)
	t.outW.Close()
	t.errW.Close()
	return res, err
}

// Over engine.sock a shell is one connection: the request line, then the
// caller's frames (stdin, eof, resize) one JSON object a line, while the
// engine sends output replies, {"started":true} once the command runs,
// and a final done reply with its result. The caller hanging up kills it.

// shellFrame is one caller→engine message of a shell connection.
type shellFrame struct {
	Stdin []byte `json:"stdin,omitempty"`
	EOF   bool   `json:"eof,omitempty"`
	Rows  int    `json:"rows,omitempty"`
	Cols  int    `json:"cols,omitempty"`
}

// maxFrame bounds one frame line: a stdin piece in base64, with room.
const maxFrame = 2*protocol.MaxStdinPiece + 1024

func (e *Engine) serveShell(ctx context.Context, cancel context.CancelFunc, conn net.Conn, br *bufio.Reader, req request, send func(reply) error) {
	done := func(r reply, err error) {
		r.Done = true
		if err != nil {
			r.Error, r.Code = err.Error(), errCode(err)
		}
		send(r)
	}
	if req.Exec == nil {
		done(reply{}, fmt.Errorf("shell without a request: %w", ErrBadOptions))
		return
	}
	out := writerFunc(func(p []byte) (int, error) { return len(p), send(reply{Stdout: p}) })
	errw := writerFunc(func(p []byte) (int, error) { return len(p), send(reply{Stderr: p}) })
	term, err := e.m.Shell(ctx, req.ID, *req.Exec, out, errw)
	if err != nil {
		done(reply{}, err)
		return
	}
	send(reply{Started: true})
	var frames sync.WaitGroup
	frames.Go(func() {
		defer cancel() // the caller hung up (or spoke nonsense): kill it
		for {
			line, err := readFrame(br)
			if err != nil {
				return
			}
			var f shellFrame
			if err := json.Unmarshal(line, &f); err != nil {
				e.m.log.Warn("bad shell frame from an engine client", "err", err)
				return
			}
			// Errors mean the command has ended; Wait reports it.
			if len(f.Stdin) > 0 {
				term.Write(f.Stdin)
			}
			if f.EOF {
				term.CloseWrite()
			}
			if f.Rows > 0 || f.Cols > 0 {
				term.Resize(f.Rows, f.Cols)
			}
		}
	})
	res, err := term.Wait(ctx)
	done(reply{Exec: &res}, err)
	conn.Close() // ends the frame reader
	frames.Wait()
}

// readFrame reads one line of at most maxFrame bytes.
func readFrame(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxFrame {
			return nil, fmt.Errorf("a shell frame is longer than %d bytes", maxFrame)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// Shell is Manager.Shell in the engine. ctx bounds reaching the engine
// and starting the command; Wait's ctx bounds the rest.
func (r *Remote) Shell(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (Terminal, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", r.Socket)
	if err != nil {
		return nil, fmt.Errorf("reach the Sandbar engine at %s: %w", r.Socket, err)
	}
	t := &remoteTerminal{conn: c, enc: json.NewEncoder(c), stdout: orDiscard(stdout), stderr: orDiscard(stderr),
		end: make(chan shellEnd, 1)}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	b, _ := json.Marshal(request{Op: "shell", ID: id, Exec: &req})
	if _, err := c.Write(append(b, '\n')); err != nil {
		c.Close()
		return nil, fmt.Errorf("reach the Sandbar engine: %w", err)
	}
	t.dec = json.NewDecoder(bufio.NewReaderSize(c, 64<<10))
	for {
		rep, err := t.next()
		if err != nil {
			c.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if rep.Done {
			c.Close()
			if rep.Error != "" {
				return nil, &remoteError{msg: rep.Error, code: codes[rep.Code]}
			}
			return nil, errors.New("the Sandbar engine ended the shell before it started")
		}
		if rep.Started {
			break
		}
	}
	t.readerDone = make(chan struct{})
	go t.read()
	return t, nil
}

type shellEnd struct {
	res sandbox.ExecResult
	err error
}

// remoteTerminal is a shell served by the engine over one connection.
type remoteTerminal struct {
	conn           net.Conn
	dec            *json.Decoder
	stdout, stderr io.Writer
	mu             sync.Mutex // one frame at a time
	enc            *json.Encoder
	end            chan shellEnd
	readerDone     chan struct{}
}

// next decodes one reply, writing any output it carries.
func (t *remoteTerminal) next() (reply, error) {
	var rep reply
	if err := t.dec.Decode(&rep); err != nil {
		if errors.Is(err, io.EOF) {
			return rep, errors.New("the Sandbar engine hung up")
		}
		return rep, fmt.Errorf("read from the Sandbar engine: %w", err)
	}
	if rep.Stdout != nil {
		if _, err := t.stdout.Write(rep.Stdout); err != nil {
			return rep, err
		}
	}
	if rep.Stderr != nil {
		if _, err := t.stderr.Write(rep.Stderr); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (t *remoteTerminal) read() {
	defer close(t.readerDone)
	for {
		rep, err := t.next()
		if err != nil {
			t.end <- shellEnd{err: err}
			return
		}
		if rep.Done {
			var e shellEnd
			if rep.Exec != nil {
				e.res = *rep.Exec
			}
			if rep.Error != "" {
				e.err = &remoteError{msg: rep.Error, code: codes[rep.Code]}
			}
			t.end <- e
			return
		}
	}
}

func (t *remoteTerminal) frame(f shellFrame) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.enc.Encode(f); err != nil {
		return fmt.Errorf("send to the Sandbar engine: %w", err)
	}
	return nil
}

func (t *remoteTerminal) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), protocol.MaxStdinPiece)
		if err := t.frame(shellFrame{Stdin: p[:k]}); err != nil {
			return n, err
		}
		n, p = n+k, p[k:]
	}
	return n, nil
}

func (t *remoteTerminal) CloseWrite() error { return t.frame(shellFrame{EOF: true}) }

func (t *remoteTerminal) Resize(rows, cols int) error {
	return t.frame(shellFrame{Rows: rows, Cols: cols})
}

// Wait returns the command's result. Cancelling ctx hangs up, which makes
// the engine kill it.
func (t *remoteTerminal) Wait(ctx context.Context) (sandbox.ExecResult, error) {
	defer func() {
		t.conn.Close()
		<-t.readerDone
	}()
	select {
	case e := <-t.end:
		return e.res, e.err
	case <-ctx.Done():
		t.conn.Close()
		<-t.readerDone
		return sandbox.ExecResult{}, ctx.Err()
	}
}

// Shell starts an interactive command in a session's VM, through the
// engine.
func (c *Client) Shell(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (Terminal, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return nil, err
	}
	return r.Shell(ctx, id, req, stdout, stderr)
}
