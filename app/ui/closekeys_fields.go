package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// The fields that are not plain entries hand Esc and Ctrl+W (Cmd+W) on
// too: a password field, a text field with a list of choices (the
// secret-name picker), and the log's search field (LogView.OnClose).

// newPasswordEntry is widget.NewPasswordEntry's entry: its text hidden,
// with the button that shows it (the Entry adds that itself).
func newPasswordEntry() *entry {
	e := newEntry()
	e.Password = true
	return e
}

// selectEntry is a widget.SelectEntry that hands Esc and Ctrl+W (Cmd+W)
// to its window, as entry does.
type selectEntry struct {
	widget.SelectEntry
}

// newSelectEntry is widget.NewSelectEntry's select entry.
func newSelectEntry(options []string) *selectEntry {
	e := &selectEntry{}
	e.ExtendBaseWidget(e)
	e.Wrapping = fyne.TextWrap(fyne.TextTruncateClip)
	e.SetOptions(options)
	return e
}

// TypedKey implements fyne.Focusable.
func (e *selectEntry) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && closeFrontOf(e) {
		return
	}
	e.SelectEntry.TypedKey(ev)
}

// TypedShortcut implements fyne.Shortcutable.
func (e *selectEntry) TypedShortcut(s fyne.Shortcut) {
	if isCloseShortcut(s) && closeFrontOf(e) {
		return
	}
	e.SelectEntry.TypedShortcut(s)
}
