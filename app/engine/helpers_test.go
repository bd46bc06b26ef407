package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/guest/image"
	"sandbar/vm/vmtest"
)

// fixture is one test's data directory: its engine's Manager (env) and a
// repository whose README.md says hello.
type fixture struct {
	env  *sessiontest.Env
	repo string
	logs *logWatch
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := sessiontest.New(t)
	repo := env.Repo(t, "my répo with spaces")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sessiontest.Git(t, repo, "commit", "-qam", "hello")
	return &fixture{env: env, repo: repo, logs: watchLogs(t, env.Manager)}
}

// serve makes f's Manager the engine of its data directory until the
// returned stop is called (or the test ends).
func serve(t *testing.T, f *fixture) (*Server, func()) {
	t.Helper()
	srv, err := Listen(context.Background(), f.env.Paths, f.env.Manager, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	}
	t.Cleanup(stop)
	return srv, stop
}

// newClient is a second Sandbar process's view of f's data directory: a
// Manager of its own over the same store, which runs nothing, and the
// engine reached through its socket.
func newClient(t *testing.T, f *fixture) *Client {
	t.Helper()
	img := fakeImage(t)
	m, err := session.New(context.Background(), session.Config{
		Paths: f.env.Paths, Store: f.env.Store, Hypervisor: &vmtest.Hypervisor{},
		Image:      func(context.Context) (*image.Image, error) { return img, nil },
		HostMemory: 16 << 30, HostCPUs: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	paths := f.env.Paths
	return &Client{Local: m, Engine: func(ctx context.Context) (*Remote, error) { return Dial(ctx, paths) }}
}

func fakeImage(t *testing.T) *image.Image {
	d := t.TempDir()
	img := &image.Image{Dir: d, Kernel: filepath.Join(d, "kernel"), Initramfs: filepath.Join(d, "initramfs"),
		RootFS: filepath.Join(d, "rootfs.ext4"), AgentDisk: filepath.Join(d, "agent.ext4")}
	for _, p := range []string{img.Kernel, img.Initramfs, img.RootFS, img.AgentDisk} {
		os.WriteFile(p, []byte("vmtest"), 0o644)
	}
	return img
}

// waitSubscribed waits until the engine srv serves a subscription.
func waitSubscribed(t *testing.T, srv *Server) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		n, changed := srv.subscriptions()
		if n > 0 {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the client's subscription did not reach the engine within 30 s")
		}
	}
}

// logWatch follows the log lines of every session of a fixture from its
// start. (The store gets log lines in batches, so what it holds says
// nothing of a line just written; the events say it at once.)
type logWatch struct {
	mu      sync.Mutex
	lines   map[string][]store.LogLine
	dropped bool          // some events were not delivered: ask the store too
	changed chan struct{} // closed and replaced on each line
}

func watchLogs(t *testing.T, m *session.Manager) *logWatch {
	w := &logWatch{lines: map[string][]store.LogLine{}, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	events := m.Subscribe(ctx, "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			w.mu.Lock()
			switch ev.Kind {
			case session.EventLog:
				w.lines[ev.Session] = append(w.lines[ev.Session], *ev.Log)
			case session.EventDropped:
				w.dropped = true
			}
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// waitLog waits until session id's log has a line holding text.
func waitLog(t *testing.T, f *fixture, id, text string) {
	t.Helper()
	waitLine(t, f, id, text, func(store.LogLine) bool { return true })
}

// waitOutput waits until the agent of session id printed a line holding
// text (Sandbar's own lines, such as the agent's command line, do not
// count).
func waitOutput(t *testing.T, f *fixture, id, text string) {
	t.Helper()
	waitLine(t, f, id, text, func(l store.LogLine) bool { return l.Stream == "stdout" })
}

func waitLine(t *testing.T, f *fixture, id, text string, ok func(store.LogLine) bool) {
	t.Helper()
	w := f.logs
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		lines, dropped, changed := w.lines[id], w.dropped, w.changed
		w.mu.Unlock()
		if dropped {
			stored, _ := f.env.Manager.Logs(context.Background(), id, 0, 10000)
			lines = append(lines, stored...)
		}
		for _, l := range lines {
			if ok(l) && strings.Contains(l.Text, text) {
				return
			}
		}
		select {
		case <-changed:
		case <-deadline:
			s, _ := f.env.Manager.Get(context.Background(), id)
			t.Fatalf("no log line %q within 30 s; session %s %q", text, s.State, s.Reason)
		}
	}
}

// waitEvent reads events until one of session id matches ok.
func waitEvent(t *testing.T, ch <-chan session.Event, id string, what string, ok func(session.Event) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, open := <-ch:
			if !open {
				t.Fatalf("events closed while waiting for %s", what)
			}
			if ev.Session == id && ok(ev) {
				return
			}
		case <-deadline:
			t.Fatalf("no event %s of %s within 30 s", what, id)
		}
	}
}
