package session

import (
	"context"
	"fmt"
	"io"
	"strings"

	"sandbar/app/sandbox"
)

// Terminal is an interactive command in a session's VM, as Shell starts
// it: writes go to its stdin, and Wait returns how it ended. Both the
// local Manager and the engine's client hand one out.
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
	if err := r.pausedErr(); err != nil {
		return nil, err
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
