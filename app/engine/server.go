package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
)

// ErrRunning is returned by Listen when another process is the engine
// for this data directory.
var ErrRunning = errors.New("another Sandbar is already running for this data directory")

// Server serves a Manager to the other processes of its data directory:
// it is what makes a process the engine.
type Server struct {
	m        *session.Manager
	ops      map[string]handler
	log      *slog.Logger
	lock     *os.File
	ln       net.Listener
	sock     string
	active   atomic.Int64 // open connections
	lastUsed atomic.Int64 // unix nanos
	conns    sync.WaitGroup

	// subs counts the subscriptions being served; subsChanged is closed
	// (and replaced) whenever that changes, for a test to wait on.
	subsMu      sync.Mutex
	subs        int
	subsChanged chan struct{}

	// mayYield: a headless engine hands over to a client that can reach
	// the keyring when it cannot (see OpYield); yielded is closed when
	// it has.
	mayYield  bool
	yieldOnce sync.Once
	yielded   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Listen takes the engine lock of the data directory p, recovers what a
// previous engine left (m.Recover: sessions whose owner died become
// interrupted, their orphan VMs are ended) and opens its socket. It fails
// with ErrRunning when another process holds the lock, having changed
// nothing. The Manager then watches the projects' repositories, resumes
// the sessions the last engine kept (session.ResumeKept) and suspends
// those that wait too long (session.AutoSuspend), as the engine does.
func Listen(ctx context.Context, p config.Paths, m *session.Manager, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(p.Home, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(p.EngineLock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("engine lock: %w", err)
	}
	if err := takeLock(ctx, lock, p.EngineSocket()); err != nil {
		lock.Close()
		return nil, err
	}
	// Only the holder of the lock recovers: another process could take a
	// session this engine has just restarted for one whose owner died.
	if err := m.Recover(ctx); errors.Is(err, session.ErrDiskFull) {
		// The engine starts all the same, so that every command can say
		// why no session can run (a start is refused in words) and a
		// person can look and remove; Recover runs again before the
		// next start.
		log.Warn("the disk holding Sandbar's data is full: the sessions the last engine ran are marked interrupted once there is room", "err", err)
	} else if err != nil {
		lock.Close()
		return nil, fmt.Errorf("recover the sessions of the last engine: %w", err)
	}
	sock := p.EngineSocket()
	// The socket is made in a directory that is the person's alone (the
	// data directory, or SocketDir), so no one else can connect before
	// its mode is set, nor put a socket of theirs in its place.
	if err := p.EnsureSocketDir(); err != nil {
		lock.Close()
		return nil, err
	}
	os.Remove(sock) // a stale socket of a dead engine: we hold the lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("engine socket %s: %w", sock, err)
	}
	os.Chmod(sock, 0o600)
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	s := &Server{m: m, ops: operations(), log: log, lock: lock, ln: ln, sock: sock, subsChanged: make(chan struct{}), yielded: make(chan struct{})}
	s.lastUsed.Store(time.Now().UnixNano())
	// The engine keeps the projects' base disks fresh; a client does not.
	m.WatchSources(context.Background())
	// And empties the trash of what is due, now and every hour.
	m.TendTrash(context.Background())
	// It resumes the sessions the last engine kept as it quit, or
	// suspended for a sleep no wake ended, and suspends those that wait
	// for the person too long.
	if ids := m.ResumeKept(ctx); len(ids) > 0 {
		log.Info("resuming the sessions the last engine kept", "sessions", len(ids))
	}
	m.AutoSuspend(context.Background())
	return s, nil
}

// lockWait bounds the wait for an engine that holds the lock but no
// longer answers on its socket.
const lockWait = 2 * time.Second

// takeLock takes the engine lock f. An engine that holds it and answers
// on sock is running: ErrRunning at once. One that holds it and does not
// answer is on its way out (a yielding engine lets go of its socket, then
// of the lock) or in (it recovers before it listens): that gets lockWait
// to let go, so that the engine a client starts after a hand-over does
// not find the lock still held for an instant and exit.
func takeLock(ctx context.Context, f *os.File, sock string) error {
	deadline := time.Now().Add(lockWait)
	for {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return nil
		}
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			c.Close()
			return ErrRunning
		}
		if time.Now().After(deadline) {
			return ErrRunning
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Serve accepts connections until ctx is done or Close, then waits for
// the operations under way, which ctx ending cancels.
func (s *Server) Serve(ctx context.Context) error { return s.serveOn(ctx, s.ln) }

// serveOn is Serve on the listener ln: the engine's socket, or, in a
// test, one another user may reach (the socket's directory is the
// person's alone, which keeps another user from reaching the check on
// the caller that handle makes).
func (s *Server) serveOn(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer s.conns.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.conns.Add(1)
		s.active.Add(1)
		go func() {
			defer s.conns.Done()
			defer s.active.Add(-1)
			defer s.lastUsed.Store(time.Now().UnixNano())
			s.handle(ctx, c)
		}()
	}
}

// Idle reports how long the engine has had no connection, no session and
// no environment to prepare.
func (s *Server) Idle() time.Duration {
	if s.active.Load() > 0 || len(s.m.Running()) > 0 || s.m.Preparing() > 0 {
		s.lastUsed.Store(time.Now().UnixNano())
		return 0
	}
	return time.Since(time.Unix(0, s.lastUsed.Load()))
}

// Close stops accepting and releases the lock; running sessions are the
// Manager's to stop. Only the first call does anything: by a later one
// the socket may be another engine's.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		err := s.ln.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		os.Remove(s.sock)
		s.closeErr = errors.Join(err, s.lock.Close())
	})
	return s.closeErr
}

// MayYield lets this engine hand over to a client that can reach the
// keyring when it cannot (OpYield): what a headless engine (`sandbar
// serve`) does, started perhaps from another login session whose
// Secret Service this one cannot reach. The app, which a person sees,
// never yields.
func (s *Server) MayYield() { s.mayYield = true }

// Yielded is closed once the engine has handed over: it no longer
// serves, nor holds the lock, and its process should close its Manager
// and exit.
func (s *Server) Yielded() <-chan struct{} { return s.yielded }

// yield hands over, if this engine may and runs no session; the reply
// says whether it did, and why not.
func (s *Server) yield() (YieldReply, error) {
	switch {
	case !s.mayYield:
		return YieldReply{Reason: fmt.Sprintf("the Sandbar app (process %d) is the engine: quit it and try again", os.Getpid())}, nil
	case len(s.m.Running()) == 1:
		return YieldReply{Reason: fmt.Sprintf("the Sandbar engine (process %d) still runs a session: stop it (`sandbar ls`, `sandbar stop ID`) and try again", os.Getpid())}, nil
	case len(s.m.Running()) > 1:
		return YieldReply{Reason: fmt.Sprintf("the Sandbar engine (process %d) still runs %d sessions: stop them (`sandbar ls`, `sandbar stop ID`) and try again", os.Getpid(), len(s.m.Running()))}, nil
	}
	return YieldReply{Yielded: true}, nil
}

// sender writes frames to one connection, one at a time. Each write must
// be taken within writeTimeout: a caller that stops reading would
// otherwise hold whatever sends to it (a session's guest channel, for
// exec output) and keep the engine from shutting down. A write that times
// out, or fails, cancels the connection's operation and fails every later
// send at once.
type sender struct {
	mu     sync.Mutex
	conn   net.Conn
	enc    *json.Encoder
	cancel context.CancelFunc
	err    error
}

// writeTimeout bounds each write to an engine client.
const writeTimeout = 10 * time.Second

func newSender(c net.Conn, cancel context.CancelFunc) *sender {
	return &sender{conn: c, enc: json.NewEncoder(c), cancel: cancel}
}

func (w *sender) send(f frame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := w.enc.Encode(f); err != nil {
		w.err = fmt.Errorf("the engine client stopped reading: %w", err)
		w.cancel()
		return w.err
	}
	return nil
}

// done sends the final frame: the reply, or the error with its code.
func (w *sender) done(reply any, err error) {
	f := frame{Done: true}
	if err != nil {
		f.Error, f.Codes = err.Error(), codesOf(err)
		if len(f.Codes) > 0 {
			f.Code = f.Codes[0]
		}
	} else if reply != nil {
		b, merr := json.Marshal(reply)
		if merr != nil {
			f.Error = "encode the reply: " + merr.Error()
		}
		f.Reply = b
	}
	w.send(f)
}

// item sends one item of a stream.
func (w *sender) item(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.send(frame{Item: b})
}

func (s *Server) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The engine stopping ends the connection, whatever it waits on (a
	// caller that never speaks, or never reads).
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := samePerson(c, "caller"); err != nil {
		s.log.Warn("refused an engine client", "err", err)
		return
	}
	br := bufio.NewReader(c)
	out := newSender(c, cancel)

	// The handshake: each side learns the other's version. A caller has
	// callTimeout to say hello and then what it wants.
	c.SetReadDeadline(time.Now().Add(callTimeout))
	line, err := readLine(br, maxHelloLine)
	if err != nil {
		return
	}
	var hi Hello
	if err := json.Unmarshal(line, &hi); err != nil || hi.Op != OpHello {
		// A Sandbar from before the handshake sends its call first.
		out.done(nil, fmt.Errorf("the Sandbar engine running as process %d speaks API v%d, and the sandbar that called it an older one: quit that sandbar, or this Sandbar, and try again", os.Getpid(), APIVersion))
		return
	}
	if out.send(frame{Hello: &Hello{API: APIVersion, PID: os.Getpid()}}) != nil || hi.API != APIVersion {
		return // the client refuses the mismatch, saying why
	}

	c.SetReadDeadline(time.Now().Add(callTimeout))
	line, err = readLine(br, maxCallLine)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	var cl callLine
	if err := json.Unmarshal(line, &cl); err != nil {
		out.done(nil, fmt.Errorf("bad request: %w", err))
		return
	}
	if cl.Op == OpShell {
		// The caller keeps talking: stdin, its end and resizes.
		s.serveShell(ctx, cancel, c, br, cl.Req, out)
		return
	}
	if cl.Op == OpYield {
		rep, err := s.yield()
		out.done(rep, err)
		if rep.Yielded {
			// Once the caller has the reply: no more requests, and the
			// lock goes, for the caller's engine to take.
			s.log.Info("engine yielding to a client that can reach the keyring")
			s.Close()
			s.yieldOnce.Do(func() { close(s.yielded) })
		}
		return
	}
	h, ok := s.ops[cl.Op]
	if !ok {
		out.done(nil, fmt.Errorf("unknown operation %q: is this Sandbar engine older than the sandbar calling it?", cl.Op))
		return
	}
	// The caller hanging up cancels what it asked for (exec, subscribe).
	go func() {
		io.Copy(io.Discard, br)
		cancel()
	}()
	out.done(h(ctx, s, cl.Req, out))
}

// callTimeout bounds how long a caller may take to send its hello, and
// then its call: a client sends both at once.
const callTimeout = 10 * time.Second

// maxHelloLine bounds a hello line (a few dozen bytes); maxCallLine, a
// call line (a start's options, a chat message, an exec's stdin are the
// big ones).
const (
	maxHelloLine = 4 << 10
	maxCallLine  = 64 << 20
)

// readLine reads one line of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("a line from an engine client is longer than %d bytes", max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// subscribed counts a subscription in (+1) or out (-1).
func (s *Server) subscribed(delta int) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.subs += delta
	close(s.subsChanged)
	s.subsChanged = make(chan struct{})
}

// subscriptions is how many subscriptions are served, and a channel
// closed when that changes.
func (s *Server) subscriptions() (int, <-chan struct{}) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	return s.subs, s.subsChanged
}

// handler serves one operation: it decodes the request, runs it and
// returns the reply; a stream sends its items through out first.
type handler func(ctx context.Context, s *Server, req json.RawMessage, out *sender) (any, error)

// emitter is what a streaming operation sends before its reply.
type emitter[Item any] struct {
	out *sender
}

// Send sends one item.
func (st emitter[Item]) Send(it Item) error { return st.out.item(it) }

// Started tells the caller the operation is under way.
func (st emitter[Item]) Started() error { return st.out.send(frame{Started: true}) }

// unary makes a handler of an operation that answers once.
func unary[Req, Rep any](f func(ctx context.Context, svc session.Service, req Req) (Rep, error)) handler {
	return func(ctx context.Context, s *Server, raw json.RawMessage, _ *sender) (any, error) {
		var req Req
		if err := decode(raw, &req); err != nil {
			return nil, err
		}
		return f(ctx, s.m, req)
	}
}

// streaming makes a handler of an operation that sends items (output,
// events) before its reply.
func streaming[Req, Item, Rep any](f func(ctx context.Context, s *Server, req Req, st emitter[Item]) (Rep, error)) handler {
	return func(ctx context.Context, s *Server, raw json.RawMessage, out *sender) (any, error) {
		var req Req
		if err := decode(raw, &req); err != nil {
			return nil, err
		}
		return f(ctx, s, req, emitter[Item]{out: out})
	}
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("bad request: %w: %w", err, session.ErrBadOptions)
	}
	return nil
}
