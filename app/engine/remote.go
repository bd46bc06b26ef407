package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
)

// handshakeTimeout bounds the hello of a connection: an engine answers
// at once, whatever it is doing.
const handshakeTimeout = 10 * time.Second

// Remote is the engine of a data directory, as its clients reach it: each
// operation is a connection of its own, opened with the handshake.
type Remote struct {
	paths config.Paths
	hello Hello
}

// Dial checks that an engine answers for the data directory p and speaks
// this Sandbar's API; it fails with a *VersionError (ErrVersion) when it
// speaks another.
func Dial(ctx context.Context, p config.Paths) (*Remote, error) {
	r := &Remote{paths: p}
	c, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.conn.Close()
	r.hello = c.hello
	return r, nil
}

// API is the engine's API version, as its hello said.
func (r *Remote) API() int { return r.hello.API }

// PID is the engine's process.
func (r *Remote) PID() int { return r.hello.PID }

// conn is one connection to the engine, past the handshake.
type conn struct {
	conn  net.Conn
	dec   *json.Decoder
	enc   *json.Encoder
	hello Hello
}

// connect opens a connection and does the handshake.
func (r *Remote) connect(ctx context.Context) (*conn, error) {
	sock := r.paths.EngineSocket()
	if err := r.paths.CheckSocketDir(); err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("reach the Sandbar engine at %s: %w", sock, err)
	}
	if err := samePerson(nc, "engine"); err != nil {
		nc.Close()
		return nil, fmt.Errorf("refuse the Sandbar engine at %s: %w: remove that socket", sock, err)
	}
	c := &conn{conn: nc, dec: json.NewDecoder(bufio.NewReaderSize(nc, 64<<10)), enc: json.NewEncoder(nc)}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	nc.SetDeadline(time.Now().Add(handshakeTimeout))
	err = c.enc.Encode(Hello{Op: OpHello, API: APIVersion})
	var f frame
	if err == nil {
		err = c.dec.Decode(&f)
	}
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("reach the Sandbar engine at %s: %w", sock, hangup(err))
	}
	nc.SetDeadline(time.Time{})
	switch {
	case f.Hello != nil && f.Hello.API == APIVersion:
		c.hello = *f.Hello
		return c, nil
	case f.Hello != nil:
		nc.Close()
		return nil, &VersionError{PID: f.Hello.PID, Engine: f.Hello.API, Client: APIVersion}
	default:
		// An engine from before the handshake answers the hello as an
		// operation it does not know; its pid is in its lock file.
		nc.Close()
		return nil, &VersionError{PID: lockPID(r.paths.EngineLock()), Engine: 1, Client: APIVersion}
	}
}

// lockPID is the pid an engine wrote in its lock file, 0 when unknown.
func lockPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func hangup(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the Sandbar engine hung up")
	}
	return err
}

// open connects and sends the call.
func (r *Remote) open(ctx context.Context, op string, req any) (*conn, error) {
	c, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err == nil {
		err = c.enc.Encode(callLine{Op: op, Req: b})
	}
	if err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("send %s to the Sandbar engine: %w", op, err)
	}
	return c, nil
}

// next reads one frame.
func (c *conn) next() (frame, error) {
	var f frame
	if err := c.dec.Decode(&f); err != nil {
		return f, fmt.Errorf("read from the Sandbar engine: %w", hangup(err))
	}
	return f, nil
}

// until passes the items it reads to each (which may be nil) until a
// frame satisfies stop, which it returns, or the final one comes, which
// it returns with its error.
func until[Item any](c *conn, each func(Item) error, stop func(frame) bool) (frame, error) {
	for {
		f, err := c.next()
		if err != nil {
			return f, err
		}
		if f.Done {
			if f.Error != "" {
				return f, remoteError(f)
			}
			return f, nil
		}
		if f.Item != nil && each != nil {
			var it Item
			if err := json.Unmarshal(f.Item, &it); err != nil {
				return f, fmt.Errorf("read from the Sandbar engine: %w", err)
			}
			if err := each(it); err != nil {
				return f, err
			}
		}
		if stop != nil && stop(f) {
			return f, nil
		}
	}
}

// finish reads the rest of an operation: its items to each, its reply
// into rep.
func finish[Item, Rep any](c *conn, each func(Item) error, rep *Rep) error {
	final, err := until(c, each, nil)
	if err != nil {
		return err
	}
	if len(final.Reply) > 0 {
		if err := json.Unmarshal(final.Reply, rep); err != nil {
			return fmt.Errorf("read the Sandbar engine's reply: %w", err)
		}
	}
	return nil
}

// streamCall runs one operation in the engine r: items go to each (which may
// be nil), and the reply is returned. Rep comes first so that a call
// names it alone: streamCall[ExecReply](ctx, r, OpExec, req, each).
func streamCall[Rep, Req, Item any](ctx context.Context, r *Remote, op string, req Req, each func(Item) error) (Rep, error) {
	var rep Rep
	c, err := r.open(ctx, op, req)
	if err != nil {
		return rep, err
	}
	defer c.conn.Close()
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	defer stop()
	if err := finish(c, each, &rep); err != nil {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		return rep, err
	}
	return rep, nil
}

// unaryCall runs one operation that answers once.
func unaryCall[Rep, Req any](ctx context.Context, r *Remote, op string, req Req) (Rep, error) {
	return streamCall[Rep, Req, None](ctx, r, op, req, nil)
}

// Subscribe follows the engine's events (of one session, or of all for
// "") until ctx is done or the engine hangs up, when the channel closes.
// It returns once the engine has registered the subscription: nothing
// published after that is missed.
func (r *Remote) Subscribe(ctx context.Context, id string) (<-chan session.Event, error) {
	c, err := r.open(ctx, OpSubscribe, SubscribeRequest{Session: id})
	if err != nil {
		return nil, err
	}
	out := make(chan session.Event, 256)
	send := func(ev session.Event) error {
		select {
		case out <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	f, err := until(c, send, func(f frame) bool { return f.Started })
	if err != nil || !f.Started {
		stop()
		c.conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			err = errors.New("the Sandbar engine ended the subscription before it began")
		}
		return nil, err
	}
	go func() {
		defer close(out)
		defer stop()
		defer c.conn.Close()
		var none None
		finish(c, send, &none)
	}()
	return out, nil
}
