package main

import "fyne.io/fyne/v2"

// appName is what the desktop calls the app: the tray's title on Linux,
// notifications' sender (FyneApp.toml's Name).
const appName = "Sandbar"

// appMetadata is what FyneApp.toml says of the app. Only `fyne package`
// compiles that file in; a binary of plain `go build` has no metadata, and
// Fyne's tray then titles itself with the app's id, "dev.sandbar.app".
func appMetadata() fyne.AppMetadata {
	return fyne.AppMetadata{ID: appID, Name: appName, Version: version, Build: 1}
}
