//go:build linux

package tests

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// The desktop's side of the D-Bus conversations the GUI has, played by
// the test on the private session bus keyringtest starts:
//
//   - a StatusNotifierWatcher (org.kde.StatusNotifierWatcher), which tray
//     icons (Fyne's systray on Linux) register with; the host that would
//     draw the icon then reads the item's menu over com.canonical.dbusmenu,
//     and so does the test;
//   - a notification server (org.freedesktop.Notifications), which the
//     app's notifications (and Fyne's SendNotification) call on Linux;
//     the test clicks a notification by emitting its ActionInvoked.

// ownName takes a well-known name on conn, failing t if another holds it.
func ownName(t *testing.T, conn *dbus.Conn, name string) {
	t.Helper()
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil {
		t.Fatalf("request %s: %v", name, err)
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("%s is already owned on this bus (reply %d): the test needs it for itself", name, reply)
	}
}

// trayItem is a registered StatusNotifierItem: its bus name and object.
type trayItem struct {
	Service string
	Path    dbus.ObjectPath
}

// watcher is a minimal org.kde.StatusNotifierWatcher.
type watcher struct {
	items chan trayItem
}

// RegisterStatusNotifierItem is what an item calls: with an object path
// (as fyne.io/systray does), the item lives at that path on the caller's
// connection; with a bus name, at /StatusNotifierItem there.
func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	it := trayItem{Service: string(sender), Path: "/StatusNotifierItem"}
	if len(service) > 0 && service[0] == '/' {
		it.Path = dbus.ObjectPath(service)
	} else if service != "" {
		it.Service = service
	}
	select {
	case w.items <- it:
	default:
	}
	return nil
}

// RegisterStatusNotifierHost is part of the interface; hosts are not
// tracked.
func (w *watcher) RegisterStatusNotifierHost(string) *dbus.Error { return nil }

func startWatcher(t *testing.T, conn *dbus.Conn) *watcher {
	t.Helper()
	w := &watcher{items: make(chan trayItem, 16)}
	if err := conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.kde.StatusNotifierWatcher")
	return w
}

// note is one Notify call.
type note struct {
	App, Summary, Body string
	Actions            []string
	ID                 uint32
}

// notifications is a minimal org.freedesktop.Notifications server.
type notifications struct {
	conn  *dbus.Conn
	mu    sync.Mutex
	notes []note
	added chan struct{}
	id    uint32
}

// Notify records a notification and returns its id.
func (n *notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	n.id++
	id := n.id
	n.notes = append(n.notes, note{App: app, Summary: summary, Body: body, Actions: actions, ID: id})
	n.mu.Unlock()
	select {
	case n.added <- struct{}{}:
	default:
	}
	return id, nil
}

// GetCapabilities says the server shows a body and actions.
func (n *notifications) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"body", "actions"}, nil
}

// click is the person clicking notification x: the server says its
// default action was invoked.
func (n *notifications) click(t *testing.T, x note) {
	t.Helper()
	if len(x.Actions) < 2 || x.Actions[0] != "default" {
		t.Fatalf("notification %+v has no default action to click", x)
	}
	if err := n.conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", x.ID, "default"); err != nil {
		t.Fatal(err)
	}
}

// GetServerInformation names the server.
func (n *notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "sandbar-tests", "sandbar", "1", "1.2", nil
}

// CloseNotification is accepted and ignored.
func (n *notifications) CloseNotification(uint32) *dbus.Error { return nil }

func startNotifications(t *testing.T, conn *dbus.Conn) *notifications {
	t.Helper()
	n := &notifications{conn: conn, added: make(chan struct{}, 1)}
	if err := conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.freedesktop.Notifications")
	return n
}

// wait returns the first notification whose summary is summary, failing
// t after d.
func (n *notifications) wait(t *testing.T, summary string, d time.Duration) note {
	t.Helper()
	return n.waitNth(t, summary, 1, d)
}

// waitNth waits for the nth notification titled summary and returns it.
func (n *notifications) waitNth(t *testing.T, summary string, nth int, d time.Duration) note {
	t.Helper()
	deadline := time.After(d)
	for {
		n.mu.Lock()
		notes := append([]note(nil), n.notes...)
		n.mu.Unlock()
		seen := 0
		for _, x := range notes {
			if x.Summary == summary {
				if seen++; seen == nth {
					return x
				}
			}
		}
		select {
		case <-n.added:
		case <-deadline:
			t.Fatalf("no notification %q within %s; got %+v", summary, d, notes)
		}
	}
}

// menuNode is one com.canonical.dbusmenu layout node.
type menuNode struct {
	ID       int32
	Label    string
	Enabled  bool
	Children []menuNode
}

func (m menuNode) labels() []string {
	var out []string
	for _, c := range m.Children {
		if c.Label != "" {
			out = append(out, c.Label)
		}
	}
	return out
}

func (m menuNode) find(label string) (menuNode, bool) {
	for _, c := range m.Children {
		if c.Label == label {
			return c, true
		}
		if x, ok := c.find(label); ok {
			return x, true
		}
	}
	return menuNode{}, false
}

// parseLayout reads a (ia{sv}av) layout as godbus decodes it.
func parseLayout(v any) (menuNode, error) {
	fields, ok := v.([]any)
	if !ok || len(fields) != 3 {
		return menuNode{}, fmt.Errorf("layout node is %T, want a 3-field struct", v)
	}
	var n menuNode
	n.ID, _ = fields[0].(int32)
	props, _ := fields[1].(map[string]dbus.Variant)
	n.Enabled = true
	if l, ok := props["label"]; ok {
		n.Label, _ = l.Value().(string)
	}
	if e, ok := props["enabled"]; ok {
		n.Enabled, _ = e.Value().(bool)
	}
	kids, _ := fields[2].([]dbus.Variant)
	for _, k := range kids {
		c, err := parseLayout(k.Value())
		if err != nil {
			return n, err
		}
		n.Children = append(n.Children, c)
	}
	return n, nil
}

// trayMenu reads the item's whole menu: its Menu property, then
// com.canonical.dbusmenu.GetLayout from the root.
func trayMenu(conn *dbus.Conn, it trayItem) (menuNode, dbus.BusObject, error) {
	item := conn.Object(it.Service, it.Path)
	v, err := item.GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		return menuNode{}, nil, fmt.Errorf("read the item's Menu property: %w", err)
	}
	path, ok := v.Value().(dbus.ObjectPath)
	if !ok {
		return menuNode{}, nil, fmt.Errorf("the item's Menu is a %T, want an object path", v.Value())
	}
	menu := conn.Object(it.Service, path)
	call := menu.Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if call.Err != nil {
		return menuNode{}, nil, fmt.Errorf("GetLayout: %w", call.Err)
	}
	if len(call.Body) != 2 {
		return menuNode{}, nil, fmt.Errorf("GetLayout returned %d values, want 2", len(call.Body))
	}
	root, err := parseLayout(call.Body[1])
	return root, menu, err
}

// trayIcon reads the item's icon: its IconPixmap property, the first
// (width, height, ARGB bytes) it holds.
func trayIcon(conn *dbus.Conn, it trayItem) (w, h int32, argb []byte, err error) {
	v, err := conn.Object(it.Service, it.Path).GetProperty("org.kde.StatusNotifierItem.IconPixmap")
	if err != nil {
		return 0, 0, nil, fmt.Errorf("read the item's IconPixmap: %w", err)
	}
	var pixmaps []struct {
		W, H int32
		Pix  []byte
	}
	if err := dbus.Store([]any{v.Value()}, &pixmaps); err != nil {
		return 0, 0, nil, fmt.Errorf("IconPixmap is a %T: %w", v.Value(), err)
	}
	if len(pixmaps) == 0 {
		return 0, 0, nil, fmt.Errorf("the item has no icon")
	}
	return pixmaps[0].W, pixmaps[0].H, pixmaps[0].Pix, nil
}

// click sends a dbusmenu "clicked" event to item id, as a tray host does.
func click(menu dbus.BusObject, id int32) error {
	return menu.Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(""), uint32(time.Now().Unix())).Err
}
