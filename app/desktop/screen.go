//go:build linux || darwin

package desktop

import (
	"fyne.io/fyne/v2"
	"github.com/go-gl/glfw/v3.4/glfw"
)

// ScreenSize is the primary monitor's work area in Fyne's units, for the
// windows to open no bigger (ui.UI.ScreenSize): its video mode divided by
// its content scale (2 on a Retina Mac, whose points Fyne counts; on
// Linux Fyne finds its own scale from the monitor's DPI, so this is near,
// not exact). It asks GLFW, which Fyne's desktop driver has started, and
// so runs on the UI goroutine only; the zero size when there is no
// monitor to ask.
func ScreenSize() fyne.Size {
	m := glfw.GetPrimaryMonitor()
	if m == nil {
		return fyne.Size{}
	}
	// The work area: the screen less the panels and docks, so that a
	// window opened at the size returned fits beside them.
	_, _, w, h := m.GetWorkarea()
	if w <= 0 || h <= 0 {
		mode := m.GetVideoMode()
		if mode == nil {
			return fyne.Size{}
		}
		w, h = mode.Width, mode.Height
	}
	sx, sy := m.GetContentScale()
	if sx <= 0 || sy <= 0 {
		sx, sy = 1, 1
	}
	return fyne.NewSize(float32(w)/sx, float32(h)/sy)
}
