//go:build linux

package ui

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"github.com/godbus/dbus/v5"

	"sandbar/app/desktop/desktoptest"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// connect opens a connection to the bus at addr.
func connect(t *testing.T, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// fakeNotifyServer plays the desktop's notification server.
type fakeNotifyServer struct {
	conn  *dbus.Conn
	caps  []string
	mu    sync.Mutex
	calls []notifyCall
	added chan struct{}
}

type notifyCall struct {
	App, Summary, Body string
	Actions            []string
	Hints              map[string]dbus.Variant
	ID                 uint32
}

func (s *fakeNotifyServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	id := uint32(len(s.calls) + 41)
	s.calls = append(s.calls, notifyCall{App: app, Summary: summary, Body: body, Actions: actions, Hints: hints, ID: id})
	s.mu.Unlock()
	s.added <- struct{}{}
	return id, nil
}

func (s *fakeNotifyServer) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

// invoke is the person clicking notification id.
func (s *fakeNotifyServer) invoke(t *testing.T, id uint32, action string) {
	t.Helper()
	if err := s.conn.Emit(notifyPath, notifyService+".ActionInvoked", id, action); err != nil {
		t.Fatal(err)
	}
}

func startFakeNotifyServer(t *testing.T, addr string, caps ...string) *fakeNotifyServer {
	t.Helper()
	s := &fakeNotifyServer{conn: connect(t, addr), caps: caps, added: make(chan struct{}, 16)}
	if err := s.conn.Export(s, notifyPath, notifyService); err != nil {
		t.Fatal(err)
	}
	if r, err := s.conn.RequestName(notifyService, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v, %v", notifyService, r, err)
	}
	return s
}

// TestDBusNotifications: against a notification server on a private
// bus, a notification carries the title and what happened, where the
// session works, a default action and the app's desktop entry; clicking
// it opens its session, and only its own; with no server, there is no
// notifier (Fyne's notifications are used).
func TestDBusNotifications(t *testing.T) {
	addr := desktoptest.Bus(t)

	if _, err := newDBusNotifier(connect(t, addr), "dev.sandbar.app", func(string) {}); err == nil {
		t.Fatal("a notifier was made with no notification server on the bus")
	}

	srv := startFakeNotifyServer(t, addr, "body", "actions", "body-markup")
	opened := make(chan string, 4)
	d, err := newDBusNotifier(connect(t, addr), "dev.sandbar.app", func(id string) { opened <- id })
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []sessionNote{
		{Session: "s1", Title: "Fix the login bug — finished", Body: "shop & co · sandbar/s1"},
		{Session: "s2", Title: "Tidy <docs> — failed: the API key was refused", Body: "shop & co · sandbar/s2"},
	} {
		if err := d.Notify(n); err != nil {
			t.Fatal(err)
		}
		<-srv.added
	}
	srv.mu.Lock()
	calls := append([]notifyCall(nil), srv.calls...)
	srv.mu.Unlock()
	first := calls[0]
	if first.App != "Sandbar" || first.Summary != "Fix the login bug — finished" || first.Body != "shop &amp; co · sandbar/s1" {
		t.Errorf("notification %+v: want Sandbar's, the title and what happened, then where (escaped for a markup server)", first)
	}
	if len(first.Actions) != 2 || first.Actions[0] != "default" {
		t.Errorf("actions %q, want the default action", first.Actions)
	}
	if e, ok := first.Hints["desktop-entry"]; !ok || e.Value() != "dev.sandbar.app" {
		t.Errorf("hints %v, want the desktop entry", first.Hints)
	}
	if calls[1].Summary != "Tidy <docs> — failed: the API key was refused" {
		t.Errorf("the summary, which is never markup, was changed: %q", calls[1].Summary)
	}

	// Another action, and an id the notifier did not send, open nothing;
	// the default action of the second opens its session.
	srv.invoke(t, calls[0].ID, "snooze")
	srv.invoke(t, 999, "default")
	srv.invoke(t, calls[1].ID, "default")
	select {
	case id := <-opened:
		if id != "s2" {
			t.Errorf("clicking the second notification opened %q, want s2", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("clicking a notification opened nothing within 10 s")
	}
	// Signals arrive in the order sent: the two before were read, and
	// opened nothing, before this one.
	if len(opened) != 0 {
		t.Errorf("%q opened too", <-opened)
	}
	if err := d.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestNotificationClickIsSeen: clicking the desktop notification of a
// session that finished opens the session and, as Open in the tray
// does, clears it from what the tray says needs the person.
func TestNotificationClickIsSeen(t *testing.T) {
	addr := desktoptest.Bus(t)
	srv := startFakeNotifyServer(t, addr, "body", "actions")
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	h := newAppHarness(t)
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	ft := &fakeTray{}
	tray := h.u.StartTray(ft, TrayOptions{Tick: time.Hour})
	defer tray.Stop()
	n := h.u.StartNotifications(nil)
	defer n.Stop()
	if n.desktop == nil {
		t.Fatal("the notifications do not go to the notification server on the test's bus")
	}

	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: h.env.Repo(t, "shop"), Agent: sessiontest.Shell("true")})
	if err != nil {
		t.Fatal(err)
	}
	waitTray(t, h, ft, "the finished session needing the person", func(m *fyne.Menu, _ fyne.Resource) bool {
		return trayLabels(m)[0] == "No sessions running · 1 needs you"
	})
	// The person clicks the notification once it is up: once the
	// notifier has the server's id for it.
	d := n.desktop.(*dbusNotifier)
	var id uint32
	h.q.WaitFor(t, 30*time.Second, "the notification that the session finished", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for k, v := range d.sent {
			if v == s.ID {
				id = k
				return true
			}
		}
		return false
	})
	srv.mu.Lock()
	i := slices.IndexFunc(srv.calls, func(c notifyCall) bool { return c.ID == id })
	if i < 0 || srv.calls[i].Summary != "true — finished" {
		t.Errorf("the session's notification is not the one saying it finished: %+v", srv.calls)
	}
	srv.mu.Unlock()

	srv.invoke(t, id, "default")
	waitTray(t, h, ft, "no session needing the person once the notification was clicked", func(m *fyne.Menu, _ fyne.Resource) bool {
		return trayLabels(m)[0] == "No sessions running"
	})
	if !slices.Equal(opened, []string{s.ID}) {
		t.Errorf("the click opened %q, want %s", opened, s.ID)
	}
}
