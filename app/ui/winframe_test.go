package ui

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/widget"
)

// isOpen reports whether win is one of the app's windows still.
func isOpen(win fyne.Window) bool {
	return slices.Contains(fyne.CurrentApp().Driver().AllWindows(), win)
}

// pressKey delivers a key press to win as Fyne's desktop driver does: to
// the focused widget if there is one, else to the canvas.
func pressKey(win fyne.Window, name fyne.KeyName) {
	ev := &fyne.KeyEvent{Name: name}
	if f := win.Canvas().Focused(); f != nil {
		f.TypedKey(ev)
	} else if h := win.Canvas().OnTypedKey(); h != nil {
		h(ev)
	}
}

// pressShortcut delivers a shortcut to win as Fyne's desktop driver
// does: to the focused widget when it takes shortcuts, else to the
// canvas.
func pressShortcut(win fyne.Window, s fyne.Shortcut) {
	if f, ok := win.Canvas().Focused().(fyne.Shortcutable); ok {
		f.TypedShortcut(s)
		return
	}
	c := any(win.Canvas())
	if _, ok := c.(fyne.Shortcutable); !ok {
		// The test driver's canvas hides the software canvas, which
		// holds the shortcuts, in a field.
		if f := reflect.ValueOf(c).Elem().FieldByName("WindowlessCanvas"); f.IsValid() {
			c = f.Interface()
		}
	}
	if sc, ok := c.(fyne.Shortcutable); ok {
		sc.TypedShortcut(s)
	}
}

func TestMainWindowRemembersItsSize(t *testing.T) {
	h := newAppHarness(t)
	h.u.sizeSaveDelay = 10 * time.Millisecond
	h.addProject(t, "demo")
	mw := h.mainWindow(t)
	if got := mw.win.Canvas().Size(); got != mainWindowSize() {
		t.Errorf("the Sandbar window opens at %v the first time, want %v", got, mainWindowSize())
	}
	mw.win.Resize(fyne.NewSize(900, 640))
	h.q.WaitFor(t, 5*time.Second, "the new size to be remembered", func() bool {
		return h.u.rememberedSize(winMain, fyne.Size{}) == fyne.NewSize(900, 640)
	})
	mw.win.Close()
	mw = h.mainWindow(t)
	if got := mw.win.Canvas().Size(); got != fyne.NewSize(900, 640) {
		t.Errorf("the Sandbar window opens again at %v, want the 900×640 it had", got)
	}
	mw.win.Close()

	// A size remembered on a bigger screen is clamped to this one.
	h.u.rememberSize(winMain, fyne.NewSize(3000, 2000))
	h.u.ScreenSize = func() fyne.Size { return screen }
	mw = h.mainWindow(t)
	if got := mw.win.Canvas().Size(); got != screen {
		t.Errorf("a 3000×2000 window opens at %v on a %v screen", got, screen)
	}
	mw.win.Close()
	// Where the screen cannot be told, to a sane maximum.
	h.u.ScreenSize = nil
	mw = h.mainWindow(t)
	if got := mw.win.Canvas().Size(); got.Width > maxWindowSize || got.Height > maxWindowH {
		t.Errorf("a 3000×2000 window opens at %v on a screen of unknown size", got)
	}
}

// TestSuccessBannerGoes: a success goes by itself; an error stays.
func TestSuccessBannerGoes(t *testing.T) {
	h := newAppHarness(t)
	h.u.bannerLife = 20 * time.Millisecond
	mw := h.mainWindow(t)
	mw.dropped(fyne.NewPos(-1, -1), []fyne.URI{storage.NewFileURI(h.env.Repo(t, "demo"))})
	h.q.WaitFor(t, 5*time.Second, "the banner saying the project was added", func() bool {
		return mw.banner.box.Visible() && mw.banner.text.Importance == widget.SuccessImportance
	})
	h.q.WaitFor(t, 5*time.Second, "the success banner to go by itself", func() bool { return !mw.banner.box.Visible() })

	mw.dropped(fyne.NewPos(-1, -1), []fyne.URI{storage.NewFileURI(t.TempDir())})
	h.q.WaitFor(t, 5*time.Second, "the banner saying the folder is no repository", func() bool {
		return mw.banner.box.Visible() && mw.banner.text.Importance == widget.DangerImportance
	})
	if mw.banner.timer != nil {
		t.Error("an error banner is set to go by itself")
	}
}

// TestSessionNoticeSuccessGoes: in a session window too, a success goes
// by itself and an error or a question stays.
func TestSessionNoticeSuccessGoes(t *testing.T) {
	h := newSWHarness(t)
	h.u.bannerLife = 20 * time.Millisecond
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	w.notice.show(widget.SuccessImportance, "Merged: branch sandbar/x created.")
	h.q.WaitFor(t, 5*time.Second, "the success notice to go by itself", func() bool { return w.notice.text() == "" })
	w.notice.show(widget.DangerImportance, "Could not merge.")
	if w.notice.timer != nil {
		t.Error("an error notice is set to go by itself")
	}
	w.notice.show(widget.SuccessImportance, "Done?", noticeAction{"OK", widget.MediumImportance, w.notice.hide})
	if w.notice.timer != nil {
		t.Error("a notice with actions is set to go by itself")
	}
}

// TestEscAndCtrlWClose: Esc and Ctrl+W (Cmd+W on macOS) close each of
// the windows, from a focused text field too, and close a dialog before
// its window.
func TestEscAndCtrlWClose(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "demo")
	type opened struct {
		win   fyne.Window
		field fyne.Focusable // a text field of the window, nil if none
	}
	windows := map[string]func() opened{
		"Sandbar": func() opened { return opened{win: h.mainWindow(t).win} },
		"New Session": func() opened {
			h.u.ShowNewSession(p.ID)
			return opened{h.u.newSessWin.win, h.u.newSessWin.prompt}
		},
		"Settings": func() opened {
			h.u.ShowSettings()
			return opened{h.u.settingsWin.win, h.u.settingsWin.agentCmd}
		},
		"Welcome": func() opened { h.u.ShowFirstRun(); return opened{win: h.u.firstRunWin.win} },
		"Project Settings": func() opened {
			return opened{win: h.u.showProjectSettings(p.ID).win}
		},
	}
	for name, open := range windows {
		for _, how := range []string{"Esc", "Ctrl+W", "Esc in a field", "Ctrl+W in a field"} {
			o := open()
			if o.field == nil && len(how) > 6 {
				o.win.Close()
				continue
			}
			if len(how) > 6 {
				o.win.Canvas().Focus(o.field)
			}
			if how[0] == 'E' {
				pressKey(o.win, fyne.KeyEscape)
			} else {
				pressShortcut(o.win, closeShortcut())
			}
			h.q.Drain()
			if isOpen(o.win) {
				t.Errorf("%s: %s leaves the window open", name, how)
				o.win.Close()
			}
		}
	}

	// A dialog goes first, then the window.
	mw := h.mainWindow(t)
	mw.confirmRemoveProject(p.ID)
	if mw.win.Canvas().Overlays().Top() == nil {
		t.Fatal("Remove shows no dialog")
	}
	pressKey(mw.win, fyne.KeyEscape)
	if mw.win.Canvas().Overlays().Top() != nil || !isOpen(mw.win) {
		t.Errorf("Esc over a dialog: dialog shown %v, window open %v; want the dialog gone, the window open",
			mw.win.Canvas().Overlays().Top() != nil, isOpen(mw.win))
	}
	pressShortcut(mw.win, closeShortcut())
	if isOpen(mw.win) {
		t.Error("Ctrl+W after the dialog went leaves the window open")
	}
}

// TestSessionWindowClosesOnKeys: Esc and Ctrl+W close a session's
// window, from the chat field too.
func TestSessionWindowClosesOnKeys(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	for _, how := range []string{"Esc", "Ctrl+W in the chat"} {
		w := h.open(t, s.ID)
		if how == "Esc" {
			pressKey(w.win, fyne.KeyEscape)
		} else {
			w.win.Canvas().Focus(w.chat)
			pressShortcut(w.win, closeShortcut())
		}
		if isOpen(w.win) || !w.closed {
			t.Errorf("%s leaves the session window open", how)
		}
	}
}
