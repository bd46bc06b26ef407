package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

	"sandbar/app/sandbox"
)

// SetupStep is a command an environment runs in a session's VM before
// the agent starts (a devcontainer.json's postCreateCommand or
// postStartCommand): as the agent's user, with the agent's git identity,
// trust and sudo already in place, in the workspace. Its output goes to
// the session's log; a step that fails fails the start, naming the step,
// its exit code and the tail of its output.
type SetupStep struct {
	// Name is what the log and a failure call it: the setting it comes
	// from ("postCreateCommand"), with a part's name when it has parts.
	Name string
	Argv []string
	Env  map[string]string
	// Cwd is where it runs; "" is the workspace.
	Cwd string
	// User is "" (the agent's user) or "root", for Sandbar's own steps
	// that ready the machine.
	User string
	// Timeout bounds it; 0 is setupTimeout.
	Timeout time.Duration
	// Stdin is given to the command, then closed; nil is empty.
	Stdin []byte
	// Done is what the log says once it succeeded, before " in TIME";
	// "" is "NAME done".
	Done string
}

// setupTimeout bounds a setup step that gives no timeout of its own:
// long enough for a cold `npm ci` or `go mod download` under emulation.
const setupTimeout = 30 * time.Minute

// setupTail is how much of a failed step's output its error quotes.
const setupTail = 2048

// ErrSetupFailed is a setup step that exited non-zero or could not run.
var ErrSetupFailed = errors.New("the environment's setup failed")

// runSetup prepares the agent's user in the guest, then runs the run's
// setup stages in order, the steps of a stage together. It returns nil at
// once when there are none.
func (r *run) runSetup(ctx context.Context, start sandbox.AgentStart, vmDone <-chan error) error {
	if len(r.setupSteps) == 0 {
		return nil
	}
	r.setActivity(ctx, ActivityWorking, "setting up the environment")
	if err := r.sb.PrepareAgent(start); err != nil {
		return err
	}
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-r.agentPrepared:
	case msg := <-r.startErr:
		return fmt.Errorf("prepare the agent's user for the environment's setup: %s", msg)
	case err := <-vmDone:
		return fmt.Errorf("the VM stopped before the environment's setup: %v", err)
	case <-timer.C:
		return errors.New("the guest did not prepare the agent's user within a minute")
	case <-r.stopReq:
		return errSetupStopped
	}
	for _, stage := range r.setupSteps {
		if _, stop := r.stopRequested(); stop {
			return errSetupStopped
		}
		errs := make([]error, len(stage))
		var wg sync.WaitGroup
		for i, st := range stage {
			prefix := ""
			if len(stage) > 1 {
				prefix = "[" + st.Name + "] "
			}
			wg.Go(func() { errs[i] = r.runSetupStep(ctx, st, prefix) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// errSetupStopped: a stop came while the setup ran; the caller stops.
var errSetupStopped = errors.New("stopped during the environment's setup")

func (r *run) runSetupStep(ctx context.Context, st SetupStep, prefix string) error {
	timeout := st.Timeout
	if timeout <= 0 {
		timeout = setupTimeout
	}
	r.addLine("exec", "$ "+st.Name+": "+r.red.Redact(strings.Join(st.Argv, " ")))
	out := &setupOutput{r: r, prefix: prefix, tail: boundedTail{max: setupTail}}
	began := time.Now()
	// A stop ends the step (exec:kill) rather than wait for it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.stopReq:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := r.execSetup(ctx, sandbox.ExecRequest{Argv: st.Argv, Cwd: st.Cwd, Env: st.Env, User: st.User, Timeout: timeout, Stdin: st.Stdin}, out)
	out.flush()
	took := time.Since(began).Round(time.Millisecond)
	switch {
	case err != nil && ctx.Err() != nil:
		if _, stop := r.stopRequested(); stop {
			return errSetupStopped
		}
		return fmt.Errorf("%w: %s could not run: %v", ErrSetupFailed, st.Name, err)
	case err != nil:
		return fmt.Errorf("%w: %s could not run: %v", ErrSetupFailed, st.Name, err)
	case res.TimedOut:
		return fmt.Errorf("%w: %s ran past %s and was stopped; its output ended with: %s", ErrSetupFailed, st.Name, timeout, out.tail.text())
	case res.Code != 0:
		return fmt.Errorf("%w: %s exited %d after %s; its output ended with: %s", ErrSetupFailed, st.Name, res.Code, took, out.tail.text())
	}
	done := st.Done
	if done == "" {
		done = st.Name + " done"
	}
	r.systemLine(fmt.Sprintf("environment: %s in %s", done, took))
	return nil
}

// inlineStdin is the most stdin a setup step sends with its exec
// command; more is streamed (the command's line is bounded).
const inlineStdin = 256 << 10

// execSetup runs req, its output to out. Stdin past inlineStdin goes to
// the program in pieces, the guest acknowledging them.
func (r *run) execSetup(ctx context.Context, req sandbox.ExecRequest, out *setupOutput) (sandbox.ExecResult, error) {
	return execStreamed(ctx, r.sb.Client, req, out)
}

// execStreamed runs req on c, its output to out, streaming stdin past
// inlineStdin (a preparing machine's steps run through it too).
func execStreamed(ctx context.Context, c *sandbox.Client, req sandbox.ExecRequest, out io.Writer) (sandbox.ExecResult, error) {
	if len(req.Stdin) <= inlineStdin {
		return c.Exec(ctx, req, out, out)
	}
	data := req.Stdin
	req.Stdin, req.Interactive = nil, true
	p, err := c.StartExec(req, out, out)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Write(data)
		if err == nil {
			err = p.CloseWrite()
		}
		wrote <- err
	}()
	res, err := p.Wait(ctx)
	if werr := <-wrote; err == nil && werr != nil && !errors.Is(werr, sandbox.ErrExited) {
		err = fmt.Errorf("send its stdin: %w", werr)
	}
	return res, err
}

// setupOutput turns a setup step's output into the session log's lines
// (redacted, each bounded by the sink) and keeps its tail for an error.
type setupOutput struct {
	r       *run
	prefix  string // a step's name when it runs beside others
	partial []byte
	tail    boundedTail
}

// maxSetupLine bounds a line held while incomplete; longer ones are cut.
const maxSetupLine = 8192

func (w *setupOutput) Write(p []byte) (int, error) {
	n := len(p)
	w.tail.write(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			room := maxSetupLine - len(w.partial)
			w.partial = append(w.partial, p[:min(room, len(p))]...)
			if room <= len(p) {
				w.flush()
			}
			break
		}
		w.partial = append(w.partial, p[:min(i, maxSetupLine-len(w.partial))]...)
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

// flush logs the line held, if any.
func (w *setupOutput) flush() {
	if len(w.partial) == 0 {
		return
	}
	w.r.addLine("exec", w.prefix+w.r.red.Redact(string(w.partial)))
	w.partial = w.partial[:0]
}

// boundedTail keeps the last max bytes written.
type boundedTail struct {
	max int
	buf []byte
}

func (t *boundedTail) write(p []byte) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

// text is the tail as one line of text for an error: valid UTF-8, its
// line breaks as " | ", "(no output)" when empty.
func (t *boundedTail) text() string {
	// The guest's bytes: no control character reaches a terminal.
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(string(t.buf), "?"))
	s = strings.Join(strings.FieldsFunc(strings.TrimSpace(s), func(r rune) bool { return r == '\n' || r == '\r' }), " | ")
	if s == "" {
		return "(no output)"
	}
	return s
}
