package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"sandbar/app/secrets"
	"sandbar/tests/keyringtest"
)

const (
	msgLocked      = "the Secret Service keyring is locked: unlock it (e.g. in Passwords and Keys / Seahorse) and retry"
	msgUnavailable = "no Secret Service is running: start gnome-keyring (or KWallet) in your session, then retry"
)

// distinctive is a value that appears nowhere else, so finding it in an
// error or a log means it leaked.
const distinctive = "sk-ant-TEST-9f3c2b1a-DO-NOT-LEAK-7e6d5c4b"

// newSecrets returns a Secrets over the test keyring, logging to a buffer
// the test can search for leaked values.
func newSecrets(t *testing.T, store *names, o secrets.Options) (*secrets.Secrets, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return secrets.New(store, o), logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// noLeak fails t if value appears in err's text, in its %+v and %#v forms,
// or in any error it wraps.
func noLeak(t *testing.T, err error, value string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, value) {
			t.Fatalf("the value leaked into an error: %s", s)
		}
	}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if strings.Contains(e.Error(), value) {
			t.Fatalf("the value leaked into a wrapped error %T: %s", e, e)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
		}
	}
	walk(err)
}

func wantErr(t *testing.T, err, kind error, msg string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got %v, want an error wrapping %v", err, kind)
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %q, want it to say %q", err, msg)
	}
}

func TestRoundTrip(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	store := newNames()
	s, _ := newSecrets(t, store, secrets.Options{})
	values := map[string]string{
		"ANTHROPIC_API_KEY":           "sk-ant-api03-" + strings.Repeat("x", 90),
		"CLAUDE_CODE_OAUTH_TOKEN":     "sk-ant-oat01-token",
		"GITHUB_TOKEN":                "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
		"UNICODE_1":                   "pässwörd ✓ 秘密 🔑 \t with spaces and\nnewlines ",
		"BIG_60K":                     strings.Repeat("0123456789abcdef", 60<<10/16),
		"_x":                          "a",
		"A" + strings.Repeat("b", 63): "longest name",
	}
	for n, v := range values {
		if err := s.Set(ctx, n, v); err != nil {
			t.Fatalf("Set %s: %v", n, err)
		}
	}
	t.Cleanup(func() {
		for n := range values {
			_ = s.Delete(ctx, n)
		}
	})
	for n, v := range values {
		got, err := s.Get(ctx, n)
		if err != nil {
			t.Fatalf("Get %s: %v", n, err)
		}
		if got != v {
			t.Fatalf("Get %s: got %d bytes, want %d bytes (%q...)", n, len(got), len(v), got[:min(len(got), 20)])
		}
	}

	// Set again replaces.
	if err := s.Set(ctx, "GITHUB_TOKEN", "ghp_replaced"); err != nil {
		t.Fatal(err)
	}
	values["GITHUB_TOKEN"] = "ghp_replaced"
	if got, err := s.Get(ctx, "GITHUB_TOKEN"); err != nil || got != "ghp_replaced" {
		t.Fatalf("after replacing: %q, %v", got, err)
	}

	got, err := s.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := store.list()
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(values) {
		t.Fatalf("Names = %v, want %v", got, want)
	}

	env, err := s.Env(ctx, []string{"GITHUB_TOKEN", "UNICODE_1", "GITHUB_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 2 || env["GITHUB_TOKEN"] != "ghp_replaced" || env["UNICODE_1"] != values["UNICODE_1"] {
		t.Fatalf("Env = %q", env)
	}
	if env, err := s.Env(ctx, nil); err != nil || len(env) != 0 {
		t.Fatalf("Env(nil) = %v, %v", env, err)
	}

	if err := s.Delete(ctx, "UNICODE_1"); err != nil {
		t.Fatal(err)
	}
	if store.has("UNICODE_1") {
		t.Fatal("Delete left the name listed")
	}
	_, err = s.Get(ctx, "UNICODE_1")
	wantErr(t, err, secrets.ErrNotFound, "")
	if err.Error() != "no secret UNICODE_1: set it with `sandbar secrets set UNICODE_1`" {
		t.Fatalf("message: %q", err)
	}
	err = s.Delete(ctx, "UNICODE_1")
	wantErr(t, err, secrets.ErrNotFound, "no secret UNICODE_1")

	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestServicesAreSeparate(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	a, _ := newSecrets(t, newNames(), secrets.Options{Service: "SandbarTestA"})
	b, _ := newSecrets(t, newNames(), secrets.Options{Service: "SandbarTestB"})
	if err := a.Set(ctx, "SEPARATE", "value-in-a"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Delete(ctx, "SEPARATE") })
	_, err := b.Get(ctx, "SEPARATE")
	wantErr(t, err, secrets.ErrNotFound, "")
}

func TestMissing(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	store := newNames()
	s, logs := newSecrets(t, store, secrets.Options{})
	if err := s.Set(ctx, "PRESENT", distinctive); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Delete(ctx, "PRESENT") })

	_, err := s.Get(ctx, "NEVER_SET")
	wantErr(t, err, secrets.ErrNotFound, "no secret NEVER_SET: set it with `sandbar secrets set NEVER_SET`")

	_, err = s.Env(ctx, []string{"PRESENT", "MISSING_ONE"})
	wantErr(t, err, secrets.ErrNotFound, "no secret MISSING_ONE: set it with `sandbar secrets set MISSING_ONE`")
	noLeak(t, err, distinctive)
	_, err = s.Env(ctx, []string{"MISSING_ONE", "PRESENT", "MISSING_TWO"})
	wantErr(t, err, secrets.ErrNotFound, "no secrets MISSING_ONE, MISSING_TWO")
	noLeak(t, err, distinctive)

	err = s.Delete(ctx, "NEVER_SET")
	wantErr(t, err, secrets.ErrNotFound, "no secret NEVER_SET")

	// A name whose value was removed from the keyring behind Sandbar's
	// back is still unlisted by Delete.
	_ = store.AddSecretName(ctx, "STALE")
	if err := s.Delete(ctx, "STALE"); err != nil {
		t.Fatalf("Delete of a stale name: %v", err)
	}
	if store.has("STALE") {
		t.Fatal("the stale name is still listed")
	}
	if strings.Contains(logs.String(), distinctive) {
		t.Fatalf("the value leaked into the log:\n%s", logs)
	}
}

func TestBadNames(t *testing.T) {
	ctx := context.Background()
	s, _ := newSecrets(t, newNames(), secrets.Options{})
	for _, name := range []string{
		"", "1ABC", "HAS-DASH", "has space", "dot.name", "ünïcode", "NUL\x00", "tab\t",
		"A" + strings.Repeat("b", 64),
		distinctive, // a token pasted where the name belongs
	} {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			if secrets.ValidName(name) {
				t.Fatal("ValidName = true")
			}
			err := s.Set(ctx, name, "value")
			wantErr(t, err, secrets.ErrBadName, "a name is letters, digits and _")
			if name != "" && strings.Contains(err.Error(), name) {
				t.Fatalf("the bad name is echoed: %q", err)
			}
			_, err = s.Get(ctx, name)
			wantErr(t, err, secrets.ErrBadName, "")
			wantErr(t, s.Delete(ctx, name), secrets.ErrBadName, "")
			_, err = s.Env(ctx, []string{"GOOD", name})
			wantErr(t, err, secrets.ErrBadName, "")
		})
	}
	for _, name := range []string{"A", "_", "a1", "GITHUB_TOKEN", "A" + strings.Repeat("b", 63)} {
		if !secrets.ValidName(name) {
			t.Errorf("ValidName(%q) = false", name)
		}
	}
}

func TestBadValues(t *testing.T) {
	ctx := context.Background()
	store := newNames()
	s, _ := newSecrets(t, store, secrets.Options{})
	for _, tc := range []struct {
		name, value, says string
	}{
		{"empty", "", "the value is empty"},
		{"nul", distinctive + "\x00tail", "NUL byte"},
		{"too big", strings.Repeat(distinctive, secrets.MaxValueLen/len(distinctive)+1), "the keyring here holds at most 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Set(ctx, "BAD_VALUE", tc.value)
			wantErr(t, err, secrets.ErrBadValue, tc.says)
			noLeak(t, err, distinctive)
		})
	}
	if store.has("BAD_VALUE") {
		t.Fatal("a rejected secret's name was recorded")
	}
}

func TestNameStoreFailure(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	store := newNames()
	store.fail = errors.New("database is locked")
	s, logs := newSecrets(t, store, secrets.Options{})
	err := s.Set(ctx, "STORE_FAILS", distinctive)
	if err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("got %v", err)
	}
	noLeak(t, err, distinctive)
	store.fail = nil
	t.Cleanup(func() { _ = s.Delete(ctx, "STORE_FAILS") })
	_, err = s.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), distinctive) {
		t.Fatalf("the value leaked into the log:\n%s", logs)
	}
}

func TestNamesSorted(t *testing.T) {
	s, _ := newSecrets(t, newNames("ZED", "ALPHA", "MID", "_UNDER", "alpha"), secrets.Options{})
	got, err := s.Names(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "[ALPHA MID ZED _UNDER alpha]"; fmt.Sprint(got) != want {
		t.Fatalf("Names = %v, want %s", got, want)
	}
}

func TestConcurrent(t *testing.T) {
	keyringtest.Require(t)
	ctx := context.Background()
	s, _ := newSecrets(t, newNames(), secrets.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("CONCURRENT_%d", i)
			value := fmt.Sprintf("value-%d-%s", i, strings.Repeat("z", i*100))
			if err := s.Set(ctx, name, value); err != nil {
				errs <- err
				return
			}
			got, err := s.Get(ctx, name)
			if err != nil || got != value {
				errs <- fmt.Errorf("%s: got %d bytes, %v", name, len(got), err)
				return
			}
			if err := s.Delete(ctx, name); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
