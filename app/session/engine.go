package session

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// One data directory, several processes: the store (SQLite, WAL) is the
// shared truth that every Sandbar process reads. A VM belongs to the
// process that booted it. Exactly one process per data directory is the
// engine: it holds Home/engine.lock (flock) and serves a small JSON-lines
// protocol on a unix socket (EngineSocket); the GUI is the engine while it
// runs, and a CLI that finds no engine starts a headless one (`sandbar
// serve`) that exits when it has had nothing to run for a while. A GUI
// that finds another engine is its client (Client). Every
// command that touches a VM (start, stop, restart, chat, exec, remove)
// goes to the engine; reading (ls, logs, projects) goes straight to the
// store. A session whose owner process is gone is interrupted at the next
// engine start (see Manager.recover).

// EngineSocket is the engine's socket for a data directory: inside it
// when the path is short enough for a unix socket, else in the temp
// directory under a name derived from it.
func EngineSocket(home string) string {
	p := filepath.Join(home, "engine.sock")
	if len(p) < 100 {
		return p
	}
	sum := sha256.Sum256([]byte(home))
	return filepath.Join(os.TempDir(), "sandbar-"+hex.EncodeToString(sum[:6])+".sock")
}

// ErrEngineRunning is returned by Listen when another process is the
// engine for this data directory.
var ErrEngineRunning = errors.New("another Sandbar is already running for this data directory")

// Engine serves a Manager to other processes.
type Engine struct {
	m        *Manager
	lock     *os.File
	ln       net.Listener
	sock     string
	active   atomic.Int64 // open connections
	lastUsed atomic.Int64 // unix nanos
	wg       sync.WaitGroup
}

// Listen takes the engine lock and opens the socket. It fails with
// ErrEngineRunning when another process holds the lock.
func Listen(m *Manager) (*Engine, error) {
	home := m.cfg.Paths.Home
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(home, "engine.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("engine lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, ErrEngineRunning
	}
	sock := EngineSocket(home)
	os.Remove(sock) // a stale socket of a dead engine: we hold the lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("engine socket %s: %w", sock, err)
	}
	os.Chmod(sock, 0o600)
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	e := &Engine{m: m, lock: lock, ln: ln, sock: sock}
	e.lastUsed.Store(time.Now().UnixNano())
	// The engine keeps the projects' base disks fresh; a client does not.
	m.watchSources(context.Background())
	return e, nil
}

// Serve accepts connections until ctx is done or Close.
func (e *Engine) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		e.ln.Close()
	}()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		e.wg.Add(1)
		e.active.Add(1)
		go func() {
			defer e.wg.Done()
			defer e.active.Add(-1)
			defer e.lastUsed.Store(time.Now().UnixNano())
			e.handle(ctx, c)
		}()
	}
}

// Idle reports how long the engine has had no connection and no session.
func (e *Engine) Idle() time.Duration {
	if e.active.Load() > 0 || len(e.m.Running()) > 0 {
		e.lastUsed.Store(time.Now().UnixNano())
		return 0
	}
	return time.Since(time.Unix(0, e.lastUsed.Load()))
}

// Close stops accepting and releases the lock; running sessions are the
// Manager's to stop.
func (e *Engine) Close() error {
	e.ln.Close()
	os.Remove(e.sock)
	e.lock.Close()
	return nil
}

// request is one call; reply lines answer it.
type request struct {
	Op      string                `json:"op"`
	ID      string                `json:"id,omitempty"`
	Text    string                `json:"text,omitempty"`
	Force   bool                  `json:"force,omitempty"`
	Into    bool                  `json:"into,omitempty"` // merge: into the current branch
	Options *Options              `json:"options,omitempty"`
	Exec    *sandbox.ExecRequest  `json:"exec,omitempty"`
	Path    string                `json:"path,omitempty"`
	File    *workspace.FileChange `json:"file,omitempty"`
	// The network's operations.
	Scope  NetScope `json:"scope,omitempty"`
	Action string   `json:"action,omitempty"`
	Guest  uint16   `json:"guest,omitempty"`
	Host   uint16   `json:"host,omitempty"`
}

type reply struct {
	Event   *Event                 `json:"event,omitempty"`
	Stdout  []byte                 `json:"stdout,omitempty"`
	Stderr  []byte                 `json:"stderr,omitempty"`
	Session *store.Session         `json:"session,omitempty"`
	Project *store.Project         `json:"project,omitempty"`
	Note    string                 `json:"note,omitempty"`
	Exec    *sandbox.ExecResult    `json:"exec_result,omitempty"`
	Merge   *workspace.MergeResult `json:"merge,omitempty"`
	Started bool                   `json:"started,omitempty"` // shell: the command runs
	Changes *workspace.Changes     `json:"changes,omitempty"`
	Diff    *string                `json:"diff,omitempty"`
	Export  *exportReply           `json:"export,omitempty"`
	Ports   []netstack.Port        `json:"ports,omitempty"`
	Port    *netstack.Port         `json:"port,omitempty"`
	Done    bool                   `json:"done,omitempty"`
	Error   string                 `json:"error,omitempty"`
	Code    string                 `json:"code,omitempty"`
}

// exportReply is where Export wrote a session's files, and when the
// work it holds was saved.
type exportReply struct {
	Dir  string    `json:"dir"`
	When time.Time `json:"when"`
}

func (e *Engine) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	br := bufio.NewReader(c)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	var req request
	enc := json.NewEncoder(c)
	var mu sync.Mutex
	send := func(r reply) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(r)
	}
	if err := json.Unmarshal(line, &req); err != nil {
		send(reply{Done: true, Error: "bad request: " + err.Error()})
		return
	}
	if req.Op == "shell" {
		// The caller keeps talking: frames of stdin and resizes.
		e.serveShell(ctx, cancel, c, br, req, send)
		return
	}
	// The caller hanging up cancels what it asked for (exec, subscribe).
	go func() {
		io.Copy(io.Discard, br)
		cancel()
	}()
	done := func(r reply, err error) {
		r.Done = true
		if err != nil {
			r.Error, r.Code = err.Error(), errCode(err)
		}
		send(r)
	}
	m := e.m
	switch req.Op {
	case "ping":
		done(reply{}, nil)
	case "add-project":
		p, note, err := m.AddProject(ctx, req.Path)
		done(reply{Project: &p, Note: note}, err)
	case "start":
		if req.Options == nil {
			done(reply{}, fmt.Errorf("start without options: %w", ErrBadOptions))
			return
		}
		s, err := m.Start(ctx, *req.Options)
		done(reply{Session: &s}, err)
	case "stop":
		s, err := m.Stop(ctx, req.ID)
		done(reply{Session: &s}, err)
	case "restart":
		s, err := m.Restart(ctx, req.ID)
		done(reply{Session: &s}, err)
	case "wait":
		s, err := m.Wait(ctx, req.ID)
		done(reply{Session: &s}, err)
	case "chat":
		done(reply{}, m.Chat(ctx, req.ID, req.Text))
	case "remove":
		done(reply{}, m.Remove(ctx, req.ID, req.Force))
	case "merge":
		res, err := m.Merge(ctx, req.ID, MergeOptions{Into: req.Into, Force: req.Force})
		done(reply{Merge: &res}, err)
	case "changes":
		ch, err := m.Changes(ctx, req.ID)
		done(reply{Changes: &ch}, err)
	case "diff":
		if req.File == nil {
			done(reply{}, fmt.Errorf("diff without a file: %w", ErrBadOptions))
			return
		}
		d, err := m.FileDiff(ctx, req.ID, *req.File)
		done(reply{Diff: &d}, err)
	case "export":
		dir, when, err := m.Export(ctx, req.ID)
		done(reply{Export: &exportReply{Dir: dir, When: when}}, err)
	case "exec":
		if req.Exec == nil {
			done(reply{}, fmt.Errorf("exec without a command: %w", ErrBadOptions))
			return
		}
		out := writerFunc(func(p []byte) (int, error) { return len(p), send(reply{Stdout: p}) })
		errw := writerFunc(func(p []byte) (int, error) { return len(p), send(reply{Stderr: p}) })
		res, err := m.Exec(ctx, req.ID, *req.Exec, out, errw)
		done(reply{Exec: &res}, err)
	case "net-rule":
		rule, err := m.AddNetRule(ctx, req.ID, req.Scope, req.Action, req.Text)
		done(reply{Note: rule.String()}, err)
	case "net-rules-set":
		done(reply{}, m.SetNetworkRules(ctx, req.Scope, req.ID, req.Text, 0))
	case "net-reload":
		done(reply{}, m.ReloadNetworks(ctx))
	case "ports":
		ports, err := m.Ports(ctx, req.ID)
		done(reply{Ports: ports}, err)
	case "publish":
		p, err := m.PublishPort(ctx, req.ID, req.Guest, req.Host)
		done(reply{Port: &p}, err)
	case "unpublish":
		done(reply{}, m.UnpublishPort(ctx, req.ID, req.Guest))
	case "subscribe":
		for ev := range m.Subscribe(ctx, req.ID) {
			if send(reply{Event: &ev}) != nil {
				return
			}
		}
	default:
		done(reply{}, fmt.Errorf("unknown operation %q: is this Sandbar older than the one calling it?", req.Op))
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// errCode names a sentinel error for the wire.
func errCode(err error) string {
	var dirty *workspace.DirtyError
	switch {
	case errors.As(err, &dirty):
		return "dirty"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	case errors.Is(err, store.ErrAmbiguous):
		return "ambiguous"
	case errors.Is(err, store.ErrExists):
		return "exists"
	case errors.Is(err, ErrBudget):
		return "budget"
	case errors.Is(err, ErrState):
		return "state"
	case errors.Is(err, ErrOwnedElsewhere):
		return "owned"
	case errors.Is(err, ErrNoCredentials):
		return "no_credentials"
	case errors.Is(err, ErrBadOptions):
		return "bad_options"
	case errors.Is(err, ErrNetworkRules):
		return "network_rules"
	case errors.Is(err, ErrNoNetwork):
		return "no_network"
	case errors.Is(err, netstack.ErrPortInUse):
		return "port_in_use"
	}
	return ""
}

var codes = map[string]error{
	"not_found": store.ErrNotFound, "ambiguous": store.ErrAmbiguous, "exists": store.ErrExists,
	"budget": ErrBudget, "state": ErrState, "owned": ErrOwnedElsewhere,
	"no_credentials": ErrNoCredentials, "bad_options": ErrBadOptions, "dirty": ErrDirty,
	"network_rules": ErrNetworkRules, "no_network": ErrNoNetwork, "port_in_use": netstack.ErrPortInUse,
}

// ErrDirty is what a remote "dirty workspace" refusal is; locally it is a
// *workspace.DirtyError.
var ErrDirty = errors.New("the workspace has work not in the repository")

// remoteError is an error that came over the socket.
type remoteError struct {
	msg  string
	code error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Is(target error) bool {
	return e.code != nil && target == e.code
}

// Remote calls the engine of a data directory.
type Remote struct {
	Socket string
}

// Dial checks an engine answers on socket.
func Dial(ctx context.Context, socket string) (*Remote, error) {
	r := &Remote{Socket: socket}
	return r, r.call(ctx, request{Op: "ping"}, nil)
}

// call sends req and reads replies until done; each non-final reply goes
// to each (which may be nil).
func (r *Remote) call(ctx context.Context, req request, each func(reply) error) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", r.Socket)
	if err != nil {
		return fmt.Errorf("reach the Sandbar engine at %s: %w", r.Socket, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReaderSize(c, 64<<10))
	for {
		var rep reply
		if err := dec.Decode(&rep); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return errors.New("the Sandbar engine hung up")
			}
			return fmt.Errorf("read from the Sandbar engine: %w", err)
		}
		if each != nil {
			if err := each(rep); err != nil {
				return err
			}
		}
		if rep.Done {
			if rep.Error != "" {
				return &remoteError{msg: rep.Error, code: codes[rep.Code]}
			}
			return nil
		}
	}
}

func (r *Remote) session(ctx context.Context, req request) (store.Session, error) {
	var s store.Session
	err := r.call(ctx, req, func(rep reply) error {
		if rep.Session != nil {
			s = *rep.Session
		}
		return nil
	})
	return s, err
}

// AddProject is Manager.AddProject in the engine.
func (r *Remote) AddProject(ctx context.Context, path string) (store.Project, string, error) {
	var p store.Project
	var note string
	err := r.call(ctx, request{Op: "add-project", Path: path}, func(rep reply) error {
		if rep.Project != nil {
			p, note = *rep.Project, rep.Note
		}
		return nil
	})
	return p, note, err
}

// Start is Manager.Start in the engine.
func (r *Remote) Start(ctx context.Context, o Options) (store.Session, error) {
	return r.session(ctx, request{Op: "start", Options: &o})
}

// Stop is Manager.Stop in the engine.
func (r *Remote) Stop(ctx context.Context, id string) (store.Session, error) {
	return r.session(ctx, request{Op: "stop", ID: id})
}

// Restart is Manager.Restart in the engine.
func (r *Remote) Restart(ctx context.Context, id string) (store.Session, error) {
	return r.session(ctx, request{Op: "restart", ID: id})
}

// Wait is Manager.Wait in the engine.
func (r *Remote) Wait(ctx context.Context, id string) (store.Session, error) {
	return r.session(ctx, request{Op: "wait", ID: id})
}

// Chat is Manager.Chat in the engine.
func (r *Remote) Chat(ctx context.Context, id, text string) error {
	return r.call(ctx, request{Op: "chat", ID: id, Text: text}, nil)
}

// Remove is Manager.Remove in the engine.
func (r *Remote) Remove(ctx context.Context, id string, force bool) error {
	return r.call(ctx, request{Op: "remove", ID: id, Force: force}, nil)
}

// Merge is Manager.Merge in the engine.
func (r *Remote) Merge(ctx context.Context, id string, o MergeOptions) (workspace.MergeResult, error) {
	var res workspace.MergeResult
	err := r.call(ctx, request{Op: "merge", ID: id, Force: o.Force, Into: o.Into}, func(rep reply) error {
		if rep.Merge != nil {
			res = *rep.Merge
		}
		return nil
	})
	return res, err
}

// Changes is Manager.Changes in the engine, which alone can ask a VM it
// runs.
func (r *Remote) Changes(ctx context.Context, id string) (workspace.Changes, error) {
	var ch workspace.Changes
	err := r.call(ctx, request{Op: "changes", ID: id}, func(rep reply) error {
		if rep.Changes != nil {
			ch = *rep.Changes
		}
		return nil
	})
	return ch, err
}

// FileDiff is Manager.FileDiff in the engine.
func (r *Remote) FileDiff(ctx context.Context, id string, f workspace.FileChange) (string, error) {
	var d string
	err := r.call(ctx, request{Op: "diff", ID: id, File: &f}, func(rep reply) error {
		if rep.Diff != nil {
			d = *rep.Diff
		}
		return nil
	})
	return truncateDiff(d), err
}

// Export is Manager.Export in the engine, which saves a session it runs
// first.
func (r *Remote) Export(ctx context.Context, id string) (string, time.Time, error) {
	var ex exportReply
	err := r.call(ctx, request{Op: "export", ID: id}, func(rep reply) error {
		if rep.Export != nil {
			ex = *rep.Export
		}
		return nil
	})
	return ex.Dir, ex.When, err
}

// Exec is Manager.Exec in the engine.
func (r *Remote) Exec(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (sandbox.ExecResult, error) {
	var res sandbox.ExecResult
	err := r.call(ctx, request{Op: "exec", ID: id, Exec: &req}, func(rep reply) error {
		if rep.Stdout != nil && stdout != nil {
			if _, err := stdout.Write(rep.Stdout); err != nil {
				return err
			}
		}
		if rep.Stderr != nil && stderr != nil {
			if _, err := stderr.Write(rep.Stderr); err != nil {
				return err
			}
		}
		if rep.Exec != nil {
			res = *rep.Exec
		}
		return nil
	})
	return res, err
}

// Subscribe streams the engine's events until ctx is done.
func (r *Remote) Subscribe(ctx context.Context, id string) (<-chan Event, error) {
	out := make(chan Event, 256)
	ready := make(chan error, 1)
	go func() {
		defer close(out)
		first := true
		err := r.call(ctx, request{Op: "subscribe", ID: id}, func(rep reply) error {
			if rep.Event != nil {
				select {
				case out <- *rep.Event:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		if first {
			select {
			case ready <- err:
			default:
			}
		}
	}()
	// A connection error shows at once; otherwise the stream is up.
	select {
	case err := <-ready:
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
	case <-time.After(50 * time.Millisecond):
	}
	return out, nil
}

// AddNetRule is Manager.AddNetRule in the engine; it returns the rule as
// kept.
func (r *Remote) AddNetRule(ctx context.Context, id string, scope NetScope, action, target string) (string, error) {
	var rule string
	err := r.call(ctx, request{Op: "net-rule", ID: id, Scope: scope, Action: action, Text: target}, func(rep reply) error {
		if rep.Done {
			rule = rep.Note
		}
		return nil
	})
	return rule, err
}

// SetNetworkRules is Manager.SetNetworkRules in the engine.
func (r *Remote) SetNetworkRules(ctx context.Context, scope NetScope, ref, text string) error {
	return r.call(ctx, request{Op: "net-rules-set", ID: ref, Scope: scope, Text: text}, nil)
}

// ReloadNetworks is Manager.ReloadNetworks in the engine.
func (r *Remote) ReloadNetworks(ctx context.Context) error {
	return r.call(ctx, request{Op: "net-reload"}, nil)
}

// Ports is Manager.Ports in the engine.
func (r *Remote) Ports(ctx context.Context, id string) ([]netstack.Port, error) {
	var ports []netstack.Port
	err := r.call(ctx, request{Op: "ports", ID: id}, func(rep reply) error {
		if rep.Done {
			ports = rep.Ports
		}
		return nil
	})
	return ports, err
}

// PublishPort is Manager.PublishPort in the engine.
func (r *Remote) PublishPort(ctx context.Context, id string, guest, host uint16) (netstack.Port, error) {
	var p netstack.Port
	err := r.call(ctx, request{Op: "publish", ID: id, Guest: guest, Host: host}, func(rep reply) error {
		if rep.Port != nil {
			p = *rep.Port
		}
		return nil
	})
	return p, err
}

// UnpublishPort is Manager.UnpublishPort in the engine.
func (r *Remote) UnpublishPort(ctx context.Context, id string, guest uint16) error {
	return r.call(ctx, request{Op: "unpublish", ID: id, Guest: guest}, nil)
}
