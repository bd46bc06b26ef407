//go:build !linux

package main

// trayHost reports whether the desktop shows tray icons: the macOS menu
// bar always does.
func trayHost() bool { return true }
