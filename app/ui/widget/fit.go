package widget

import "fyne.io/fyne/v2"

// Fit holds o in a container that asks for none of the width o would
// ask for, and lays o out in all the room it is given. A pane whose
// content can be as wide as the agent makes it (a transcript, a diff, a
// tab of the session window) sits in one, so that however long a line
// gets it never widens the window: what does not fit wraps, truncates,
// scrolls or, as a last resort, is clipped. Its height is o's.
func Fit(o fyne.CanvasObject) *fyne.Container {
	return &fyne.Container{Layout: fitLayout{}, Objects: []fyne.CanvasObject{o}}
}

type fitLayout struct{}

func (fitLayout) MinSize(objects []fyne.CanvasObject) fyne.Size {
	var h float32
	for _, o := range objects {
		if o.Visible() {
			h = max(h, o.MinSize().Height)
		}
	}
	return fyne.NewSize(0, h)
}

func (fitLayout) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objects {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}
