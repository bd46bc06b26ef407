package secrets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/zalando/go-keyring"
)

// NameStore keeps the names of the secrets, never their values: a keyring
// cannot list what it holds. app/store's *Store satisfies it.
type NameStore interface {
	AddSecretName(ctx context.Context, name string) error
	SecretNames(ctx context.Context) ([]string, error)
	RemoveSecretName(ctx context.Context, name string) error
}

// Options tune a Secrets; the zero value is the default.
type Options struct {
	// Service is the keyring service every secret is filed under; default
	// "Sandbar".
	Service string
	// Timeout bounds each keyring call; default 10 s. A locked keyring may
	// put up a prompt and wait for the person, and a wedged keyring daemon
	// may never answer. After a timeout a Linux keyring is asked whether it
	// is locked, for at most 2 s (or Timeout, if shorter), to say which.
	// go-keyring takes no context, so a call that times out is left to
	// finish in the background (see Secrets).
	Timeout time.Duration
	// Logger receives the low-level cause of keyring failures (never a
	// value); default discards.
	Logger *slog.Logger
}

const (
	// DefaultService is the keyring service name secrets are kept under.
	DefaultService = "Sandbar"
	// DefaultTimeout bounds one keyring call.
	DefaultTimeout = 10 * time.Second
	// probeName is looked up by Check. It is not a valid secret name, so
	// Set can never create it and the lookup always misses.
	probeName = "sandbar-check"
)

// Secrets reads and writes named secrets in the OS keyring. It is safe for
// concurrent use; keyring calls are made one at a time. Make one per
// process: go-keyring shares one D-Bus connection among all callers.
type Secrets struct {
	names   NameStore
	service string
	timeout time.Duration
	log     *slog.Logger
	// slot is held by the one keyring call in flight. go-keyring takes no
	// context, so a call that outlives its timeout is abandoned and keeps
	// the slot until the keyring answers: at most one such call exists,
	// and later calls wait for it within their own timeout. It also keeps
	// go-keyring's prompt handling, which listens for any signal on a
	// shared D-Bus connection, from mixing up two prompts.
	slot chan struct{}
}

// New returns a Secrets that keeps values in the keyring and names in
// names.
func New(names NameStore, o Options) *Secrets {
	if o.Service == "" {
		o.Service = DefaultService
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Secrets{names: names, service: o.Service, timeout: o.Timeout, log: o.Logger, slot: make(chan struct{}, 1)}
}

// Set stores value under name, replacing any earlier value, and records
// the name. The keyring is written first, so a name is never listed
// without its value having been stored.
func (s *Secrets) Set(ctx context.Context, name, value string) error {
	if err := checkName("set", name); err != nil {
		return err
	}
	if err := checkValue(name, value, maxValueLen(s.service, name)); err != nil {
		return err
	}
	_, err := s.call(ctx, "set", name, value, func() (string, error) {
		return "", keyring.Set(s.service, name, value)
	})
	if err != nil {
		return err
	}
	if err := s.names.AddSecretName(ctx, name); err != nil {
		return fmt.Errorf("set secret %s: stored in the keyring, but recording its name failed (set it again to retry): %w", name, scrub(err, value))
	}
	return nil
}

// Get returns the value of the secret name; ErrNotFound when there is none.
func (s *Secrets) Get(ctx context.Context, name string) (string, error) {
	if err := checkName("get", name); err != nil {
		return "", err
	}
	return s.call(ctx, "get", name, "", func() (string, error) {
		return keyring.Get(s.service, name)
	})
}

// Delete removes the secret name from the keyring and from the names.
// Deleting a name that is in neither is ErrNotFound; a name whose value has
// already gone from the keyring (removed by hand, say) is still unlisted.
func (s *Secrets) Delete(ctx context.Context, name string) error {
	if err := checkName("delete", name); err != nil {
		return err
	}
	_, kerr := s.call(ctx, "delete", name, "", func() (string, error) {
		return "", keyring.Delete(s.service, name)
	})
	if kerr != nil && !errors.Is(kerr, ErrNotFound) {
		return kerr
	}
	listed, err := s.names.SecretNames(ctx)
	if err != nil {
		return fmt.Errorf("delete secret %s: list names: %w", name, err)
	}
	found := false
	for _, n := range listed {
		if n == name {
			found = true
			break
		}
	}
	if !found {
		return kerr // nil when the keyring had it, else ErrNotFound
	}
	if err := s.names.RemoveSecretName(ctx, name); err != nil {
		return fmt.Errorf("delete secret %s: forget its name: %w", name, err)
	}
	return nil
}

// Names returns the names of the stored secrets, sorted, each once.
func (s *Secrets) Names(ctx context.Context) ([]string, error) {
	names, err := s.names.SecretNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("list secret names: %w", err)
	}
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Env returns the value of every named secret, for an agent's environment.
// Every name is checked before the keyring is asked. A missing secret is an
// ErrNotFound error naming every one that is missing; any other failure
// stops at the first.
func (s *Secrets) Env(ctx context.Context, names []string) (map[string]string, error) {
	for _, name := range names {
		if err := checkName("get", name); err != nil {
			return nil, err
		}
	}
	env := make(map[string]string, len(names))
	var missing []string
	for _, name := range names {
		if _, ok := env[name]; ok {
			continue
		}
		v, err := s.Get(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			missing = append(missing, name)
		case err != nil:
			return nil, err
		default:
			env[name] = v
		}
	}
	switch len(missing) {
	case 0:
		return env, nil
	case 1:
		return nil, &opError{op: "get", name: missing[0], kind: ErrNotFound, msg: notFoundMsg(missing[0])}
	default:
		list := strings.Join(missing, ", ")
		return nil, &opError{op: "get", kind: ErrNotFound,
			msg: "no secrets " + list + ": set each with `sandbar secrets set NAME`"}
	}
}

// Check reports whether the keyring can be used now: nil, or an error
// wrapping ErrLocked or ErrUnavailable that says what to do. It looks up a
// secret that never exists; the keyring saying "not found" means it is
// reachable and unlocked.
func (s *Secrets) Check(ctx context.Context) error {
	_, err := s.call(ctx, "check", "", "", func() (string, error) {
		return keyring.Get(s.service, probeName)
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// call runs one go-keyring call within the timeout and turns its error into
// an *opError. value, when not empty, is the value being written: it is
// scrubbed from the low-level cause before that is logged or kept.
func (s *Secrets) call(ctx context.Context, op, name, value string, f func() (string, error)) (string, error) {
	if ctx.Err() != nil {
		return "", canceled(ctx, op, name)
	}
	if err := precheck(); err != nil {
		return "", s.fail(ctx, op, name, value, err, false)
	}
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case s.slot <- struct{}{}:
	case <-ctx.Done():
		return "", canceled(ctx, op, name)
	case <-timer.C:
		return "", s.timedOut(ctx, op, name)
	}
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-s.slot }()
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return "", s.fail(ctx, op, name, value, r.err, false)
		}
		return r.v, nil
	case <-ctx.Done():
		return "", canceled(ctx, op, name)
	case <-timer.C:
		return "", s.timedOut(ctx, op, name)
	}
}

// canceled is the error for a call whose context ended first.
func canceled(ctx context.Context, op, name string) error {
	return &opError{op: op, name: name, msg: ctx.Err().Error(), cause: ctx.Err()}
}

// timedOut is the error for a call that got no answer within the timeout;
// the platform decides whether that means a prompt nobody answered (locked)
// or a keyring that is not there.
func (s *Secrets) timedOut(ctx context.Context, op, name string) error {
	return s.fail(ctx, op, name, "", fmt.Errorf("the keyring did not answer within %s", s.timeout), true)
}

// fail classifies a keyring error. ErrNotFound is the usual answer and is
// not logged.
func (s *Secrets) fail(ctx context.Context, op, name, value string, err error, timedOut bool) error {
	cause := scrub(err, value)
	c := classify(ctx, cause, timedOut, s.timeout)
	if c.hideCause {
		cause = fmt.Errorf("a %T error, its text withheld because it may quote the value", err)
	}
	e := &opError{op: op, name: name, kind: c.kind, msg: c.msg, cause: cause}
	if c.kind == ErrNotFound {
		e.msg = notFoundMsg(name)
		return e
	}
	s.log.Warn("keyring call failed", "op", op, "secret", name, "service", s.service, "kind", kindName(c.kind), "err", cause)
	return e
}

func kindName(kind error) string {
	if kind == nil {
		return "unknown"
	}
	return kind.Error()
}

// classification is what a platform makes of a keyring error.
type classification struct {
	kind error // a sentinel, or nil for an error we cannot place
	msg  string
	// hideCause drops the low-level error, whose text may quote part of a
	// stored value (a decoding error names the offending byte).
	hideCause bool
}
