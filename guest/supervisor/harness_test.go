package supervisor

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

// fakeSys is the thin System of the tests: the current user, a temp home,
// fixed facts, and a recorded power-off.
type fakeSys struct {
	home string

	mu         sync.Mutex
	times      []time.Time
	poweroffs  int
	beforeOff  func() // runs inside Poweroff
	poweredOff chan struct{}
}

func newFakeSys(t testing.TB) *fakeSys {
	return &fakeSys{home: t.TempDir(), poweredOff: make(chan struct{})}
}

func (f *fakeSys) Facts() (string, int, uint64) { return "6.1.0-test", 2, 2 << 30 }

func (f *fakeSys) EnsureUser(name string, _ int, _ string) (User, error) {
	home := filepath.Join(f.home, name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return User{}, err
	}
	return User{Name: name, UID: os.Getuid(), GID: os.Getgid(), Home: home}, nil
}

func (f *fakeSys) LookupUser(string) (User, bool, error) { return User{}, false, nil }

func (f *fakeSys) SetTime(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, t)
	return syscall.EPERM // as an unprivileged test would meet
}

func (f *fakeSys) DiskUsage(string) (uint64, uint64, error) { return 10, 100, nil }

func (f *fakeSys) Poweroff() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.beforeOff != nil {
		f.beforeOff()
	}
	f.poweroffs++
	if f.poweroffs == 1 {
		close(f.poweredOff)
	}
	return nil
}

// host is the test's end of the connection, speaking the protocol.
type host struct {
	t         testing.TB
	sys       *fakeSys
	ws        string
	caBundle  string // the system CA bundle, holding origBundle at first
	caFile    string
	conn      net.Conn
	guest     net.Conn
	w         *protocol.Writer
	events    chan protocol.Event
	serveDone chan struct{}
	serveErr  error
	cancel    context.CancelFunc
}

// origBundle is what the test's system CA bundle holds before a start.
const origBundle = "# the image's bundle\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"

func newHost(t testing.TB) *host {
	t.Helper()
	return newHostConfig(t, nil)
}

// newHostConfig is newHost with a chance to change the supervisor's
// Config before it serves.
func newHostConfig(t testing.TB, change func(*Config)) *host {
	t.Helper()
	certs := t.TempDir()
	h := &host{t: t, sys: newFakeSys(t), ws: t.TempDir(), events: make(chan protocol.Event), serveDone: make(chan struct{}),
		caBundle: filepath.Join(certs, "ca-certificates.crt"), caFile: filepath.Join(certs, "sandbar-ca.pem")}
	if err := os.WriteFile(h.caBundle, []byte(origBundle), 0o644); err != nil {
		t.Fatal(err)
	}
	guestEnd, hostEnd := net.Pipe()
	h.conn, h.guest, h.w = hostEnd, guestEnd, protocol.NewWriter(hostEnd)
	log := slog.New(slog.DiscardHandler)
	if _, bench := t.(*testing.B); !bench {
		log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := Config{Workspace: h.ws, Sys: h.sys, Logger: log, CABundle: h.caBundle, CAFile: h.caFile}
	if change != nil {
		change(&cfg)
	}
	sup := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.serveErr = sup.Serve(ctx, guestEnd); close(h.serveDone) }()

	quit := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(h.events)
		r := protocol.NewReader(hostEnd)
		var last uint64
		for {
			ev, err := r.ReadEvent()
			if err != nil {
				if protocol.IsRecoverable(err) {
					t.Errorf("guest sent a bad line: %v", err)
					continue
				}
				return
			}
			if ev.Seq != last+1 || ev.TS == 0 {
				t.Errorf("event %s has seq %d ts %d after seq %d", ev.Ev, ev.Seq, ev.TS, last)
			}
			last = ev.Seq
			select {
			case h.events <- ev:
			case <-quit:
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.serveDone:
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return within 20s of cancel")
		}
		close(quit)
		hostEnd.Close()
		guestEnd.Close()
		<-readerDone
	})
	ready := h.next()
	if ready.Ev != protocol.EvReady {
		t.Fatalf("first event is %s, want %s", ready.Ev, protocol.EvReady)
	}
	return h
}

func (h *host) send(c protocol.Command) {
	h.t.Helper()
	if err := h.w.SendCommand(c); err != nil {
		h.t.Fatalf("send %s: %v", c.Cmd, err)
	}
}

// next returns the next event that is not stats.
func (h *host) next() protocol.Event {
	h.t.Helper()
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-h.events:
			if !ok {
				h.t.Fatal("the guest closed the stream while an event was expected")
			}
			if ev.Ev == protocol.EvStats {
				continue
			}
			return ev
		case <-timer.C:
			h.t.Fatal("no event from the guest within 15s")
		}
	}
}

// until collects events up to and including the first that matches ev
// (and id, when not empty).
func (h *host) until(ev, id string) []protocol.Event {
	h.t.Helper()
	var got []protocol.Event
	for {
		e := h.next()
		got = append(got, e)
		if e.Ev == ev && (id == "" || e.ID == id) {
			return got
		}
		if e.Ev == protocol.EvError && ev != protocol.EvError {
			h.t.Logf("error event on the way: %+v", e)
		}
	}
}

// lines returns the agent lines of stream ev (reassembled) in events.
func lines(events []protocol.Event, ev string) []string {
	var j protocol.LineJoiner
	var out []string
	for _, e := range events {
		if e.Ev == ev {
			if l, ok := j.Add(e); ok {
				out = append(out, string(l))
			}
		}
	}
	return out
}

// execOutput runs argv as an exec and returns its stdout, stderr and result.
func (h *host) execOutput(c protocol.Command) (stdout, stderr []byte, res protocol.Event) {
	h.t.Helper()
	c.Cmd = protocol.CmdExec
	h.send(c)
	for _, e := range h.until(protocol.EvExecResult, c.ID) {
		switch {
		case e.ID != c.ID:
		case e.Ev == protocol.EvExecStdout:
			stdout = append(stdout, e.Payload()...)
		case e.Ev == protocol.EvExecStderr:
			stderr = append(stderr, e.Payload()...)
		case e.Ev == protocol.EvExecResult:
			res = e
		}
	}
	return stdout, stderr, res
}

func (h *host) start(id string, script string, env map[string]string) protocol.Event {
	h.t.Helper()
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: id, Env: env,
		Agent: &protocol.Agent{Command: "sh", Args: []string{"-c", script}}})
	ev := h.next()
	if ev.Ev != protocol.EvAgentStarted || ev.ID != id || ev.PID <= 0 {
		h.t.Fatalf("after start: %+v, want agent:started with id %s and a pid", ev, id)
	}
	return ev
}

// waitLine reads events until the agent prints want on stdout.
func (h *host) waitLine(want string) []protocol.Event {
	h.t.Helper()
	var got []protocol.Event
	for {
		e := h.next()
		got = append(got, e)
		if e.Ev == protocol.EvAgentStdout && string(e.Payload()) == want {
			return got
		}
		if e.Ev == protocol.EvAgentExit {
			h.t.Fatalf("agent exited (%+v) before printing %q; events %+v", e, want, got)
		}
	}
}

func served(h *host) error {
	select {
	case <-h.serveDone:
		return h.serveErr
	case <-time.After(20 * time.Second):
		h.t.Fatal("Serve did not return")
		return nil
	}
}

func netPipe() (net.Conn, net.Conn) { return net.Pipe() }
