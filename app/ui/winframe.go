package ui

import (
	"time"

	"fyne.io/fyne/v2"
)

// Window sizes.
//
// Fyne's desktop driver grows a window whenever its content's minimum
// size exceeds it (and never shrinks it back), so one label that does not
// truncate, one TextGrid that does not scroll, or one row of a long line
// in a container that is not a Scroll is enough to push a window off the
// screen. The panes themselves are built so that long content scrolls or
// truncates (the shape tests check each); the frame below is the guard
// for whatever a pane gets wrong: a window's content asks the window for
// at most the size the window opens at, and is laid out in whatever size
// the window has.
//
// What is remembered: each kind of window's size, in the app's
// preferences, saved a moment after a resize settles. What is not:
// positions. Fyne has no way to read a window's position on any driver
// (desktop.Window.RequestPosition only sets one, and Wayland ignores even
// that), so windows open where the window manager puts them. The size is
// clamped to the screen when the app can tell the screen's size
// (UI.ScreenSize, which main sets from GLFW's primary monitor), else to
// maxWindowSize.

// Window kinds: the key each kind's size is remembered under.
const (
	winMain            = "main"
	winNewSession      = "newsession"
	winSettings        = "settings"
	winFirstRun        = "firstrun"
	winProjectSettings = "projectsettings"
	winSession         = "session"
)

const (
	// maxWindowSize bounds a window when the screen's size is unknown.
	maxWindowSize = 1920
	maxWindowH    = 1200
	// minRememberedSize is the smallest size worth remembering: below it a
	// window was being closed or minimised, not sized.
	minRememberedSize = 200
	// sizeSaveDelay is how long a window's size must hold before it is
	// saved: a drag resizes it many times a second.
	sizeSaveDelay = 500 * time.Millisecond
)

// windowFrame lays a window's one content object out at the window's
// size, asks the window for no more than limit, and reports each new
// size to resized.
type windowFrame struct {
	limit   fyne.Size
	resized func(fyne.Size)
	last    fyne.Size
}

func (f *windowFrame) MinSize(objects []fyne.CanvasObject) fyne.Size {
	if len(objects) == 0 {
		return fyne.Size{}
	}
	ms := objects[0].MinSize()
	return fyne.NewSize(min(ms.Width, f.limit.Width), min(ms.Height, f.limit.Height))
}

func (f *windowFrame) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objects {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
	if size != f.last {
		f.last = size
		if f.resized != nil {
			f.resized(size)
		}
	}
}

// framedContent is what a window shows inside its frame (the content
// itself for a window without one).
func framedContent(win fyne.Window) fyne.CanvasObject {
	c := win.Content()
	if box, ok := c.(*fyne.Container); ok {
		if _, framed := box.Layout.(*windowFrame); framed && len(box.Objects) == 1 {
			return box.Objects[0]
		}
	}
	return c
}

// frameWindow gives win, a window of the given kind, its size: the one
// last remembered for the kind, or def, clamped to the screen. It puts
// the window's content in a frame that keeps the content from growing
// the window (see above), closes the window on Esc and Ctrl+W (Cmd+W on
// macOS), and remembers its size as it changes. Call it once the window
// has its content, before it is shown.
func (u *UI) frameWindow(win fyne.Window, kind string, def fyne.Size) {
	size := u.clampToScreen(u.rememberedSize(kind, def))
	var saving *time.Timer
	frame := &windowFrame{limit: size}
	frame.resized = func(fyne.Size) {
		// The content is laid out inside the window's padding: the
		// window's size is the canvas's.
		s := win.Canvas().Size()
		if s.Width < minRememberedSize || s.Height < minRememberedSize {
			return
		}
		// Preferences are safe to write from any goroutine; the timer's
		// goroutine ends once it has written.
		if saving != nil {
			saving.Stop()
		}
		saving = time.AfterFunc(u.sizeSaveDelay, func() { u.rememberSize(kind, s) })
	}
	win.SetContent(&fyne.Container{Layout: frame, Objects: []fyne.CanvasObject{win.Content()}})
	win.Resize(size)
	closeOnKeys(win)
}

// sizeKeys are the preference keys of a window kind's size.
func sizeKeys(kind string) (w, h string) {
	return "window." + kind + ".width", "window." + kind + ".height"
}

// rememberedSize is the size last remembered for kind, or def.
func (u *UI) rememberedSize(kind string, def fyne.Size) fyne.Size {
	kw, kh := sizeKeys(kind)
	p := u.App.Preferences()
	w, h := float32(p.Float(kw)), float32(p.Float(kh))
	if w < minRememberedSize || h < minRememberedSize {
		return def
	}
	return fyne.NewSize(w, h)
}

func (u *UI) rememberSize(kind string, s fyne.Size) {
	kw, kh := sizeKeys(kind)
	p := u.App.Preferences()
	p.SetFloat(kw, float64(s.Width))
	p.SetFloat(kh, float64(s.Height))
}

// clampToScreen bounds s by the screen, or by maxWindowSize when the
// screen's size is unknown.
func (u *UI) clampToScreen(s fyne.Size) fyne.Size {
	bound := fyne.NewSize(maxWindowSize, maxWindowH)
	if u.ScreenSize != nil {
		if sc := u.ScreenSize(); sc.Width >= minRememberedSize && sc.Height >= minRememberedSize {
			bound = sc
		}
	}
	return fyne.NewSize(min(s.Width, bound.Width), min(s.Height, bound.Height))
}
