// Package keyringtest runs a package's tests against a real Secret Service:
// a private D-Bus session (dbus-run-session) with its own gnome-keyring
// daemon, whose login keyring lives in a temporary HOME and is unlocked
// with Password. The person's own keyrings and session bus are never
// touched, and no prompt can appear (DISPLAY and WAYLAND_DISPLAY are unset).
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { keyringtest.Main(m) }
//
// and begin each test that needs the keyring with Require(t). Without
// dbus-run-session and gnome-keyring-daemon those tests skip, saying what
// to install; the rest still run. It is for tests only, and Linux only:
// elsewhere Main just runs the tests and Require skips. It is not a fake
// Secret Service: the tests talk to the real daemon, over the real bus.
package keyringtest

import (
	"os"
	"testing"
)

// Password unlocks the test login keyring.
const Password = "sandbar-test"

const (
	// sessionEnv tells the test binary which process it is: unset in the
	// one go test started, "1" inside the private session, "child" in a
	// process started by RunChild.
	sessionEnv = "SANDBAR_KEYRING_SESSION"
	// restoreEnv carries the variables the session changed (HOME, XDG_*),
	// as JSON, so the tests themselves see the caller's environment.
	restoreEnv = "SANDBAR_KEYRING_RESTORE"
	install    = "install dbus and gnome-keyring (Debian/Ubuntu: apt install dbus gnome-keyring; Fedora: dnf install dbus-daemon gnome-keyring)"
)

// InSession reports whether the tests are running inside the private
// keyring session Main started.
func InSession() bool { return os.Getenv(sessionEnv) == "1" }

// InChild reports whether this process was started by RunChild.
func InChild() bool { return os.Getenv(sessionEnv) == "child" }

// Require skips t unless it runs inside the private keyring session.
func Require(t testing.TB) {
	t.Helper()
	if InSession() {
		return
	}
	if ok, why := Available(); !ok {
		t.Skip("needs a real Secret Service: " + why)
	}
	t.Skip("needs a real Secret Service: call keyringtest.Main from this package's TestMain")
}

// Bus is the D-Bus session a RunChild child gets.
type Bus int

const (
	// SameBus: the child sees the session bus of its parent, unless env
	// points DBUS_SESSION_BUS_ADDRESS elsewhere.
	SameBus Bus = iota
	// EmptyBus: the child runs in a private D-Bus session of its own that
	// offers no services at all: no Secret Service, nothing activatable.
	EmptyBus
)
