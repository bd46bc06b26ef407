//go:build !linux

package keyringtest

import (
	"errors"
	"os"
	"testing"
)

var errNotLinux = errors.New("keyringtest runs gnome-keyring, which needs Linux")

// Main runs the tests; only on Linux does it start a keyring session.
func Main(m *testing.M) { os.Exit(m.Run()) }

// Available reports false: the private keyring session needs Linux.
func Available() (bool, string) { return false, errNotLinux.Error() }

// Lock is not available off Linux.
func Lock() error { return errNotLinux }

// Unlock is not available off Linux.
func Unlock() error { return errNotLinux }

// RunChild skips t off Linux.
func RunChild(t *testing.T, bus Bus, env ...string) { t.Skip(errNotLinux.Error()) }

// StallPrompts skips t off Linux.
func StallPrompts(t testing.TB) (release func()) {
	t.Skip(errNotLinux.Error())
	return func() {}
}
