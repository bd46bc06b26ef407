//go:build !linux && !darwin

package main

// trayHost reports whether the desktop shows tray icons: assume it does.
func trayHost() bool { return true }

// prepareMenuBarApp: nothing to prepare on this system.
func prepareMenuBarApp() {}

// menuBarApp: nothing to do on this system; quit runs only from the tray.
func menuBarApp(quit func()) error { return nil }
