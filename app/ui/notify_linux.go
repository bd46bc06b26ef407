//go:build linux

package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// The freedesktop Desktop Notifications service.
const (
	notifyService = "org.freedesktop.Notifications"
	notifyPath    = dbus.ObjectPath("/org/freedesktop/Notifications")
	// notifyDefault is the action a server invokes when the notification
	// itself is clicked.
	notifyDefault = "default"
	// notifyKeep is how many sent notifications are remembered for a
	// click; servers keep fewer on screen.
	notifyKeep = 256
)

// dbusNotifier sends notifications to the desktop's notification server
// with a default action, and opens a notification's session when the
// server says it was invoked (its ActionInvoked signal).
type dbusNotifier struct {
	conn    *dbus.Conn
	server  dbus.BusObject
	entry   string // the desktop entry (the app's id), for the server's icon and grouping
	markup  bool   // the server reads bodies as markup
	open    func(session string)
	signals chan *dbus.Signal
	done    chan struct{}

	mu   sync.Mutex
	sent map[uint32]string // notification id → session id
	ids  []uint32          // sent's keys, oldest first
}

// newDesktopNotifier connects to the session bus and its notification
// server; an error means there is none to reach.
func newDesktopNotifier(appID string, open func(session string)) (desktopNotifier, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("connect to the D-Bus session bus: %w", err)
	}
	d, err := newDBusNotifier(conn, appID, open)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return d, nil
}

// newDBusNotifier uses conn, which it closes on Close.
func newDBusNotifier(conn *dbus.Conn, appID string, open func(session string)) (*dbusNotifier, error) {
	server := conn.Object(notifyService, notifyPath)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var caps []string
	if err := server.CallWithContext(ctx, notifyService+".GetCapabilities", 0).Store(&caps); err != nil {
		return nil, fmt.Errorf("no notification server on the session bus: %w", err)
	}
	err := conn.AddMatchSignal(dbus.WithMatchSender(notifyService), dbus.WithMatchObjectPath(notifyPath),
		dbus.WithMatchInterface(notifyService))
	if err != nil {
		return nil, fmt.Errorf("listen to the notification server: %w", err)
	}
	d := &dbusNotifier{conn: conn, server: server, entry: appID, markup: slices.Contains(caps, "body-markup"), open: open,
		signals: make(chan *dbus.Signal, 16), done: make(chan struct{}), sent: map[uint32]string{}}
	conn.Signal(d.signals)
	go d.listen()
	return d, nil
}

// Notify implements desktopNotifier.
func (d *dbusNotifier) Notify(n sessionNote) error {
	body := n.Body
	if d.markup {
		body = markupEscaper.Replace(body)
	}
	hints := map[string]dbus.Variant{}
	if d.entry != "" {
		hints["desktop-entry"] = dbus.MakeVariant(d.entry)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var id uint32
	err := d.server.CallWithContext(ctx, notifyService+".Notify", 0,
		notifyAppName, uint32(0), "", n.Title, body, []string{notifyDefault, "Open"}, hints, int32(-1)).Store(&id)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	d.mu.Lock()
	d.sent[id] = n.Session
	d.ids = append(d.ids, id)
	if len(d.ids) > notifyKeep {
		delete(d.sent, d.ids[0])
		d.ids = d.ids[1:]
	}
	d.mu.Unlock()
	return nil
}

// markupEscaper escapes what a server reading markup would take for it.
var markupEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// listen opens the session of each notification the person clicks,
// until the connection closes (which closes signals).
func (d *dbusNotifier) listen() {
	defer close(d.done)
	for sig := range d.signals {
		if sig.Path != notifyPath || sig.Name != notifyService+".ActionInvoked" || len(sig.Body) != 2 {
			continue
		}
		id, _ := sig.Body[0].(uint32)
		action, _ := sig.Body[1].(string)
		if action != notifyDefault {
			continue
		}
		d.mu.Lock()
		session, ok := d.sent[id]
		d.mu.Unlock()
		if ok {
			d.open(session)
		}
	}
}

// Close implements desktopNotifier: it ends the listening and closes the
// connection.
func (d *dbusNotifier) Close() error {
	err := d.conn.Close()
	<-d.done
	return err
}
