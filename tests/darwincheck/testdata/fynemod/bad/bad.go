// Package bad misuses Fyne; darwincheck must fail it.
package bad

import (
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/widget"
)

// Run passes a number where a label's text belongs.
func Run() {
	w := app.New().NewWindow("Sandbar")
	w.SetContent(widget.NewLabel(3))
	w.ShowAndRun()
}
