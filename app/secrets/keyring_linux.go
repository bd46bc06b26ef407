package secrets

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	dbus "github.com/godbus/dbus/v5"
	"github.com/zalando/go-keyring"
)

// What go-keyring (v0.2.8, secret_service) does on Linux, and so what its
// errors mean:
//
//   - It connects with dbus.SessionBus(), godbus's process-wide shared
//     connection, cached once connected. With no DBUS_SESSION_BUS_ADDRESS
//     (and no /run/user/UID/bus) godbus runs dbus-launch, which starts a
//     stray bus daemon that outlives us; precheck refuses before that. A
//     bus that is not there gives a *net.OpError ("dial unix ...: no such
//     file or directory").
//   - Every Get, Set and Delete first calls Service.Unlock on the "login"
//     collection (or the default alias when there is no login collection).
//     No Secret Service on the bus gives the dbus.Error
//     org.freedesktop.DBus.Error.ServiceUnknown.
//   - When the collection is locked, Unlock returns a prompt and go-keyring
//     waits, with no timeout, for its Completed signal. gnome-keyring asks
//     gcr-prompter to show it; with no display that fails at once and the
//     prompt completes as dismissed, as it does when a person dismisses it.
//     go-keyring ignores "dismissed" and returns the plain error "failed to
//     unlock correct collection '<path>'" (no type to test for, so it is
//     matched by text). The same error comes back when there is no default
//     collection at all, so classify asks the service which it is.
//   - A prompt nobody answers blocks go-keyring for ever: the call times out
//     and classify asks the service whether the collection is locked.
//   - A missing item is keyring.ErrNotFound.

const (
	secretsName     = "org.freedesktop.secrets"
	secretsPath     = "/org/freedesktop/secrets"
	loginCollection = "/org/freedesktop/secrets/collection/login"
	defaultAlias    = "/org/freedesktop/secrets/aliases/default"
	// probeTimeout bounds the question classify asks after a failure, so a
	// call returns within its timeout plus this.
	probeTimeout = 2 * time.Second
)

const (
	msgLocked      = "the Secret Service keyring is locked: unlock it (e.g. in Passwords and Keys / Seahorse) and retry"
	msgUnavailable = "no Secret Service is running: start gnome-keyring (or KWallet) in your session, then retry"
	msgNoKeyring   = "the Secret Service has no default keyring: create one (e.g. in Passwords and Keys / Seahorse), then retry"
)

// maxValueLen is the largest value the Secret Service is asked to hold.
func maxValueLen(service, name string) int { return MaxValueLen }

// precheck refuses to let godbus autolaunch a session bus. It reads the
// same variable godbus reads, for the same purpose.
func precheck() error {
	if addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); addr != "" && addr != "autolaunch:" {
		return nil
	}
	run := "/run/user/" + strconv.Itoa(os.Getuid())
	for _, f := range []string{"bus", "dbus-session"} {
		if _, err := os.Stat(run + "/" + f); err == nil {
			return nil
		}
	}
	return errNoBus
}

var errNoBus = errors.New("no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set")

func classify(ctx context.Context, err error, timedOut bool, timeout time.Duration) classification {
	locked := classification{kind: ErrLocked, msg: msgLocked}
	unavailable := classification{kind: ErrUnavailable, msg: msgUnavailable}
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		return classification{kind: ErrNotFound}
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return classification{kind: ErrBadValue, msg: "the value is too large for the keyring"}
	case errors.Is(err, errNoBus):
		return unavailable
	case timedOut, strings.HasPrefix(err.Error(), "failed to unlock correct collection"):
		switch probe(ctx, timeout) {
		case stateLocked:
			return locked
		case stateNoCollection:
			return classification{kind: ErrUnavailable, msg: msgNoKeyring}
		case stateUnlocked:
			if timedOut {
				return classification{kind: ErrUnavailable,
					msg: "the Secret Service did not answer within " + timeout.String() + ": restart gnome-keyring (or KWallet) in your session, then retry"}
			}
			// Unlock failed though the collection is open now: a prompt
			// was dismissed and the keyring unlocked since. Retrying works.
			return locked
		default:
			return unavailable
		}
	}
	var de dbus.Error
	if errors.As(err, &de) || asDBusErrorPtr(err, &de) {
		switch {
		case de.Name == "org.freedesktop.Secret.Error.IsLocked":
			return locked
		case de.Name == "org.freedesktop.Secret.Error.NoSuchObject",
			de.Name == "org.freedesktop.DBus.Error.UnknownObject":
			if probe(ctx, timeout) == stateLocked {
				return locked
			}
			return classification{kind: ErrUnavailable, msg: msgNoKeyring}
		case strings.HasPrefix(de.Name, "org.freedesktop.DBus.Error."):
			// ServiceUnknown, NameHasNoOwner, Spawn.*, NoReply, Timeout,
			// Disconnected, AccessDenied...: nothing usable answers.
			return unavailable
		}
		return classification{msg: "the Secret Service refused (" + de.Name + "): retry, or restart gnome-keyring (or KWallet)"}
	}
	// Everything else comes from reaching the bus: dial, auth, a closed
	// connection.
	return unavailable
}

func asDBusErrorPtr(err error, de *dbus.Error) bool {
	var p *dbus.Error
	if errors.As(err, &p) && p != nil {
		*de = *p
		return true
	}
	return false
}

type collectionState int

const (
	stateUnknown collectionState = iota // the service could not be asked
	stateLocked
	stateUnlocked
	stateNoCollection
)

// probe asks the Secret Service, on a private connection of its own (the
// shared one may be stuck behind an abandoned call), whether the collection
// go-keyring uses is locked. It takes at most probeTimeout, or the call
// timeout if that is shorter.
func probe(ctx context.Context, timeout time.Duration) collectionState {
	if precheck() != nil {
		return stateUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, min(probeTimeout, timeout))
	defer cancel()
	conn, err := dbus.ConnectSessionBus(dbus.WithContext(ctx))
	if err != nil {
		return stateUnknown
	}
	defer conn.Close()
	var owned bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, secretsName).Store(&owned); err != nil || !owned {
		return stateUnknown
	}
	// go-keyring uses the login collection when the service lists one,
	// else the default alias.
	path := dbus.ObjectPath(defaultAlias)
	var cols dbus.Variant
	if err := conn.Object(secretsName, secretsPath).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.Secret.Service", "Collections").Store(&cols); err == nil {
		if paths, ok := cols.Value().([]dbus.ObjectPath); ok {
			for _, p := range paths {
				if p == loginCollection {
					path = loginCollection
				}
			}
		}
	}
	var locked dbus.Variant
	err = conn.Object(secretsName, path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.Secret.Collection", "Locked").Store(&locked)
	var de dbus.Error
	switch {
	case errors.As(err, &de) && (de.Name == "org.freedesktop.DBus.Error.UnknownMethod" ||
		de.Name == "org.freedesktop.DBus.Error.UnknownObject" ||
		de.Name == "org.freedesktop.Secret.Error.NoSuchObject"):
		// gnome-keyring answers UnknownMethod, "Object does not exist at
		// path", for an alias that points nowhere.
		return stateNoCollection
	case err != nil:
		return stateUnknown
	}
	if b, ok := locked.Value().(bool); ok && b {
		return stateLocked
	}
	return stateUnlocked
}
