package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// settler does in a test what Fyne's desktop driver does before each
// frame (internal/driver/common.Canvas.EnsureMinSize), which the test
// driver never does: every object whose minimum size changed since the
// last frame has its parent laid out again, at the parent's size. It
// stops there, as the driver does: a parent whose own minimum stayed the
// same (a window frame capping it) does not pass the change on. Without
// it a test sees the layout as the window opened, not as it is after a
// field showed or a problem appeared.
type settler struct {
	min map[fyne.CanvasObject]fyne.Size
}

func newSettler() *settler { return &settler{min: map[fyne.CanvasObject]fyne.Size{}} }

// settle lays out what changed in c's content since the last call.
func (s *settler) settle(c fyne.Canvas) {
	s.walk(c.Content())
}

// walk visits o's children, then o, and reports whether o's minimum
// size changed.
func (s *settler) walk(o fyne.CanvasObject) bool {
	relayout := false
	for _, child := range children(o) {
		if s.walk(child) {
			relayout = true
		}
	}
	if relayout {
		layoutAgain(o)
	}
	if !o.Visible() {
		return false
	}
	m := o.MinSize()
	old, ok := s.min[o]
	s.min[o] = m
	return ok && old != m
}

// children are what o draws inside it.
func children(o fyne.CanvasObject) []fyne.CanvasObject {
	switch x := o.(type) {
	case *fyne.Container:
		return x.Objects
	case fyne.Widget:
		return test.WidgetRenderer(x).Objects()
	}
	return nil
}

// layoutAgain lays o out at its size.
func layoutAgain(o fyne.CanvasObject) {
	switch x := o.(type) {
	case *fyne.Container:
		if x.Layout != nil {
			x.Layout.Layout(x.Objects, x.Size())
		}
	case fyne.Widget:
		test.WidgetRenderer(x).Layout(x.Size())
	}
}
