package secrets

import (
	"errors"
	"strings"
)

// The kinds of failure, checked with errors.Is. The error a call returns
// says more, in words a person can act on.
var (
	// ErrNotFound: the keyring holds no secret by that name.
	ErrNotFound = errors.New("secret not found")
	// ErrLocked: the keyring is locked, or the prompt to unlock it was
	// dismissed or could not be shown.
	ErrLocked = errors.New("keyring is locked")
	// ErrUnavailable: there is no keyring to talk to (no D-Bus session, no
	// Secret Service, no default keyring) or it did not answer in time.
	ErrUnavailable = errors.New("keyring is unavailable")
	// ErrBadName: the name is not one a secret may have (see ValidName).
	ErrBadName = errors.New("invalid secret name")
	// ErrBadValue: the value is empty, holds a NUL byte or is too large.
	ErrBadValue = errors.New("invalid secret value")
)

// opError is every error a keyring operation returns. Its message is built
// only from the operation, the (valid) name and fixed text, never from the
// value or from text the keyring sent back; the low-level cause stays
// reachable through Unwrap for errors.As and is logged, after being checked
// for the value.
type opError struct {
	op    string // "get", "set", "delete", "check"
	name  string
	kind  error // one of the sentinels, or nil when unclassified
	msg   string
	cause error
}

func (e *opError) Error() string {
	if e.kind == ErrNotFound {
		// Already names the secret and says what to do.
		return e.msg
	}
	var b strings.Builder
	b.WriteString(e.op)
	if e.name != "" {
		b.WriteString(" secret ")
		b.WriteString(e.name)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

func (e *opError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// notFoundMsg is the message for a missing secret.
func notFoundMsg(name string) string {
	return "no secret " + name + ": set it with `sandbar secrets set " + name + "`"
}

// scrubbedError stands in for a low-level error whose text contained the
// value: it keeps the text with the value cut out, and nothing that could
// be unwrapped to reach the original.
type scrubbedError struct{ text string }

func (e *scrubbedError) Error() string { return e.text }

// scrub returns err unchanged unless its text (or any error it wraps)
// contains value, in which case it returns a stand-in with every
// occurrence replaced. No error this package builds itself contains a
// value; this guards the text of causes we do not control.
func scrub(err error, value string) error {
	if err == nil || value == "" || !chainContains(err, value) {
		return err
	}
	return &scrubbedError{text: strings.ReplaceAll(err.Error(), value, "[redacted]")}
}

// chainContains reports whether the text of err, or of any error in its
// tree, contains s.
func chainContains(err error, s string) bool {
	if err == nil {
		return false
	}
	if strings.Contains(err.Error(), s) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return chainContains(u.Unwrap(), s)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if chainContains(e, s) {
				return true
			}
		}
	}
	return false
}
