package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"sandbar/app/session"
)

// A shell is one connection that both sides keep talking on: after the
// call the client sends ShellInput lines (stdin, its end, resizes) while
// the engine sends Output items, a Started frame once the command runs,
// and a final frame with its ExecReply. The client hanging up kills the
// command.

// stdinPiece bounds the stdin one ShellInput carries; maxInputLine, one
// such line in JSON (base64), with room.
const (
	stdinPiece   = 32 << 10
	maxInputLine = 2*stdinPiece + 1024
)

func (s *Server) serveShell(ctx context.Context, cancel context.CancelFunc, conn net.Conn, br *bufio.Reader, raw json.RawMessage, out *sender) {
	var req ExecRequest
	if err := decode(raw, &req); err != nil {
		out.done(nil, err)
		return
	}
	// The command's output goes through a queue: the session's guest
	// channel must not wait on this caller (see outputQueue).
	q := newOutputQueue(out, cancel)
	stdout, stderr := q.writers()
	term, err := s.m.Shell(ctx, req.ID, req.Exec, stdout, stderr)
	if err != nil {
		q.close()
		out.done(nil, err)
		return
	}
	out.send(frame{Started: true})
	var input sync.WaitGroup
	input.Go(func() {
		defer cancel() // the caller hung up (or spoke nonsense): kill it
		for {
			line, err := readLine(br, maxInputLine)
			if err != nil {
				return
			}
			var in ShellInput
			if err := json.Unmarshal(line, &in); err != nil {
				s.log.Warn("bad shell input from an engine client", "session", req.ID, "err", err)
				return
			}
			// Errors mean the command has ended; Wait reports it.
			if len(in.Stdin) > 0 {
				term.Write(in.Stdin)
			}
			if in.EOF {
				term.CloseWrite()
			}
			if in.Rows > 0 || in.Cols > 0 {
				term.Resize(in.Rows, in.Cols)
			}
		}
	})
	res, err := term.Wait(ctx)
	if qerr := q.close(); qerr != nil {
		err = qerr
	}
	out.done(ExecReply{Result: res}, err)
	conn.Close() // ends the input reader
	input.Wait()
}

// Shell starts an interactive command in a session's VM, in the engine.
// ctx bounds reaching the engine and starting the command; Wait's ctx
// bounds the rest.
func (r *Remote) Shell(ctx context.Context, id string, req session.ExecRequest, stdout, stderr io.Writer) (session.Terminal, error) {
	c, err := r.open(ctx, OpShell, ExecRequest{ID: id, Exec: req})
	if err != nil {
		return nil, err
	}
	t := &remoteTerminal{c: c, stdout: orDiscard(stdout), stderr: orDiscard(stderr), end: make(chan shellEnd, 1), readerDone: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	f, err := until(c, t.output, func(f frame) bool { return f.Started })
	stop()
	if err != nil || !f.Started {
		c.conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			err = errors.New("the Sandbar engine ended the shell before it started")
		}
		return nil, err
	}
	go t.read()
	return t, nil
}

type shellEnd struct {
	res session.ExecResult
	err error
}

// remoteTerminal is a shell the engine runs, over one connection.
type remoteTerminal struct {
	c              *conn
	stdout, stderr io.Writer
	mu             sync.Mutex // one input line at a time
	end            chan shellEnd
	readerDone     chan struct{}
}

var _ session.Terminal = (*remoteTerminal)(nil)

// output writes an Output item where it goes.
func (t *remoteTerminal) output(o Output) error {
	if o.Stdout != nil {
		if _, err := t.stdout.Write(o.Stdout); err != nil {
			return err
		}
	}
	if o.Stderr != nil {
		if _, err := t.stderr.Write(o.Stderr); err != nil {
			return err
		}
	}
	return nil
}

func (t *remoteTerminal) read() {
	defer close(t.readerDone)
	var rep ExecReply
	err := finish(t.c, t.output, &rep)
	t.end <- shellEnd{res: rep.Result, err: err}
}

func (t *remoteTerminal) input(in ShellInput) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.c.enc.Encode(in); err != nil {
		return fmt.Errorf("send to the Sandbar engine: %w", err)
	}
	return nil
}

func (t *remoteTerminal) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), stdinPiece)
		if err := t.input(ShellInput{Stdin: p[:k]}); err != nil {
			return n, err
		}
		n, p = n+k, p[k:]
	}
	return n, nil
}

func (t *remoteTerminal) CloseWrite() error { return t.input(ShellInput{EOF: true}) }

func (t *remoteTerminal) Resize(rows, cols int) error {
	return t.input(ShellInput{Rows: rows, Cols: cols})
}

// Wait returns the command's result. Cancelling ctx hangs up, which makes
// the engine kill it.
func (t *remoteTerminal) Wait(ctx context.Context) (session.ExecResult, error) {
	defer func() {
		t.c.conn.Close()
		<-t.readerDone
	}()
	select {
	case e := <-t.end:
		return e.res, e.err
	case <-ctx.Done():
		return session.ExecResult{}, ctx.Err()
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
