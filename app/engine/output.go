package engine

import (
	"context"
	"errors"
	"sync"
)

// outputQueue carries a command's output (Exec, Shell) to its caller
// without ever making the writer wait. The writer is the session's guest
// channel reader: the one goroutine that routes every event of that
// session (the agent's output, stats, saves), so a caller that stops
// reading must not hold it. Output waits here, up to maxQueuedOutput
// bytes, while its own goroutine sends it; past that, the caller has
// stopped reading, and the command is cancelled (ctx's cancel kills it)
// rather than anything waiting.
type outputQueue struct {
	out    *sender
	cancel context.CancelFunc

	mu     sync.Mutex
	items  []Output
	bytes  int
	err    error
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

// maxQueuedOutput bounds the output waiting for one caller.
const maxQueuedOutput = 16 << 20

// errStalled is the queue's word for a caller that stopped reading.
var errStalled = errors.New("the caller stopped reading the command's output (more than 16 MiB waited): the command was ended")

func newOutputQueue(out *sender, cancel context.CancelFunc) *outputQueue {
	q := &outputQueue{out: out, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// writers are the command's stdout and stderr.
func (q *outputQueue) writers() (stdout, stderr writerFunc) {
	return func(p []byte) (int, error) { return len(p), q.put(Output{Stdout: p}) },
		func(p []byte) (int, error) { return len(p), q.put(Output{Stderr: p}) }
}

// put queues o (a copy of it: the writer's buffer is its own), or fails
// once the caller has stopped reading.
func (q *outputQueue) put(o Output) error {
	n := len(o.Stdout) + len(o.Stderr)
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.err != nil:
		return q.err
	case q.closed:
		return errors.New("the command's output came after its end")
	case q.bytes+n > maxQueuedOutput && len(q.items) > 0:
		q.err = errStalled
		q.items, q.bytes = nil, 0
		q.cancel()
		return q.err
	}
	o.Stdout, o.Stderr = clone(o.Stdout), clone(o.Stderr)
	q.items = append(q.items, o)
	q.bytes += n
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// run sends the queued output until close, then what is left.
func (q *outputQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items, q.bytes = nil, 0
		q.mu.Unlock()
		for _, o := range items {
			if err := q.out.item(o); err != nil {
				q.mu.Lock()
				if q.err == nil {
					q.err = err
				}
				q.items, q.bytes = nil, 0
				q.mu.Unlock()
				q.cancel()
				// The sender fails every later send at once: the rest
				// is dropped below.
			}
		}
		if closed {
			return
		}
		<-q.wake
	}
}

// close sends what is queued and returns once it is sent (each write is
// bounded by writeTimeout), with the error that ended the output, if one
// did.
func (q *outputQueue) close() error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}
