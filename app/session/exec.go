package session

import (
	"context"
	"fmt"
	"io"
	"strings"

	"sandbar/app/sandbox"
)

// Exec runs a command in a running session's VM; its output is redacted.
func (m *Manager) Exec(ctx context.Context, ref string, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error) {
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return r.exec(ctx, req, stdout, stderr)
}

// exec runs a command in the VM; its output is redacted.
func (r *run) exec(ctx context.Context, req sandbox.ExecRequest, stdout, stderr io.Writer) (sandbox.ExecResult, error) {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return sandbox.ExecResult{}, fmt.Errorf("session %s is not running yet: %w", r.id, ErrState)
	}
	if err := r.pausedErr(); err != nil {
		return sandbox.ExecResult{}, err
	}
	r.addLine("exec", "$ "+r.red.Redact(strings.Join(req.Argv, " ")))
	var outW, errW io.WriteCloser
	if stdout != nil {
		outW = r.red.Writer(stdout)
		stdout = outW
	}
	if stderr != nil {
		errW = r.red.Writer(stderr)
		stderr = errW
	}
	res, err := sb.Client.Exec(ctx, req, stdout, stderr)
	if outW != nil {
		outW.Close()
	}
	if errW != nil {
		errW.Close()
	}
	return res, err
}
