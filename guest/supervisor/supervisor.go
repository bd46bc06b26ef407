// Package supervisor runs inside the guest VM and serves the host's
// protocol commands (guest/protocol): it sets up the agent user and its git
// identity, checks out the session branch, runs the agent with its
// stdin/stdout/stderr bridged to the host, runs exec commands, reports
// resource use and the listening TCP ports (relaying loopback-only ones
// to the guest's address), and trusts the CA of the host's credential
// broker. It is ordinary Go: everything that needs PID 1 privileges sits
// behind System, so the package is tested on the host with real child
// processes and a thin fake System.
//
// It is not the init process (guest/cmd/sandbar-init mounts, reaps and
// powers off) and it keeps no state across Serve calls.
//
// Choices the host can rely on:
//   - stats events start with the first successful start, every
//     start.stats_interval ms (default 2000).
//   - When the guest has an address (Config.GuestIP), a ports event
//     follows the first successful start, listing the listening TCP
//     ports the host can reach there (even none), and another whenever
//     that set changes, read every second from /proc/net/tcp and tcp6.
//     A port a program listens on at loopback only is relayed from the
//     guest's address to it and listed with loopback: true (see ports.go
//     and relay.go for the bounds).
//   - exec runs with the base environment, then the CA variables (below),
//     then start.env, then exec.env, each overriding the one before; the
//     agent the same without exec.env.
//   - start's ca_cert is added to the system CA bundle (Config.CABundle,
//     the original content kept, the file replaced by a rename) and
//     written alone to Config.CAFile; from then on the agent and every
//     exec get NODE_EXTRA_CA_CERTS (the CA alone) and SSL_CERT_FILE,
//     REQUESTS_CA_BUNDLE, PIP_CERT, GIT_SSL_CAINFO and CURL_CA_BUNDLE (the
//     bundle). A later start with another CA replaces it; one without
//     keeps it, unless it is the boot's first, which takes back what an
//     earlier boot of the same disk added. A ca_cert that is not PEM CERTIFICATE blocks is refused
//     with an error event before anything is written. Where the guest has
//     a JVM (keytool on PATH, Config.JVM), its trust store gets the same
//     certificates under aliases of Sandbar's, and loses those a later
//     start no longer sends.
//   - An exec with tools (saves, changes, diffs) and the branch's checkout
//     run with Sandbar's own sh and git, chrooted in Config.ToolRoot when
//     the root is another image's, with Sandbar's PATH and without the
//     image's or the start's environment.
//   - On another image's root (Config.ToolRoot set), a start is refused
//     with MuslMessage when the image has musl's loader and not glibc's;
//     the agent's account is chosen among the image's users (see
//     imageAgent), sudo is given only where the image has it, and
//     agent:started's notes say what was chosen and what was not given.
//   - A process killed by a signal reports code 128+N and the signal name.
//   - When the agent's main process exits, the rest of its process group is
//     killed; output is drained until EOF, or until the pipes stay silent
//     for half a second (a process that left the group may hold them open).
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"sandbar/guest/protocol"
)

// Config is what Serve needs.
type Config struct {
	Workspace string // default "/workspace"
	Sys       System // PID-1-ish operations; required
	Logger    *slog.Logger
	ProcRoot  string // where /proc is mounted, for stats and ports; default "/proc"

	// CABundle is the system's CA bundle, to which start's ca_cert is
	// added, and CAFile where the CA is written alone. The guest passes
	// SystemCABundle and SandbarCAFile. Left empty (a supervisor run on
	// a host, such as vm/vmtest's), a ca_cert is logged and left out, so
	// the host's own trust is never touched.
	CABundle string
	CAFile   string
	// JVM says how the CAs reach a JVM's trust store; zero: no JVM is
	// told. The guest passes JVMTrust{Keytool: "keytool"}.
	JVM JVMTrust

	// SudoersFile is where the agent user's sudo rule is written (or
	// removed, when start says no_sudo). The guest passes
	// SandbarSudoers. Left empty (a supervisor run on a host), sudo is
	// not touched.
	SudoersFile string

	// ToolRoot is where Sandbar's own root is when the guest's root is
	// another image's (the guest passes ToolRoot, the constant, then):
	// execs that ask for Sandbar's tools and the branch's checkout run
	// chrooted there, a start first checks that the image can run the
	// agent (glibc), chooses the agent's account among the image's
	// users, and gives the agent sudo only if the image has it. "" (a
	// guest on Sandbar's own root, a supervisor run on a host): those
	// run in the root itself, as the agent's user.
	ToolRoot string

	// GuestIP is the guest's own address on its network (sandbar.net).
	// When it is set, the supervisor reports the listening TCP ports from
	// the first start on and relays loopback-only ones on this address;
	// when not (no network, or a supervisor run on a host), it does
	// neither.
	GuestIP netip.Addr
	// PortsInterval is how often the listening ports are read; default
	// one second.
	PortsInterval time.Duration

	// NetError says why the guest has no network although the host gave
	// it one: system:ready carries it (net_error), cut to
	// protocol.MaxNetError bytes. "" when the network is as asked.
	NetError string
}

// System is what the supervisor asks of the machine it runs on.
type System interface {
	// Facts returns what system:ready reports.
	Facts() (kernel string, cpus int, memory uint64)
	// EnsureUser makes sure the user exists, with its home directory, and
	// returns it.
	EnsureUser(name string, uid int, home string) (User, error)
	// LookupUser finds an account by name, or by uid when nameOrUID is
	// a number; false when there is none.
	LookupUser(nameOrUID string) (User, bool, error)
	SetTime(t time.Time) error
	DiskUsage(path string) (used, total uint64, err error)
	// Poweroff is called by shutdown after the agent stopped and every
	// event was flushed; when it returns nil, Serve returns nil and the
	// process running the supervisor should exit so PID 1 powers off.
	Poweroff() error
}

// User is an account processes run as.
type User struct {
	Name     string
	UID, GID int
	Home     string
}

// Supervisor serves the host protocol on a connection.
type Supervisor struct {
	cfg Config
}

// New returns a Supervisor, filling in Config defaults.
func New(cfg Config) *Supervisor {
	if cfg.Workspace == "" {
		cfg.Workspace = protocol.DefaultWorkdir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	cfg.GuestIP = cfg.GuestIP.Unmap()
	if cfg.PortsInterval <= 0 {
		cfg.PortsInterval = defaultPortsInterval
	}
	cfg.NetError = clipText(cfg.NetError, protocol.MaxNetError)
	return &Supervisor{cfg: cfg}
}

// Serve sends system:ready, then serves commands until ctx is done, conn
// reaches EOF, or a shutdown command has stopped everything and called
// Sys.Poweroff. It returns only after every child process is reaped and
// every goroutine it started has ended. It returns nil after EOF or
// shutdown, ctx's error after cancellation, and otherwise the I/O error.
//
// If conn has SetDeadline/SetReadDeadline (net.Conn, pollable *os.File),
// Serve uses them to interrupt blocked I/O when it ends; otherwise the
// caller must close conn to end a blocked read.
func (s *Supervisor) Serve(ctx context.Context, conn io.ReadWriter) error {
	if s.cfg.Sys == nil {
		return errors.New("supervisor: Config.Sys is nil: pass LinuxSystem{} in the guest or a fake in tests")
	}
	ss := newSession(ctx, s.cfg, conn)
	return ss.run(ctx)
}

// session is the state of one Serve call.
type session struct {
	cfg  Config
	log  *slog.Logger
	conn io.ReadWriter
	w    *protocol.Writer

	// out feeds the single writer goroutine; its bound is the backpressure
	// that makes a child block on its pipe when the host stops reading.
	out        chan protocol.Event
	writerDone chan struct{}
	writeErr   error // set by the writer before writerDone closes

	// gone is cancelled when nobody can receive events any more (ctx done,
	// EOF, write failure); emit then drops events instead of blocking.
	gone       context.Context
	goneCancel context.CancelFunc
	// life is cancelled when teardown starts; background loops end.
	life       context.Context
	lifeCancel context.CancelFunc

	wg sync.WaitGroup // every goroutine but the writer and the reader

	mu    sync.Mutex
	agent *agentProc
	execs map[string]*execProc
	env   map[string]string // start.env, for the agent and execs
	// imageEnv is the image's environment (start.image.env, see
	// imageEnv), for the agent and execs; nil on Sandbar's own root.
	imageEnv map[string]string
	caEnv    map[string]string // points tools at the CA of a start's ca_cert
	workdir  string
	users    map[string]User
	image    *protocol.ImageConfig // the last start's
	stats    bool
	watch    bool // the workspace watcher runs
	ports    bool // the ports watcher runs
}

func newSession(ctx context.Context, cfg Config, conn io.ReadWriter) *session {
	s := &session{
		cfg:        cfg,
		log:        cfg.Logger,
		conn:       conn,
		w:          protocol.NewWriter(conn),
		out:        make(chan protocol.Event, 64),
		writerDone: make(chan struct{}),
		execs:      make(map[string]*execProc),
		users:      make(map[string]User),
		workdir:    cfg.Workspace,
	}
	s.gone, s.goneCancel = context.WithCancel(ctx)
	s.life, s.lifeCancel = context.WithCancel(context.WithoutCancel(ctx))
	return s
}

type readResult struct {
	c   protocol.Command
	err error
}

func (s *session) run(ctx context.Context) error {
	defer s.goneCancel()
	defer s.lifeCancel()
	go s.writer()
	unblock := context.AfterFunc(ctx, func() { setDeadline(s.conn, time.Now()) })
	defer unblock()

	cmds := make(chan readResult)
	stopReading := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r := protocol.NewReader(s.conn)
		for {
			c, err := r.ReadCommand()
			select {
			case cmds <- readResult{c, err}:
			case <-stopReading:
				return
			}
			if err != nil && !protocol.IsRecoverable(err) {
				return
			}
		}
	}()
	finish := func(grace time.Duration, result error) error {
		s.teardown(grace)
		close(stopReading)
		if setReadDeadline(s.conn, time.Now()) {
			<-readerDone
		} else {
			s.log.Debug("connection has no read deadline; its reader ends when the caller closes it")
		}
		if result == nil && s.writeErr != nil && !errors.Is(s.writeErr, os.ErrDeadlineExceeded) {
			result = s.writeErr
		}
		return result
	}

	kernel, cpus, mem := s.cfg.Sys.Facts()
	s.emit(protocol.Event{Ev: protocol.EvReady, Version: protocol.Version, Kernel: kernel, CPUs: cpus, Memory: mem,
		Features: []string{protocol.FeaturePTY}, NetError: s.cfg.NetError})
	s.log.Info("supervisor ready", "kernel", kernel, "cpus", cpus, "memory", mem)
	if s.cfg.NetError != "" {
		s.log.Warn("the guest has no network", "err", s.cfg.NetError)
	}

	for {
		select {
		case <-ctx.Done():
			s.goneCancel()
			return finish(defaultGrace, ctx.Err())
		case <-s.gone.Done():
			// The writer failed (finish reports it) or ctx ended.
			return finish(defaultGrace, ctx.Err())
		case rr := <-cmds:
			if rr.err != nil {
				var le *protocol.LineError
				if errors.As(rr.err, &le) {
					s.log.Warn("bad command line", "line", le.Line, "err", le.Err)
					s.emit(protocol.Event{Ev: protocol.EvError, ID: le.ID, Cmd: le.Cmd, Message: le.Error()})
					continue
				}
				s.goneCancel() // nobody will send a stop: end everything now
				if errors.Is(rr.err, io.EOF) {
					s.log.Info("host closed the channel")
					return finish(defaultGrace, nil)
				}
				return finish(defaultGrace, fmt.Errorf("read host commands: %w", rr.err))
			}
			if rr.c.Cmd == protocol.CmdShutdown {
				return finish(defaultGrace, s.shutdown())
			}
			s.handle(ctx, rr.c)
		}
	}
}

const (
	defaultGrace = protocol.DefaultGrace * time.Millisecond
	drainIdle    = 500 * time.Millisecond
)

func (s *session) handle(ctx context.Context, c protocol.Command) {
	s.log.Debug("command", "cmd", c.Cmd, "id", c.ID)
	switch c.Cmd {
	case protocol.CmdStart:
		s.start(ctx, c)
	case protocol.CmdChat:
		s.chat(c)
	case protocol.CmdStop:
		s.stop(c)
	case protocol.CmdInterrupt:
		s.interrupt(c)
	case protocol.CmdExec:
		s.exec(c)
	case protocol.CmdExecKill:
		s.execKill(c)
	case protocol.CmdExecStdin:
		s.execStdin(c)
	case protocol.CmdExecResize:
		s.execResize(c)
	case protocol.CmdSetTime:
		t, _ := c.WallTime()
		if err := s.cfg.Sys.SetTime(t); err != nil {
			s.replyErr(c, "set the guest clock: %v", err)
		}
	}
}

// shutdown stops the agent with the default grace, kills execs, flushes
// every event and powers off.
func (s *session) shutdown() error {
	s.log.Info("shutdown requested")
	s.teardown(defaultGrace)
	if err := s.cfg.Sys.Poweroff(); err != nil {
		return fmt.Errorf("power off: %w", err)
	}
	return nil
}

// teardown stops everything and flushes the writer. It is idempotent.
func (s *session) teardown(grace time.Duration) {
	s.lifeCancel()
	s.mu.Lock()
	a := s.agent
	execs := make([]*execProc, 0, len(s.execs))
	for _, e := range s.execs {
		execs = append(execs, e)
	}
	s.mu.Unlock()
	for _, e := range execs {
		e.kill()
	}
	if a != nil {
		a.terminate(grace)
		<-a.done
	}
	s.wg.Wait()
	select {
	case <-s.writerDone:
	default:
		close(s.out)
		<-s.writerDone
	}
}

// writer is the only goroutine that writes to the connection.
func (s *session) writer() {
	defer close(s.writerDone)
	for ev := range s.out {
		if s.writeErr != nil {
			continue
		}
		if err := s.w.Send(ev); err != nil {
			s.writeErr = err
			s.log.Warn("cannot write to the host", "err", err)
			s.goneCancel()
		}
	}
}

// emit queues ev for the host, blocking while the queue is full. It
// reports false when the host is gone and the event was dropped.
func (s *session) emit(ev protocol.Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-s.gone.Done():
		return false
	}
}

func (s *session) replyErr(c protocol.Command, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	s.log.Warn("command failed", "cmd", c.Cmd, "id", c.ID, "err", msg)
	s.emit(protocol.Event{Ev: protocol.EvError, ID: c.ID, Cmd: c.Cmd, Message: msg})
}

func setDeadline(conn any, t time.Time) bool {
	if d, ok := conn.(interface{ SetDeadline(time.Time) error }); ok {
		return d.SetDeadline(t) == nil
	}
	return false
}

func setReadDeadline(conn any, t time.Time) bool {
	if d, ok := conn.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t) == nil
	}
	return false
}

// clipText makes s valid UTF-8 of at most n bytes, cut at a character
// boundary.
func clipText(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
