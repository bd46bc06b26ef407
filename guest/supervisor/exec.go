package supervisor

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sandbar/guest/protocol"
)

// execProc is one running exec command.
type execProc struct {
	*child
	id       string
	timedOut atomic.Bool
	pty      *os.File    // the terminal's master; nil for a pipe exec
	in       *stdinQueue // stdin fed by exec:stdin; nil when given up front
}

// kill ends the exec's whole process group.
func (e *execProc) kill() { e.signal(syscall.SIGKILL) }

func (s *session) exec(c protocol.Command) {
	s.mu.Lock()
	_, dup := s.execs[c.ID]
	workdir, startEnv, imgEnv, trust := s.workdir, s.env, s.imageEnv, s.caEnv
	s.mu.Unlock()
	if dup {
		s.replyErr(c, "an exec with id %q is still running: use a new id", c.ID)
		return
	}
	fail := func(err error) {
		s.log.Warn("exec could not start", "id", c.ID, "err", err)
		s.emit(protocol.Event{Ev: protocol.EvExecResult, ID: c.ID, Code: -1, Error: err.Error()})
	}
	u, err := s.user(c.User)
	if err != nil {
		fail(err)
		return
	}
	dir := c.Cwd
	if dir == "" {
		dir = workdir
	}
	if dir == "" { // before start: the workspace all the same
		dir = s.cfg.Workspace
	}
	env := mergeEnv(baseEnv(u), imgEnv, trust, startEnv, c.Env)
	spec := spawnSpec{argv: c.Argv, env: env, dir: dir, user: u, stdin: len(c.StdinBytes()) > 0 || c.StdinOpen}
	if c.Tools {
		spec.env, spec.root = s.toolEnv(u, trust, c.Env), s.cfg.ToolRoot
	}
	var master *os.File
	if c.PTY {
		var slave *os.File
		if master, slave, err = openTerminal(u, c); err != nil {
			fail(err)
			return
		}
		defer slave.Close() // the child holds its own copy
		env["TERM"] = c.Term
		if c.Term == "" {
			env["TERM"] = protocol.DefaultTerm
		}
		spec.tty, spec.stdin = slave, false
	}
	ch, err := spawn(spec)
	if err != nil {
		if master != nil {
			master.Close()
		}
		fail(err)
		return
	}
	e := &execProc{child: ch, id: c.ID, pty: master}
	if master != nil {
		e.stdout, e.stdin = master, master
	}
	if c.PTY || c.StdinOpen {
		e.in = newStdinQueue()
		if p := c.StdinBytes(); len(p) > 0 {
			_ = e.in.push(p, false) // bounded by the line
		}
	}
	s.mu.Lock()
	s.execs[c.ID] = e
	s.mu.Unlock()
	s.log.Debug("exec started", "id", c.ID, "pid", ch.cmd.Process.Pid, "argv0", c.Argv[0], "pty", c.PTY)
	timeout := time.Duration(c.Timeout) * time.Millisecond
	s.wg.Go(func() { s.runExec(e, c.StdinBytes(), timeout) })
}

// openTerminal opens the PTY of exec c, sized as it asks.
func openTerminal(u User, c protocol.Command) (master, slave *os.File, err error) {
	master, slave, err = openPTY(u)
	if err != nil {
		return nil, nil, err
	}
	rows, cols := c.Rows, c.Cols
	if rows == 0 {
		rows, cols = protocol.DefaultRows, protocol.DefaultCols
	}
	if err := setWinSize(master, rows, cols); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("size the terminal: %w", err)
	}
	return master, slave, nil
}

func (s *session) runExec(e *execProc, stdin []byte, timeout time.Duration) {
	var pipes sync.WaitGroup
	pipes.Go(func() { s.pumpChunks(e.stdout, e.exited, protocol.EvExecStdout, e.id, e.pty != nil) })
	if e.stderr != nil {
		pipes.Go(func() { s.pumpChunks(e.stderr, e.exited, protocol.EvExecStderr, e.id, false) })
	}
	switch {
	case e.in != nil:
		pipes.Go(func() { s.feed(e) })
	case e.stdin != nil:
		pipes.Go(func() {
			// A child that never reads gets its stdin closed when it exits
			// (below), which ends this write.
			_, _ = e.stdin.Write(stdin)
			_ = e.stdin.Close()
		})
	}
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() {
			e.timedOut.Store(true)
			e.kill()
		})
		defer t.Stop()
	}
	_ = e.cmd.Wait()
	close(e.exited)
	stopWaiting(e.stdout)
	if e.stderr != nil {
		stopWaiting(e.stderr)
	}
	// A PTY's master is the output too: the pump closes it once drained,
	// which also ends a write to it that blocks.
	if e.stdin != nil && e.pty == nil {
		_ = e.stdin.Close()
	}
	pipes.Wait()
	code, sig := exitStatus(e.cmd.ProcessState)
	// Hold the lock while queueing the result so that a new exec reusing
	// this id cannot get output in before it.
	s.mu.Lock()
	delete(s.execs, e.id)
	s.emit(protocol.Event{Ev: protocol.EvExecResult, ID: e.id, Code: code, Signal: sig, TimedOut: e.timedOut.Load()})
	s.mu.Unlock()
}

func (s *session) execKill(c protocol.Command) {
	s.mu.Lock()
	e := s.execs[c.ID]
	s.mu.Unlock()
	if e == nil {
		s.replyErr(c, "no exec with id %q is running", c.ID)
		return
	}
	e.kill()
}

// interactive returns the running exec that c names, if it takes
// exec:stdin. One that has just ended is not an error: the host may have
// sent to it before it heard so.
func (s *session) interactive(c protocol.Command) *execProc {
	s.mu.Lock()
	e := s.execs[c.ID]
	s.mu.Unlock()
	if e == nil {
		s.log.Debug("no exec for "+c.Cmd+"; it may have just ended", "id", c.ID)
		return nil
	}
	if e.in == nil {
		s.replyErr(c, "exec %q was not started with pty or stdin_open: it takes no %s", c.ID, c.Cmd)
		return nil
	}
	return e
}

func (s *session) execStdin(c protocol.Command) {
	e := s.interactive(c)
	if e == nil {
		return
	}
	if err := e.in.push(c.StdinBytes(), c.EOF); err != nil {
		s.replyErr(c, "exec %q: %v", c.ID, err)
	}
}

func (s *session) execResize(c protocol.Command) {
	e := s.interactive(c)
	if e == nil {
		return
	}
	if e.pty == nil {
		s.replyErr(c, "exec %q has no terminal to resize: start it with pty", c.ID)
		return
	}
	if err := setWinSize(e.pty, c.Rows, c.Cols); err != nil {
		s.log.Debug("resize an exec's terminal", "id", c.ID, "err", err) // it is closing
	}
}

// eofChar is what a PTY exec gets for exec:stdin's eof: the line
// discipline's default VEOF (^D), which ends a read at the start of a line.
const eofChar = 0x04

// feed writes what exec:stdin queued to the exec's stdin, acknowledging
// each piece once the program has it, until eof, the exec's end, or a
// write error.
func (s *session) feed(e *execProc) {
	for {
		select {
		case <-e.in.wake:
		case <-e.exited:
			return
		}
		for {
			p, eof, ok := e.in.take()
			if !ok {
				break
			}
			if len(p) > 0 {
				if _, err := e.stdin.Write(p); err != nil {
					return // the exec is ending: its stdin is closed
				}
				if !s.emit(protocol.Event{Ev: protocol.EvExecStdinAck, ID: e.id, N: int64(len(p))}) {
					return
				}
			}
			if eof {
				if e.pty != nil {
					_, _ = e.stdin.Write([]byte{eofChar})
				} else {
					_ = e.stdin.Close()
				}
				return
			}
		}
	}
}

// stdinQueue holds stdin that exec:stdin sent and the program has not
// read yet, at most protocol.StdinWindow bytes: the host keeps within
// that by counting acknowledgements, so the command loop never waits on a
// program that does not read.
type stdinQueue struct {
	wake chan struct{} // a token when something was pushed

	mu      sync.Mutex
	pieces  [][]byte
	pending int
	eof     bool
}

func newStdinQueue() *stdinQueue { return &stdinQueue{wake: make(chan struct{}, 1)} }

func (q *stdinQueue) push(p []byte, eof bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.eof {
		return fmt.Errorf("stdin was already closed (eof)")
	}
	if q.pending+len(p) > protocol.StdinWindow {
		return fmt.Errorf("%d bytes of stdin are waiting for the program; %d more is past the window of %d: wait for exec:stdin_ack", q.pending, len(p), protocol.StdinWindow)
	}
	if len(p) > 0 {
		q.pieces = append(q.pieces, p)
		q.pending += len(p)
	}
	q.eof = eof
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// take returns the next piece, or the eof mark once every piece is taken;
// ok is false when there is nothing to do yet.
func (q *stdinQueue) take() (p []byte, eof, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pieces) > 0 {
		p, q.pieces = q.pieces[0], q.pieces[1:]
		q.pending -= len(p)
		return p, q.eof && len(q.pieces) == 0, true
	}
	return nil, q.eof, q.eof
}
