package secrets

import (
	"context"
	"strings"

	"github.com/zalando/go-keyring"
)

// InternalPrefix starts the names of Sandbar's own keyring items (its CA,
// say). Such a name is never a valid secret name (see ValidName), so a
// person's secret cannot collide with one, and none is ever listed or
// given to a session.
const InternalPrefix = "sandbar-"

// Internal is the keyring as Sandbar keeps its own items in it: the same
// service, timeouts and errors as Secrets, for names that start with
// InternalPrefix.
type Internal struct{ s *Secrets }

// Internal returns the keyring for Sandbar's own items.
func (s *Secrets) Internal() Internal { return Internal{s} }

// Get returns an item's value; an error wrapping ErrNotFound when there is
// none.
func (i Internal) Get(ctx context.Context, name string) (string, error) {
	if err := checkInternal("get", name); err != nil {
		return "", err
	}
	return i.s.call(ctx, "get", name, "", func() (string, error) {
		return keyring.Get(i.s.service, name)
	})
}

// Set stores an item's value, replacing any earlier one.
func (i Internal) Set(ctx context.Context, name, value string) error {
	if err := checkInternal("set", name); err != nil {
		return err
	}
	if err := checkValue(name, value, maxValueLen(i.s.service, name)); err != nil {
		return err
	}
	_, err := i.s.call(ctx, "set", name, value, func() (string, error) {
		return "", keyring.Set(i.s.service, name, value)
	})
	return err
}

func checkInternal(op, name string) error {
	if !strings.HasPrefix(name, InternalPrefix) || len(name) > MaxNameLen || ValidName(name) {
		return &opError{op: op, kind: ErrBadName, msg: "not a name of Sandbar's own keyring items: they start with " + InternalPrefix}
	}
	return nil
}
