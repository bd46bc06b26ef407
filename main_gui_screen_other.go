//go:build !linux && !darwin

package main

import "fyne.io/fyne/v2"

// screenSize: unknown on this system; windows are bounded by the UI's
// own maximum.
func screenSize() fyne.Size { return fyne.Size{} }
