package secrets_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/secrets"
	"sandbar/tests/keyringtest"
)

func TestLocked(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	store := newNames()
	s, logs := newSecrets(t, store, secrets.Options{})
	if err := s.Set(ctx, "LOCKED_TEST", distinctive); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Delete(ctx, "LOCKED_TEST") })

	if err := keyringtest.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := keyringtest.Unlock(); err != nil {
			t.Error(err)
		}
	})
	// With no display, gnome-keyring cannot show its unlock prompt: the
	// prompt completes as dismissed at once, as if the person had
	// dismissed it, and no call waits for the timeout.
	start := time.Now()
	_, err := s.Get(ctx, "LOCKED_TEST")
	wantErr(t, err, secrets.ErrLocked, msgLocked)
	noLeak(t, err, distinctive)
	if err.Error() != "get secret LOCKED_TEST: "+msgLocked {
		t.Fatalf("message: %q", err)
	}

	err = s.Set(ctx, "LOCKED_TEST", distinctive+"-new")
	wantErr(t, err, secrets.ErrLocked, msgLocked)
	noLeak(t, err, distinctive)
	err = s.Set(ctx, "LOCKED_OTHER", distinctive)
	wantErr(t, err, secrets.ErrLocked, msgLocked)
	noLeak(t, err, distinctive)
	if store.has("LOCKED_OTHER") {
		t.Fatal("a name was recorded though the keyring refused its value")
	}
	wantErr(t, s.Delete(ctx, "LOCKED_TEST"), secrets.ErrLocked, msgLocked)
	_, err = s.Env(ctx, []string{"LOCKED_TEST"})
	wantErr(t, err, secrets.ErrLocked, msgLocked)
	noLeak(t, err, distinctive)
	wantErr(t, s.Check(ctx), secrets.ErrLocked, msgLocked)
	if d := time.Since(start); d > secrets.DefaultTimeout {
		t.Fatalf("the locked calls took %s; a call should fail at once when no prompt can be shown", d)
	}

	if err := keyringtest.Unlock(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "LOCKED_TEST")
	if err != nil || got != distinctive {
		t.Fatalf("after unlocking: %v (value intact: %v)", err, got == distinctive)
	}
	if strings.Contains(logs.String(), distinctive) {
		t.Fatalf("the value leaked into the log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "failed to unlock correct collection") {
		t.Fatalf("the log lacks the low-level cause:\n%s", logs)
	}
}

// TestNoBus runs in a child process: godbus keeps its session connection
// for the life of the process, so pointing DBUS_SESSION_BUS_ADDRESS
// elsewhere here would change nothing.
func TestNoBus(t *testing.T) {
	if !keyringtest.InChild() {
		keyringtest.RunChild(t, keyringtest.SameBus, "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent")
		return
	}
	unavailable(t, 5*time.Second)
}

// TestNoBusAddress: with no address at all godbus would run dbus-launch
// and leave a bus daemon behind; Secrets refuses first.
func TestNoBusAddress(t *testing.T) {
	if !keyringtest.InChild() {
		keyringtest.RunChild(t, keyringtest.SameBus, "DBUS_SESSION_BUS_ADDRESS=")
		return
	}
	if _, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid())); err == nil {
		t.Skip("this user has a systemd session bus, which godbus would find")
	}
	unavailable(t, 5*time.Second)
}

// TestNoSecretService: a session bus on which nothing provides (or can be
// activated to provide) org.freedesktop.secrets.
func TestNoSecretService(t *testing.T) {
	if !keyringtest.InChild() {
		keyringtest.RunChild(t, keyringtest.EmptyBus)
		return
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Fatal("the child has no session bus")
	}
	unavailable(t, 5*time.Second)
}

// TestHungBus: a bus that accepts the connection and never answers. Every
// call gives up after the timeout.
func TestHungBus(t *testing.T) {
	if !keyringtest.InChild() {
		keyringtest.RunChild(t, keyringtest.SameBus)
		return
	}
	sock := filepath.Join(t.TempDir(), "bus")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+sock)
	const timeout = 300 * time.Millisecond
	s, logs := newSecrets(t, newNames(), secrets.Options{Timeout: timeout})
	ctx := context.Background()
	for i := range 3 {
		start := time.Now()
		err := s.Set(ctx, "HUNG", distinctive)
		d := time.Since(start)
		wantErr(t, err, secrets.ErrUnavailable, msgUnavailable)
		noLeak(t, err, distinctive)
		// The timeout, then at most as long again asking whether the
		// keyring is locked.
		if d < timeout || d > 2*timeout+time.Second {
			t.Fatalf("call %d took %s; want about %s to %s", i, d, timeout, 2*timeout)
		}
	}
	// A cancelled context wins over the wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Get(cctx, "HUNG")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if strings.Contains(logs.String(), distinctive) {
		t.Fatalf("the value leaked into the log:\n%s", logs)
	}
}

// unavailable checks that every operation fails with ErrUnavailable, fast,
// and that the value written never shows.
func unavailable(t *testing.T, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	store := newNames()
	s, logs := newSecrets(t, store, secrets.Options{Timeout: timeout})
	start := time.Now()
	err := s.Set(ctx, "NO_BUS", distinctive)
	wantErr(t, err, secrets.ErrUnavailable, msgUnavailable)
	noLeak(t, err, distinctive)
	if store.has("NO_BUS") {
		t.Fatal("a name was recorded though the keyring was not reached")
	}
	_, err = s.Get(ctx, "NO_BUS")
	wantErr(t, err, secrets.ErrUnavailable, msgUnavailable)
	if err.Error() != "get secret NO_BUS: "+msgUnavailable {
		t.Fatalf("message: %q", err)
	}
	wantErr(t, s.Delete(ctx, "NO_BUS"), secrets.ErrUnavailable, msgUnavailable)
	_, err = s.Env(ctx, []string{"NO_BUS"})
	wantErr(t, err, secrets.ErrUnavailable, msgUnavailable)
	err = s.Check(ctx)
	wantErr(t, err, secrets.ErrUnavailable, msgUnavailable)
	if err.Error() != "check: "+msgUnavailable {
		t.Fatalf("message: %q", err)
	}
	if d := time.Since(start); d >= timeout {
		t.Fatalf("five calls took %s, more than one call's timeout (%s)", d, timeout)
	}
	if strings.Contains(logs.String(), distinctive) {
		t.Fatalf("the value leaked into the log:\n%s", logs)
	}
	t.Logf("log:\n%s", logs)
}

// TestLockedPromptUnanswered: the keyring is locked and its unlock prompt
// is up, but nobody answers it. go-keyring would wait for ever; the call
// gives up after its timeout and, asking the service, says it is locked.
func TestLockedPromptUnanswered(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	s, logs := newSecrets(t, newNames(), secrets.Options{})
	if err := s.Set(ctx, "PROMPT_TEST", distinctive); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Delete(ctx, "PROMPT_TEST") })

	release := keyringtest.StallPrompts(t)
	if err := keyringtest.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := keyringtest.Unlock(); err != nil {
			t.Error(err)
		}
	})
	const timeout = 500 * time.Millisecond
	short, _ := newSecrets(t, newNames(), secrets.Options{Timeout: timeout})
	for i, call := range []func() error{
		func() error { _, err := short.Get(ctx, "PROMPT_TEST"); return err },
		// The first call is still waiting on its prompt: this one waits
		// for it, then gives up too.
		func() error { return short.Set(ctx, "PROMPT_TEST", distinctive+"-new") },
	} {
		start := time.Now()
		err := call()
		d := time.Since(start)
		wantErr(t, err, secrets.ErrLocked, msgLocked)
		noLeak(t, err, distinctive)
		if d < timeout || d > 2*timeout+time.Second {
			t.Fatalf("call %d took %s; want about %s to %s", i, d, timeout, 2*timeout)
		}
	}
	// With the prompter gone, gnome-keyring drops the prompt and the
	// abandoned call returns, freeing its slot; the next call answers
	// normally once the keyring is unlocked.
	release()
	if err := keyringtest.Unlock(); err != nil {
		t.Fatal(err)
	}
	long, _ := newSecrets(t, newNames(), secrets.Options{})
	if got, err := long.Get(ctx, "PROMPT_TEST"); err != nil || got != distinctive {
		t.Fatalf("after unlocking: %v (value intact: %v)", err, got == distinctive)
	}
	if strings.Contains(logs.String(), distinctive) {
		t.Fatalf("the value leaked into the log:\n%s", logs)
	}
}
