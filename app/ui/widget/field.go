package widget

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// CloseShortcut is Ctrl+W, or Cmd+W on macOS (KeyModifierShortcutDefault
// is Super there and Control elsewhere): with Esc, what closes a window.
func CloseShortcut() *desktop.CustomShortcut {
	return &desktop.CustomShortcut{KeyName: fyne.KeyW, Modifier: fyne.KeyModifierShortcutDefault}
}

// IsCloseShortcut reports whether s is CloseShortcut.
func IsCloseShortcut(s fyne.Shortcut) bool {
	return s != nil && s.ShortcutName() == CloseShortcut().ShortcutName()
}

// Field is a one-line widget.Entry that can leave Esc and Ctrl+W (Cmd+W)
// to its window. Fyne gives keys to the focused widget, and a plain
// Entry swallows both, so a window that closes on them stays open while
// one of its fields has focus.
type Field struct {
	widget.Entry
	// OnClose, when set, is called for Esc and Ctrl+W (Cmd+W) in place
	// of the entry's own handling, and reports whether it took them (the
	// app closes a dialog or the window); when it did not, the entry
	// handles them as usual.
	OnClose func() bool
}

// NewField returns an empty Field.
func NewField() *Field {
	f := &Field{}
	f.Wrapping = fyne.TextWrap(fyne.TextTruncateClip)
	f.ExtendBaseWidget(f)
	return f
}

// TypedKey implements fyne.Focusable.
func (f *Field) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && f.OnClose != nil && f.OnClose() {
		return
	}
	f.Entry.TypedKey(ev)
}

// TypedShortcut implements fyne.Shortcutable.
func (f *Field) TypedShortcut(s fyne.Shortcut) {
	if IsCloseShortcut(s) && f.OnClose != nil && f.OnClose() {
		return
	}
	f.Entry.TypedShortcut(s)
}
