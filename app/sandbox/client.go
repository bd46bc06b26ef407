package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"sandbar/guest/protocol"
)

// ErrClosed is returned by a Client whose stream has ended.
var ErrClosed = errors.New("guest channel closed")

// ClientOptions configure a Client.
type ClientOptions struct {
	// OnEvent receives every event that is not the reply to an Exec the
	// Client runs (agent output, stats, errors of other commands), in
	// order, on the Client's reader goroutine: it must not block for long,
	// since the guest waits while it does. Nil drops them.
	OnEvent func(protocol.Event)
	Logger  *slog.Logger
}

// Client is the host end of the protocol on one guest's channel: a reader
// goroutine decodes events and routes each exec's output and result to
// the Exec call waiting for it; everything else goes to OnEvent.
type Client struct {
	conn io.ReadWriteCloser
	w    *protocol.Writer
	log  *slog.Logger
	on   func(protocol.Event)

	ready    chan struct{}
	readyEv  protocol.Event
	done     chan struct{}
	err      error // why the stream ended; read after done is closed
	nextID   atomic.Uint64
	lastSeq  uint64 // reader goroutine only
	seqGaps  atomic.Uint64
	mu       sync.Mutex
	execs    map[string]*pendingExec
	closeErr sync.Once
}

// pendingExec is one exec waiting for its result.
type pendingExec struct {
	stdout, stderr io.Writer
	result         chan protocol.Event
	writeErr       error       // first error writing its output; reader goroutine only
	ack            func(int64) // stdin acknowledged; nil for a plain exec
}

// NewClient starts reading events from conn. Close ends it.
func NewClient(conn io.ReadWriteCloser, o ClientOptions) *Client {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		conn:  conn,
		w:     protocol.NewWriter(conn),
		log:   log,
		on:    o.OnEvent,
		ready: make(chan struct{}),
		done:  make(chan struct{}),
		execs: map[string]*pendingExec{},
	}
	go c.read()
	return c
}

// read is the reader goroutine.
func (c *Client) read() {
	r := protocol.NewReader(c.conn)
	var readyOnce sync.Once
	for {
		ev, err := r.ReadEvent()
		if err != nil {
			if protocol.IsRecoverable(err) {
				c.log.Warn("skipped a bad line from the guest", "err", err)
				continue
			}
			c.finish(err)
			return
		}
		if c.lastSeq != 0 && ev.Seq != c.lastSeq+1 {
			c.seqGaps.Add(1)
			c.log.Warn("guest event sequence gap", "want", c.lastSeq+1, "got", ev.Seq)
		}
		c.lastSeq = ev.Seq
		if ev.Ev == protocol.EvReady {
			readyOnce.Do(func() {
				c.readyEv = ev
				close(c.ready)
			})
		}
		if c.route(ev) {
			continue
		}
		if c.on != nil {
			c.on(ev)
		}
	}
}

// route hands ev to the Exec waiting for it and reports whether one was.
func (c *Client) route(ev protocol.Event) bool {
	if ev.ID == "" {
		return false
	}
	c.mu.Lock()
	p := c.execs[ev.ID]
	c.mu.Unlock()
	if p == nil {
		return false
	}
	switch ev.Ev {
	case protocol.EvExecStdout, protocol.EvExecStderr:
		w := p.stdout
		if ev.Ev == protocol.EvExecStderr {
			w = p.stderr
		}
		if w != nil && p.writeErr == nil {
			if _, err := w.Write(ev.Payload()); err != nil {
				p.writeErr = err
			}
		}
		return true
	case protocol.EvExecStdinAck:
		if p.ack != nil {
			p.ack(ev.N)
		}
		return true
	case protocol.EvExecResult, protocol.EvError:
		c.mu.Lock()
		delete(c.execs, ev.ID)
		c.mu.Unlock()
		p.result <- ev
		return true
	}
	return false
}

func (c *Client) finish(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		err = ErrClosed
	} else {
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.err = err
	close(c.done)
}

// Ready waits for the guest's system:ready and returns it.
func (c *Client) Ready(ctx context.Context) (protocol.Event, error) {
	select {
	case <-c.ready:
		return c.readyEv, nil
	case <-c.done:
		select {
		case <-c.ready:
			return c.readyEv, nil
		default:
		}
		return protocol.Event{}, fmt.Errorf("the guest closed its channel before it was ready: %w", c.err)
	case <-ctx.Done():
		return protocol.Event{}, ctx.Err()
	}
}

// Send writes one command.
func (c *Client) Send(cmd protocol.Command) error {
	select {
	case <-c.done:
		return c.err
	default:
	}
	if err := c.w.SendCommand(cmd); err != nil {
		if errors.Is(err, protocol.ErrTooLong) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return nil
}

// Done is closed when the stream has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the stream ended (wrapping ErrClosed), or nil while it runs.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// SeqGaps counts events whose sequence number did not follow the one
// before: each means lost lines. It is 0 on a healthy stream.
func (c *Client) SeqGaps() uint64 { return c.seqGaps.Load() }

// Close closes the channel; the reader goroutine ends.
func (c *Client) Close() error { return c.conn.Close() }
