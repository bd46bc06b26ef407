package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// readAllLabel is a one-line label that ends in "…" when its text does
// not fit, and shows the whole text when it is clicked then: a state's
// reason, a merge's note, a row's second line. (It keeps one line so
// that what is below it does not move as the text changes.) Clicked
// when the text fits, it does what its row does (tapped).
type readAllLabel struct {
	widget.Label
	tapped func()
}

func newReadAllLabel() *readAllLabel {
	l := &readAllLabel{}
	l.Truncation = fyne.TextTruncateEllipsis
	l.ExtendBaseWidget(l)
	return l
}

// cut reports whether the label shows less than its text.
func (l *readAllLabel) cut() bool {
	if strings.Contains(l.Text, "\n") {
		return true
	}
	size := l.SizeName
	if size == "" {
		size = theme.SizeNameText
	}
	th := l.Theme()
	full := fyne.MeasureText(l.Text, th.Size(size), l.TextStyle).Width + 2*th.Size(theme.SizeNameInnerPadding)
	return full > l.Size().Width+0.5
}

// Tapped shows the whole text when it is cut.
func (l *readAllLabel) Tapped(*fyne.PointEvent) {
	if !l.cut() {
		if l.tapped != nil {
			l.tapped()
		}
		return
	}
	if c := fyne.CurrentApp().Driver().CanvasForObject(l); c != nil {
		showWholeText(c, l.Text)
	}
}

// Cursor is a pointer where a click shows more.
func (l *readAllLabel) Cursor() desktop.Cursor {
	if l.cut() || l.tapped != nil {
		return desktop.PointerCursor
	}
	return desktop.DefaultCursor
}

// showWholeText shows text whole, wrapped, over c, with Copy and Close.
func showWholeText(c fyne.Canvas, text string) {
	body := widget.NewLabel(text)
	body.Wrapping = fyne.TextWrapWord
	var pop *widget.PopUp
	closeBtn := widget.NewButton("Close", func() { pop.Hide() })
	copyBtn := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		fyne.CurrentApp().Clipboard().SetContent(text)
	})
	buttons := container.NewHBox(layout.NewSpacer(), copyBtn, closeBtn)
	pop = widget.NewModalPopUp(container.NewBorder(nil, buttons, nil, nil, container.NewVScroll(body)), c)
	w := min(c.Size().Width-4*theme.Padding(), 640)
	body.Resize(fyne.NewSize(w, 0))
	h := min(c.Size().Height-4*theme.Padding(), body.MinSize().Height+buttons.MinSize().Height+4*theme.Padding())
	pop.Resize(fyne.NewSize(w, h))
	pop.Show()
}
