package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// hintButton is a button that shows only an icon and says what it does
// while the pointer is over it: Fyne 2.8 has no tooltips, and a pop-up
// would take the hover events it needs to go away again. show gets the
// words when the pointer comes in and "" when it leaves; its owner puts
// them in a line of its own (a session row's second line).
type hintButton struct {
	widget.Button
	hint string
	show func(string)
}

func newHintButton(hint string, icon fyne.Resource, tapped func()) *hintButton {
	b := &hintButton{hint: hint}
	b.Icon, b.OnTapped = icon, tapped
	b.ExtendBaseWidget(b)
	return b
}

// MouseIn implements desktop.Hoverable.
func (b *hintButton) MouseIn(e *desktop.MouseEvent) {
	b.Button.MouseIn(e)
	if b.show != nil {
		b.show(b.hint)
	}
}

// MouseOut implements desktop.Hoverable.
func (b *hintButton) MouseOut() {
	b.Button.MouseOut()
	if b.show != nil {
		b.show("")
	}
}
