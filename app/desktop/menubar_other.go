//go:build !linux && !darwin

package desktop

// TrayHost reports whether the desktop shows tray icons: assume it does.
func TrayHost() bool { return true }

// PrepareMenuBarApp: nothing to prepare on this system.
func PrepareMenuBarApp() {}

// MenuBarApp: nothing to do on this system; quit runs only from the tray.
func MenuBarApp(quit func()) error { return nil }
