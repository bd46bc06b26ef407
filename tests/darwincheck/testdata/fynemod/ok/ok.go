// Package ok uses Fyne the way the menu-bar app does; darwincheck must pass
// it.
package ok

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// Run shows a window and a tray menu.
func Run() {
	a := app.NewWithID("org.sandbar.fixture")
	w := a.NewWindow("Sandbar")
	w.SetContent(widget.NewLabel("idle"))
	if d, ok := a.(desktop.App); ok {
		d.SetSystemTrayMenu(fyne.NewMenu("Sandbar", fyne.NewMenuItem("Start session", func() {})))
	}
	w.ShowAndRun()
}
