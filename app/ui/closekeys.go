package ui

import (
	"runtime"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"

	sbwidget "sandbar/app/ui/widget"
)

// closeShortcut is Ctrl+W, or Cmd+W on macOS: KeyModifierShortcutDefault
// is Super there and Control elsewhere.
func closeShortcut() *desktop.CustomShortcut { return sbwidget.CloseShortcut() }

// closeOnKeys makes Esc and Ctrl+W (Cmd+W) close what is in front in
// win (see closeFront).
//
// Fyne gives keys to the focused widget, and only to the canvas when no
// widget has focus; a focused widget.Entry swallows both keys. So the
// windows' text fields are entries of this package (entry below), which
// close what is in front themselves.
func closeOnKeys(win fyne.Window) {
	c := win.Canvas()
	c.AddShortcut(closeShortcut(), func(fyne.Shortcut) { closeFront(win) })
	prev := c.OnTypedKey()
	c.SetOnTypedKey(func(ev *fyne.KeyEvent) {
		if ev.Name == fyne.KeyEscape {
			closeFront(win)
			return
		}
		if prev != nil {
			prev(ev)
		}
	})
}

// closeFront closes what is in front in win: a dialog or pop-up shown
// over the window, else the window.
func closeFront(win fyne.Window) {
	c := win.Canvas()
	if top := c.Overlays().Top(); top != nil {
		// A dialog (Fyne shows one as a pop-up over the window) or a
		// menu: it goes, the window stays. A confirmation then does
		// nothing, as its Cancel would.
		if p, ok := top.(*widget.PopUp); ok {
			p.Hide()
		} else {
			c.Overlays().Remove(top)
		}
		return
	}
	win.Close()
}

// isCloseShortcut reports whether s is the close shortcut.
func isCloseShortcut(s fyne.Shortcut) bool {
	return s != nil && s.ShortcutName() == closeShortcut().ShortcutName()
}

// entry is a widget.Entry that hands Esc and Ctrl+W (Cmd+W) to its
// window's canvas, which closeOnKeys set up to close the dialog or the
// window, instead of swallowing them as widget.Entry does.
type entry struct {
	widget.Entry
}

// newEntry is widget.NewEntry's entry.
func newEntry() *entry {
	e := &entry{}
	e.Wrapping = fyne.TextWrap(fyne.TextTruncateClip)
	e.ExtendBaseWidget(e)
	return e
}

// newMultiLineEntry is widget.NewMultiLineEntry's entry.
func newMultiLineEntry() *entry {
	e := newEntry()
	e.MultiLine = true
	return e
}

// TypedKey implements fyne.Focusable.
func (e *entry) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && e.closeFront() {
		return
	}
	e.Entry.TypedKey(ev)
}

// TypedShortcut implements fyne.Shortcutable. Ctrl+Enter (Cmd+Enter on
// macOS) submits: in a multi-line entry Enter starts a new line, and the
// keyboard gives the shortcut to the focused entry, not the window.
func (e *entry) TypedShortcut(s fyne.Shortcut) {
	if isCloseShortcut(s) && e.closeFront() {
		return
	}
	if isSubmitShortcut(s) {
		switch {
		case e.OnSubmitted != nil:
			if !e.Disabled() {
				e.OnSubmitted(e.Text)
			}
		default:
			// The window's (submitOnKeys), as for a field that is no entry.
			if c := fyne.CurrentApp().Driver().CanvasForObject(e); c != nil {
				if sc, ok := c.(fyne.Shortcutable); ok {
					sc.TypedShortcut(s)
				}
			}
		}
		return
	}
	e.Entry.TypedShortcut(s)
}

// submitShortcuts are Ctrl+Enter, or Cmd+Enter on macOS
// (KeyModifierShortcutDefault is the one or the other), with either
// Enter key.
func submitShortcuts() []*desktop.CustomShortcut {
	return []*desktop.CustomShortcut{
		{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierShortcutDefault},
		{KeyName: fyne.KeyEnter, Modifier: fyne.KeyModifierShortcutDefault},
	}
}

// submitKeysName names the submit shortcut as the keyboard here says it.
func submitKeysName() string {
	if runtime.GOOS == "darwin" {
		return "Cmd+Enter"
	}
	return "Ctrl+Enter"
}

// isSubmitShortcut reports whether s is a submit shortcut.
func isSubmitShortcut(s fyne.Shortcut) bool {
	if s == nil {
		return false
	}
	for _, sub := range submitShortcuts() {
		if s.ShortcutName() == sub.ShortcutName() {
			return true
		}
	}
	return false
}

// submitOnKeys makes Ctrl+Enter (Cmd+Enter) in w run submit, wherever
// the focus is: a field that is not an entry (a select, a slider) does
// not take the shortcut, and the window's canvas gets it.
func submitOnKeys(w fyne.Window, submit func()) {
	for _, s := range submitShortcuts() {
		w.Canvas().AddShortcut(s, func(fyne.Shortcut) { submit() })
	}
}

// closeFront closes what is in front in the entry's window; it reports
// false when the entry is in no window.
func (e *entry) closeFront() bool { return closeFrontOf(e) }

// closeFrontOf closes what is in front in o's window (see closeFront);
// it reports false when o is in no window.
func closeFrontOf(o fyne.CanvasObject) bool {
	d := fyne.CurrentApp().Driver()
	c := d.CanvasForObject(o)
	if c == nil {
		return false
	}
	for _, w := range d.AllWindows() {
		if w.Canvas() == c {
			closeFront(w)
			return true
		}
	}
	return false
}
