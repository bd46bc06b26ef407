package desktop

import (
	"context"
	"time"

	"github.com/godbus/dbus/v5"
)

// TrayHost reports whether the desktop shows tray icons: on Linux, a
// StatusNotifierWatcher on the session bus (KDE, Xfce, GNOME with the
// AppIndicator extension...). Without one a tray icon is never seen, and
// an app kept alive by it, its windows closed, could not be reached.
func TrayHost() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := dbus.ConnectSessionBus(dbus.WithContext(ctx))
	if err != nil {
		return false
	}
	defer conn.Close()
	var owned bool
	err = conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&owned)
	return err == nil && owned
}

// PrepareMenuBarApp: a Linux desktop needs nothing before the window
// system starts (see the macOS version).
func PrepareMenuBarApp() {}

// MenuBarApp: nothing to do on Linux, where the tray's Quit and SIGTERM
// (main's context) quit the app; quit is not needed.
func MenuBarApp(quit func()) error { return nil }
