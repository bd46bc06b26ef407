package supervisor

import (
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
}

// kill ends the exec's whole process group.
func (e *execProc) kill() { e.signal(syscall.SIGKILL) }

func (s *session) exec(c protocol.Command) {
	s.mu.Lock()
	_, dup := s.execs[c.ID]
	workdir, startEnv := s.workdir, s.env
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
	ch, err := spawn(spawnSpec{
		argv:  c.Argv,
		env:   mergeEnv(baseEnv(u), startEnv, c.Env),
		dir:   dir,
		user:  u,
		stdin: len(c.StdinBytes()) > 0,
	})
	if err != nil {
		fail(err)
		return
	}
	e := &execProc{child: ch, id: c.ID}
	s.mu.Lock()
	s.execs[c.ID] = e
	s.mu.Unlock()
	s.log.Debug("exec started", "id", c.ID, "pid", ch.cmd.Process.Pid, "argv0", c.Argv[0])
	timeout := time.Duration(c.Timeout) * time.Millisecond
	s.wg.Go(func() { s.runExec(e, c.StdinBytes(), timeout) })
}

func (s *session) runExec(e *execProc, stdin []byte, timeout time.Duration) {
	var pipes sync.WaitGroup
	pipes.Go(func() { s.pumpChunks(e.stdout, e.exited, protocol.EvExecStdout, e.id) })
	pipes.Go(func() { s.pumpChunks(e.stderr, e.exited, protocol.EvExecStderr, e.id) })
	if e.stdin != nil {
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
	stopWaiting(e.stdout, e.stderr)
	if e.stdin != nil {
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
