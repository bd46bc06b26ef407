package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// The focusable fields other than text entries: a widget.Select,
// widget.SelectEntry or widget.Slider takes focus when clicked, and then
// gets every key, swallowing Esc (Ctrl+W, a shortcut, reaches the canvas
// unless the field is an entry). These hand Esc, and Ctrl+W (Cmd+W)
// where they take shortcuts, to their window, as entry does (see
// closekeys.go).

// closeSelect is a widget.Select that closes its window on Esc.
type closeSelect struct {
	widget.Select
}

// newSelect is widget.NewSelect's closeSelect.
func newSelect(options []string, changed func(string)) *closeSelect {
	s := &closeSelect{}
	s.Options, s.OnChanged = options, changed
	s.PlaceHolder = "(Select one)"
	s.ExtendBaseWidget(s)
	return s
}

// TypedKey implements fyne.Focusable.
func (s *closeSelect) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && closeFrontOf(s) {
		return
	}
	s.Select.TypedKey(ev)
}

// closeSlider is a widget.Slider that closes its window on Esc.
type closeSlider struct {
	widget.Slider
}

// newSlider is widget.NewSlider's closeSlider.
func newSlider(min, max float64) *closeSlider {
	s := &closeSlider{}
	s.Min, s.Max, s.Step, s.Orientation = min, max, 1, widget.Horizontal
	s.ExtendBaseWidget(s)
	return s
}

// TypedKey implements fyne.Focusable.
func (s *closeSlider) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && closeFrontOf(s) {
		return
	}
	s.Slider.TypedKey(ev)
}

// selectEntry is a widget.SelectEntry (a text field with a list to pick
// from) that closes its window on Esc and Ctrl+W (Cmd+W).
type selectEntry struct {
	widget.SelectEntry
}

// newSelectEntry is widget.NewSelectEntry's selectEntry.
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

// fixedWidth holds s at the width of the widest of texts (its options
// and placeholders): a widget.Select is as wide as its placeholder, so
// the labels beside it would move as its choice changes.
func (s *closeSelect) fixedWidth(texts ...string) fyne.CanvasObject {
	th := s.Theme()
	inner := th.Size(theme.SizeNameInnerPadding)
	wide := float32(0)
	for _, t := range texts {
		wide = max(wide, fyne.MeasureText(t, th.Size(theme.SizeNameText), fyne.TextStyle{}).Width)
	}
	wide += inner*4 + th.Size(theme.SizeNameInlineIcon)
	return container.NewGridWrap(fyne.NewSize(max(wide, s.MinSize().Width), s.MinSize().Height), s)
}

// newPasswordEntry is widget.NewPasswordEntry's entry: its text hidden,
// with the button that shows it (the Entry adds that itself).
func newPasswordEntry() *entry {
	e := newEntry()
	e.Password = true
	return e
}
