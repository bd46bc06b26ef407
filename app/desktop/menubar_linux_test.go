package desktop

import (
	"testing"

	"github.com/godbus/dbus/v5"

	"sandbar/app/desktop/desktoptest"
)

// TestTrayHost: on a session bus with no StatusNotifierWatcher there is
// no tray host (the app then quits with its last window); once a process
// owns that name there is; with no session bus at all there is none.
func TestTrayHost(t *testing.T) {
	addr := desktoptest.Bus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	if TrayHost() {
		t.Fatal("TrayHost() = true on a bus with no StatusNotifierWatcher")
	}

	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reply, err := conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.kde.StatusNotifierWatcher: reply %v, %v", reply, err)
	}
	if !TrayHost() {
		t.Fatal("TrayHost() = false while org.kde.StatusNotifierWatcher has an owner")
	}

	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+t.TempDir()+"/none")
	if TrayHost() {
		t.Fatal("TrayHost() = true with no session bus to ask")
	}
}
