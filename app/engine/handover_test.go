package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandbar/app/secrets"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/guest/image"
	"sandbar/vm/vmtest"
)

// noKeyring is the keyring as an engine started from another login
// session sees it: the names are recorded, the Secret Service is not
// there. (app/secrets' TestNoSecretService gets the real error, of this
// kind, from a real keyring client on an empty D-Bus session.)
type noKeyring struct{}

func (noKeyring) Names(context.Context) ([]string, error) { return []string{"ANTHROPIC_API_KEY"}, nil }
func (noKeyring) Env(_ context.Context, names []string) (map[string]string, error) {
	return nil, fmt.Errorf("get secret %s: no Secret Service is running: %w", names[0], secrets.ErrUnavailable)
}

// TestHandOverToAClientWithTheKeyring: an engine that cannot reach the
// keyring fails a start with the keyring's error code; a client that can
// reach it has that engine yield, starts its own, and the start goes
// through there. A client that cannot reach it either gets the error,
// and the engine stays.
func TestHandOverToAClientWithTheKeyring(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, _, err := f.env.Manager.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}

	// The engine of another login session, headless.
	img := fakeImage(t)
	other, err := session.New(ctx, session.Config{
		Paths: f.env.Paths, Store: f.env.Store, Hypervisor: &vmtest.Hypervisor{}, Secrets: noKeyring{},
		Image:      func(context.Context) (*image.Image, error) { return img, nil },
		HostMemory: 16 << 30, HostCPUs: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	srvA, err := Listen(context.Background(), f.env.Paths, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	srvA.MayYield()
	actx, stopA := context.WithCancel(context.Background())
	servedA := make(chan error, 1)
	go func() { servedA <- srvA.Serve(actx) }()
	t.Cleanup(func() { stopA(); <-servedA; srvA.Close() })
	go func() {
		// What `sandbar serve` does once it yielded.
		<-srvA.Yielded()
		stopA()
	}()

	// This login session's engine, started when none answers (main's
	// dialer runs `sandbar serve` for it).
	var startB sync.Once
	started := false
	dial := func(ctx context.Context) (*Remote, error) {
		r, err := Dial(ctx, f.env.Paths)
		if err == nil {
			return r, nil
		}
		startB.Do(func() {
			serve(t, f)
			started = true
		})
		return Dial(ctx, f.env.Paths)
	}
	c := newClient(t, f)
	c.Engine = dial
	opts := session.Options{Project: p.Name, Agent: sessiontest.Shell("echo hi; sleep 60"), MemoryMiB: 512}

	// Neither can reach the keyring: the engine's error, and it stays.
	c.KeyringOK = func(context.Context) error { return secrets.ErrUnavailable }
	if _, err := c.Start(ctx, opts); !errors.Is(err, secrets.ErrUnavailable) || !errors.As(err, new(*RemoteError)) {
		t.Fatalf("start with no keyring anywhere: %v, want the engine's keyring error", err)
	}
	if _, err := Dial(ctx, f.env.Paths); err != nil || started {
		t.Fatalf("the engine went though no one could take over: %v (started another: %v)", err, started)
	}

	// This process can: the engine hands over, and the start goes
	// through in the new one.
	c.KeyringOK = func(context.Context) error { return nil }
	s, err := c.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start after the hand-over: %v", err)
	}
	select {
	case <-srvA.Yielded():
	default:
		t.Error("the engine that could not reach the keyring did not yield")
	}
	if !started {
		t.Fatal("no engine was started in this login session")
	}
	if !slices.Contains(f.env.Manager.Running(), s.ID) {
		t.Errorf("the session runs in %v, want this session's engine", f.env.Manager.Running())
	}
	if len(other.Running()) != 0 {
		t.Errorf("the yielded engine runs %v", other.Running())
	}
}

// TestAppEngineDoesNotYield: the app, which a person sees, stays the
// engine; the reply says what to do.
func TestAppEngineDoesNotYield(t *testing.T) {
	f := newFixture(t)
	serve(t, f)
	ctx := context.Background()
	r, err := Dial(ctx, f.env.Paths)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := unaryCall[YieldReply](ctx, r, OpYield, None{})
	if err != nil || rep.Yielded || rep.Reason == "" {
		t.Fatalf("yield asked of the app: %+v, %v", rep, err)
	}
	if _, err := Dial(ctx, f.env.Paths); err != nil {
		t.Errorf("the app's engine stopped answering: %v", err)
	}
}

// TestListenAfterAYieldingEngineLetsGo: an engine that yields stops
// answering on its socket an instant before it lets go of its lock; the
// engine the client then starts waits for the lock instead of exiting
// as though another ran (what failed TestHandOverToAClientWithTheKeyring
// now and then). A lock held by an engine that answers is refused at
// once, and one held past lockWait by one that never answers is refused
// then.
func TestListenAfterAYieldingEngineLetsGo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := os.MkdirAll(f.env.Paths.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	hold := func() *os.File {
		t.Helper()
		lock, err := os.OpenFile(f.env.Paths.EngineLock(), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		return lock
	}

	// On its way out: no socket, the lock goes 200 ms later.
	leaving := hold()
	time.AfterFunc(200*time.Millisecond, func() { leaving.Close() })
	srv, err := Listen(ctx, f.env.Paths, f.env.Manager, nil)
	if err != nil {
		t.Fatalf("Listen as a yielding engine lets go: %v, want the lock once it is free", err)
	}

	// Running and answering: refused without waiting.
	start := time.Now()
	if _, err := Listen(ctx, f.env.Paths, f.env.Manager, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("Listen beside an engine that answers: %v, want ErrRunning", err)
	}
	if d := time.Since(start); d >= lockWait {
		t.Errorf("Listen beside an engine that answers took %v: it waited as for one on its way out", d)
	}
	srv.Close()

	// Held and never answering: refused after lockWait.
	stuck := hold()
	defer stuck.Close()
	if _, err := Listen(ctx, f.env.Paths, f.env.Manager, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("Listen beside a lock that stays held: %v, want ErrRunning", err)
	}
}
