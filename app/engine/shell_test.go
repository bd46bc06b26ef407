package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
)

// notifyBuffer collects output written on another goroutine.
type notifyBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	notify chan struct{}
}

func (n *notifyBuffer) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.b.Write(p)
	select {
	case n.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (n *notifyBuffer) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.String()
}

func (n *notifyBuffer) waitFor(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(30 * time.Second)
	for !rx.MatchString(n.String()) {
		select {
		case <-n.notify:
		case <-deadline:
			t.Fatalf("the shell never printed %q; it printed %q", re, n.String())
		}
	}
}

// TestShellThroughTheEngine: a client of the engine opens a terminal and a
// pipe shell in a session's VM, resizes the one, feeds the other, and a
// caller that hangs up kills what it ran.
func TestShellThroughTheEngine(t *testing.T) {
	f := newFixture(t)
	serve(t, f)
	c := newClient(t, f)
	ctx := context.Background()
	s, err := c.Start(ctx, session.Options{Repo: f.repo, Agent: session.AgentSpec{Command: "sleep", Args: []string{"600"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, f, s.ID, "agent started")

	out := &notifyBuffer{notify: make(chan struct{}, 1)}
	term, err := c.Shell(ctx, s.ID, session.ExecRequest{Argv: []string{"sh"}, PTY: true, Rows: 25, Cols: 90}, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(term, "stty size; cat README.md\n")
	out.waitFor(t, `25 90\r\nhello\r\n`)
	if err := term.Resize(50, 140); err != nil {
		t.Fatal(err)
	}
	io.WriteString(term, "stty size; exit 9\n")
	res, err := term.Wait(ctx)
	if err != nil || res.Code != 9 || !strings.Contains(out.String(), "50 140\r\n") {
		t.Fatalf("terminal: %+v, %v; printed %q", res, err, out.String())
	}

	// Pipe mode: stdin is a stream, output is not a terminal's.
	var pout, perr bytes.Buffer
	term, err = c.Shell(ctx, s.ID, session.ExecRequest{}, &pout, &perr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(term, "echo hi; echo oops >&2; [ -t 0 ] || echo no-tty\n")
	term.CloseWrite()
	res, err = term.Wait(ctx)
	if err != nil || res.Code != 0 || pout.String() != "hi\nno-tty\n" || perr.String() != "oops\n" {
		t.Fatalf("pipe shell: %+v, %v; out %q err %q", res, err, pout.String(), perr.String())
	}
	waitLog(t, f, s.ID, "(shell on a terminal)")

	// Hanging up kills it.
	term, err = c.Shell(ctx, s.ID, session.ExecRequest{Argv: []string{"sleep", "100"}, PTY: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hang, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := term.Wait(hang); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
	var ps bytes.Buffer
	for deadline := time.Now().Add(30 * time.Second); ; {
		ps.Reset()
		c.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"sh", "-c", "pgrep -fx 'sleep 100' || true"}}, &ps, nil)
		if ps.Len() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep 100 still runs after its caller hung up: %s", ps.String())
		}
	}

	if _, err := c.Shell(ctx, "nosuchsession", session.ExecRequest{}, nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("shell in an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := c.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
}
