package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// atLeastAsWide holds b at least as wide as it is with each of labels,
// and wider when its label needs it: a button whose label changes with
// the state (Merge into main, Merge into current branch) would move the
// buttons beside it otherwise.
func atLeastAsWide(b *widget.Button, labels ...string) fyne.CanvasObject {
	wide := float32(0)
	for _, l := range labels {
		probe := widget.NewButtonWithIcon(l, b.Icon, nil)
		wide = max(wide, probe.MinSize().Width)
	}
	return &fyne.Container{Layout: minWidthLayout{wide}, Objects: []fyne.CanvasObject{b}}
}

// minWidthLayout gives its one object the whole room, at least width
// wide.
type minWidthLayout struct{ width float32 }

func (l minWidthLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

func (l minWidthLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	s := fyne.NewSize(l.width, 0)
	for _, o := range objs {
		m := o.MinSize()
		s = fyne.NewSize(max(s.Width, m.Width), max(s.Height, m.Height))
	}
	return s
}
