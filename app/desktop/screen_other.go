//go:build !linux && !darwin

package desktop

import "fyne.io/fyne/v2"

// ScreenSize: unknown on this system; windows are bounded by the UI's
// own maximum.
func ScreenSize() fyne.Size { return fyne.Size{} }
