package vz

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeConn is a connection that says when it is closed.
type fakeConn struct {
	id     int
	once   sync.Once
	closed chan struct{}
}

func newConn(id int) *fakeConn { return &fakeConn{id: id, closed: make(chan struct{})} }

func (c *fakeConn) Close() error { c.once.Do(func() { close(c.closed) }); return nil }

var errNotListening = errors.New("ECONNRESET")

func retryableTest(err error) bool { return errors.Is(err, errNotListening) }

// One connect whose completion never comes must not take the boot: the
// next attempt goes on after the per-attempt bound, and the stuck one's
// connection, should it come after all, is closed.
func TestDialStuckAttempt(t *testing.T) {
	release := make(chan struct{})
	late := newConn(1)
	var n atomic.Int32
	d := dialer[*fakeConn]{
		attempt: func() (*fakeConn, error) {
			switch n.Add(1) {
			case 1:
				<-release // the completion that does not arrive in time
				return late, nil
			case 2:
				return nil, errNotListening
			default:
				return newConn(3), nil
			}
		},
		retryable: retryableTest,
		stopped:   make(chan struct{}),
		per:       50 * time.Millisecond,
		every:     time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := dial(ctx, d)
	if err != nil {
		t.Fatalf("dial: %v (after %s)", err, time.Since(start))
	}
	if c.id != 3 {
		t.Errorf("got connection %d, want the third attempt's", c.id)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("dial took %s: the stuck attempt held it", took)
	}
	select {
	case <-c.closed:
		t.Error("dial closed the connection it returned")
	default:
	}
	close(release)
	select {
	case <-late.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the abandoned attempt's connection, made late, was not closed")
	}
}

func TestDialEnds(t *testing.T) {
	permanent := errors.New("EPERM")
	never := make(chan struct{})
	defer close(never)
	tests := []struct {
		name    string
		attempt func() (*fakeConn, error)
		stop    bool
		timeout time.Duration
		want    error
	}{
		{"a refusal that is not retryable ends it", func() (*fakeConn, error) { return nil, permanent }, false, 10 * time.Second, permanent},
		{"the VM stopping ends it", func() (*fakeConn, error) { return nil, errNotListening }, true, 10 * time.Second, errVMStopped},
		{"the boot's deadline ends it", func() (*fakeConn, error) { return nil, errNotListening }, false, 100 * time.Millisecond, context.DeadlineExceeded},
		{"the boot's deadline ends a stuck attempt", func() (*fakeConn, error) { <-never; return nil, errNotListening }, false, 100 * time.Millisecond, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stopped := make(chan struct{})
			if tc.stop {
				close(stopped)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			_, err := dial(ctx, dialer[*fakeConn]{attempt: tc.attempt, retryable: retryableTest, stopped: stopped, per: time.Hour, every: time.Millisecond})
			if !errors.Is(err, tc.want) {
				t.Errorf("dial: %v, want %v", err, tc.want)
			}
		})
	}
}
