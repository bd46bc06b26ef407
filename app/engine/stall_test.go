package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/vm/hostproc"
)

// within fails t unless f returns within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// TestShutdownWithStalledCallers: the engine stops promptly whatever its
// callers do: one that connects and never says hello, and a subscriber
// that never reads while a session floods it with events.
func TestShutdownWithStalledCallers(t *testing.T) {
	t.Run("silent", func(t *testing.T) {
		f := newFixture(t)
		_, stop := serve(t, f)
		c, err := net.Dial("unix", f.env.Paths.EngineSocket())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		within(t, 5*time.Second, "Serve, with a caller that never said hello,", stop)
	})
	t.Run("subscriber that never reads", func(t *testing.T) {
		f := newFixture(t)
		srv, stop := serve(t, f)
		ctx := context.Background()
		r, err := Dial(ctx, f.env.Paths)
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.open(ctx, OpSubscribe, SubscribeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.conn.Close()
		waitSubscribed(t, srv)
		s, err := f.env.Manager.Start(ctx, session.Options{Repo: f.repo, MemoryMiB: 512,
			Agent: sessiontest.Shell("yes 'a line of output the subscriber does not read' | head -n 20000; echo flooded; sleep 600")})
		if err != nil {
			t.Fatal(err)
		}
		waitOutput(t, f, s.ID, "flooded") // far more than a socket holds
		within(t, 5*time.Second, "Serve, with a subscriber that never reads,", stop)
	})
}

// TestStalledExecLeavesSessionFlowing: a caller of exec that stops reading
// while the command floods its output does not hold the session: the
// command is ended once its output has piled up, and the agent's output
// keeps coming.
func TestStalledExecLeavesSessionFlowing(t *testing.T) {
	f := newFixture(t)
	serve(t, f)
	ctx := context.Background()
	s, err := f.env.Manager.Start(ctx, session.Options{Repo: f.repo, MemoryMiB: 512,
		Agent: sessiontest.Shell(`while read -r line; do echo "heard: $line"; done`)})
	if err != nil {
		t.Fatal(err)
	}
	f.env.WaitState(t, s.ID, session.StateRunning, 30*time.Second)

	// The fake VM runs commands on this host: the command says its pid,
	// then writes output for ever.
	pidFile := filepath.Join(t.TempDir(), "pid")
	r, err := Dial(ctx, f.env.Paths)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.open(ctx, OpExec, ExecRequest{ID: s.ID, Exec: session.ExecRequest{
		Argv: []string{"sh", "-c", fmt.Sprintf("echo $$ > %s; exec cat /dev/zero", pidFile)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.conn.Close() // never read
	pid := 0
	poll(t, 30*time.Second, "the exec to start", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid != 0
	})
	poll(t, 30*time.Second, "the command of a caller that stopped reading to be ended", func() bool { return !hostproc.Running(pid, 0) })
	if err := f.env.Manager.Chat(ctx, s.ID, "ping"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, f, s.ID, "heard: ping")
}

// poll fails t unless cond holds within d, asking every 10 ms: for what
// another process does, which sends no event.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("waited %s for %s", d, what)
		case <-tick.C:
		}
	}
}
