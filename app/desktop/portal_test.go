package desktop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"sandbar/app/desktop/desktoptest"
)

// connect dials the bus at addr, as Portal.Connect: the connection
// lives as long as ctx.
func connect(addr string) func(context.Context) (*dbus.Conn, error) {
	return func(ctx context.Context) (*dbus.Conn, error) {
		return dbus.Connect(addr, dbus.WithContext(ctx))
	}
}

// openCall is one OpenFile call the fake portal took.
type openCall struct {
	title  string
	opts   map[string]dbus.Variant
	handle dbus.ObjectPath
}

// fakePortal owns org.freedesktop.portal.Desktop on a test bus and
// answers OpenFile the way xdg-desktop-portal does: it replies with the
// request's path, made from the caller's unique name and handle_token,
// then emits Response on it. respond says what the Response carries
// (nil: none, the request waits); hang makes OpenFile never reply.
type fakePortal struct {
	conn    *dbus.Conn
	respond func(openCall) (uint32, map[string]dbus.Variant)
	hang    chan struct{}
	calls   chan openCall
	closed  chan dbus.ObjectPath
}

func startFakePortal(t *testing.T, addr string, respond func(openCall) (uint32, map[string]dbus.Variant), hang chan struct{}) *fakePortal {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &fakePortal{conn: conn, respond: respond, hang: hang, calls: make(chan openCall, 4), closed: make(chan dbus.ObjectPath, 4)}
	if err := conn.Export(f, portalPath, fileChooser); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(portalName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v (%v)", portalName, reply, err)
	}
	return f
}

// OpenFile is the portal's method: (s parent_window, s title, a{sv}
// options) → o handle.
func (f *fakePortal) OpenFile(sender dbus.Sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	if f.hang != nil {
		<-f.hang
	}
	token, _ := opts["handle_token"].Value().(string)
	name := strings.ReplaceAll(strings.TrimPrefix(string(sender), ":"), ".", "_")
	c := openCall{title: title, opts: opts, handle: dbus.ObjectPath(portalPath + "/request/" + name + "/" + token)}
	f.conn.Export(&fakeRequest{path: c.handle, closed: f.closed}, c.handle, portalReqIfc)
	f.calls <- c
	if f.respond != nil {
		code, results := f.respond(c)
		// Sent before the reply, as a quick portal may: the client must
		// already be listening.
		f.conn.Emit(c.handle, portalReqIfc+".Response", code, results)
	}
	return c.handle, nil
}

// fakeRequest is a request object: Close ends its dialog.
type fakeRequest struct {
	path   dbus.ObjectPath
	closed chan dbus.ObjectPath
}

func (r *fakeRequest) Close() *dbus.Error {
	r.closed <- r.path
	return nil
}

func TestPortalChoosesFolder(t *testing.T) {
	addr := desktoptest.Bus(t)
	f := startFakePortal(t, addr, func(openCall) (uint32, map[string]dbus.Variant) {
		return 0, map[string]dbus.Variant{"uris": dbus.MakeVariant([]string{"file:///home/ann/src/my%20notes"})}
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := Portal{Connect: connect(addr)}.ChooseFolder(ctx, "Add a repository")
	if err != nil || got != "/home/ann/src/my notes" {
		t.Fatalf("ChooseFolder = %q, %v; want /home/ann/src/my notes", got, err)
	}
	c := <-f.calls
	if c.title != "Add a repository" {
		t.Errorf("title %q", c.title)
	}
	for _, k := range []string{"directory", "modal"} {
		if v, _ := c.opts[k].Value().(bool); !v {
			t.Errorf("option %s = %v, want true", k, c.opts[k])
		}
	}
	if tok, _ := c.opts["handle_token"].Value().(string); tok == "" {
		t.Error("no handle_token: the client could not know its request's path before the reply")
	}
}

func TestPortalCancel(t *testing.T) {
	addr := desktoptest.Bus(t)
	startFakePortal(t, addr, func(openCall) (uint32, map[string]dbus.Variant) { return 1, map[string]dbus.Variant{} }, nil)
	_, err := Portal{Connect: connect(addr)}.ChooseFolder(context.Background(), "x")
	if !errors.Is(err, ErrCanceled) {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
}

func TestPortalOtherEndIsUnavailable(t *testing.T) {
	addr := desktoptest.Bus(t)
	startFakePortal(t, addr, func(openCall) (uint32, map[string]dbus.Variant) { return 2, map[string]dbus.Variant{} }, nil)
	_, err := Portal{Connect: connect(addr)}.ChooseFolder(context.Background(), "x")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable (the caller falls back)", err)
	}
}

func TestPortalRefusesRemoteURI(t *testing.T) {
	addr := desktoptest.Bus(t)
	startFakePortal(t, addr, func(openCall) (uint32, map[string]dbus.Variant) {
		return 0, map[string]dbus.Variant{"uris": dbus.MakeVariant([]string{"sftp://host/src"})}
	}, nil)
	_, err := Portal{Connect: connect(addr)}.ChooseFolder(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "not a folder on this computer") {
		t.Fatalf("err = %v, want a refusal of a non-local folder", err)
	}
}

// Without a portal the answer comes well within Answer, and says so.
func TestPortalMissing(t *testing.T) {
	addr := desktoptest.Bus(t)
	start := time.Now()
	_, err := Portal{Connect: connect(addr), Answer: 2 * time.Second}.ChooseFolder(context.Background(), "x")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s to find no portal", d)
	}
}

// A portal that takes the call and never replies counts as none once
// Answer has passed.
func TestPortalSilent(t *testing.T) {
	addr := desktoptest.Bus(t)
	hang := make(chan struct{})
	defer close(hang)
	startFakePortal(t, addr, nil, hang)
	start := time.Now()
	_, err := Portal{Connect: connect(addr), Answer: 300 * time.Millisecond}.ChooseFolder(context.Background(), "x")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s, with Answer 300ms", d)
	}
}

func TestPortalNoBus(t *testing.T) {
	_, err := Portal{Connect: func(context.Context) (*dbus.Conn, error) {
		return nil, fmt.Errorf("no DBUS_SESSION_BUS_ADDRESS")
	}}.ChooseFolder(context.Background(), "x")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

// When the caller gives up (its window closed), the dialog is closed.
func TestPortalContextEndClosesDialog(t *testing.T) {
	addr := desktoptest.Bus(t)
	f := startFakePortal(t, addr, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Portal{Connect: connect(addr)}.ChooseFolder(ctx, "x")
		done <- err
	}()
	var c openCall
	select {
	case c = <-f.calls:
	case <-time.After(10 * time.Second):
		t.Fatal("the portal was never called")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	select {
	case p := <-f.closed:
		if p != c.handle {
			t.Errorf("closed %s, want %s", p, c.handle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not closed when the caller gave up")
	}
}
