package keyringtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	dbus "github.com/godbus/dbus/v5"
)

func isLocked(ctx context.Context, conn *dbus.Conn) (bool, error) {
	var v dbus.Variant
	err := conn.Object(secretsName, loginCollection).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.Secret.Collection", "Locked").Store(&v)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("Locked is a %s", v.Signature())
	}
	return b, nil
}

// connect opens a private connection to the session's bus, for Lock and
// Unlock: go-keyring's shared one is left alone.
func connect(ctx context.Context) (*dbus.Conn, error) {
	if !InSession() {
		return nil, errors.New("not inside a keyringtest session: call keyringtest.Main from TestMain, and Require(t)")
	}
	return dbus.ConnectSessionBus(dbus.WithContext(ctx))
}

// Lock locks the default keyring (org.freedesktop.Secret.Service.Lock on
// the default alias), as a screen lock or the person would.
func Lock() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	err = conn.Object(secretsName, secretsPath).CallWithContext(ctx, "org.freedesktop.Secret.Service.Lock", 0,
		[]dbus.ObjectPath{defaultAlias}).Store(&locked, &prompt)
	if err != nil {
		return fmt.Errorf("lock the keyring: %w", err)
	}
	if prompt != "/" {
		return fmt.Errorf("lock the keyring: the service wants a prompt (%s)", prompt)
	}
	if l, err := isLocked(ctx, conn); err != nil || !l {
		return fmt.Errorf("lock the keyring: still unlocked (%v)", err)
	}
	return nil
}

// Unlock unlocks the login keyring with Password, through gnome-keyring's
// own interface for that (the standard Unlock needs a prompt, which cannot
// be shown here).
func Unlock() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	svc := conn.Object(secretsName, secretsPath)
	var out dbus.Variant
	var session dbus.ObjectPath
	if err := svc.CallWithContext(ctx, "org.freedesktop.Secret.Service.OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		return fmt.Errorf("unlock the keyring: open a session: %w", err)
	}
	defer conn.Object(secretsName, session).CallWithContext(ctx, "org.freedesktop.Secret.Session.Close", 0)
	secret := struct {
		Session     dbus.ObjectPath
		Parameters  []byte
		Value       []byte
		ContentType string
	}{session, []byte{}, []byte(Password), "text/plain"}
	if err := svc.CallWithContext(ctx, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.UnlockWithMasterPassword", 0,
		dbus.ObjectPath(loginCollection), secret).Err; err != nil {
		return fmt.Errorf("unlock the keyring: %w", err)
	}
	if l, err := isLocked(ctx, conn); err != nil || l {
		return fmt.Errorf("unlock the keyring: still locked (%v)", err)
	}
	return nil
}

// StallPrompts stands in for the desktop's prompter (the bus name
// org.gnome.keyring.SystemPrompter, which gcr-prompter normally provides)
// and never shows anything: gnome-keyring's unlock prompt then waits, like
// a dialog a person walked away from. The returned function stops it,
// after which gnome-keyring gives the prompt up; it also runs when t ends.
func StallPrompts(t testing.TB) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The connection outlives ctx, so it is made without it.
	conn.Close()
	conn, err = dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(stallingPrompter{}, "/org/gnome/keyring/Prompter", "org.gnome.keyring.internal.Prompter"); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.gnome.keyring.SystemPrompter", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		conn.Close()
		t.Fatalf("own org.gnome.keyring.SystemPrompter: reply %v, %v", reply, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { conn.Close() }) }
	t.Cleanup(release)
	return release
}

// stallingPrompter accepts every request of gcr's prompter protocol and
// never calls back with PromptReady.
type stallingPrompter struct{}

func (stallingPrompter) BeginPrompting(callback dbus.ObjectPath) *dbus.Error { return nil }

func (stallingPrompter) PerformPrompt(callback dbus.ObjectPath, kind string, properties map[string]dbus.Variant, exchange string) *dbus.Error {
	return nil
}

func (stallingPrompter) StopPrompting(callback dbus.ObjectPath) *dbus.Error { return nil }
