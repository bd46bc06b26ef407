package engine

import (
	"context"
	"net"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
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
			Agent: sessiontest.Shell("yes 'a line of output the subscriber does not read' | head -n 200000; echo flooded; sleep 600")})
		if err != nil {
			t.Fatal(err)
		}
		waitOutput(t, f, s.ID, "flooded") // far more than a socket holds
		within(t, 5*time.Second, "Serve, with a subscriber that never reads,", stop)
	})
}
