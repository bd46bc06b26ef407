package widget

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// logPane draws the rows of a LogView that fit, with a scrollbar. Only
// the visible rows exist as canvas objects, reused as the view scrolls
// or the log grows: a flush costs the same with 20 or 20,000 lines held
// and allocates no widget. (widget.List was the first choice, but when
// it follows a fast tail each refresh drains its item pool and the
// scroll after it builds a new set of rows: about 800 rows a second per
// window at 1,000 lines a second, which Fyne's renderer cache keeps for
// a minute.)
//
// Scrolling, dragging the bar or the keys move the view by whole rows;
// moving it off the bottom pauses the tail, moving it back resumes it.
// A long line is cut at the row's end; the view scrolls sideways by
// whole characters (a sideways scroll, Shift with the wheel, or the
// Left and Right keys) to read the rest of it.
type logPane struct {
	widget.BaseWidget
	v *LogView

	top    int     // the first row shown
	frac   float32 // scrolling not yet a whole row
	rows   int     // rows that fit
	stride float32 // a row's height with its spacing
	cols   int     // characters that fit in a row
	left   int     // characters scrolled off to the left
	hfrac  float32 // sideways scrolling not yet a whole character
	charW  float32 // a character's width
	stale  bool    // the lines were replaced: redraw every row
	r      *logPaneRenderer
}

func newLogPane(v *LogView) *logPane {
	p := &logPane{v: v, rows: 1}
	p.stride = v.rowHeight + 2
	p.ExtendBaseWidget(p)
	return p
}

// visible is the text of the rows shown.
func (p *logPane) visible() []string {
	var out []string
	for i := 0; i < p.rows; i++ {
		if abs := p.v.rowAbs(p.top + i); abs >= 0 {
			out = append(out, p.v.ring.at(abs).text)
		}
	}
	return out
}

// bar is the pane's scrollbar, once it is drawn.
func (p *logPane) bar() *logScrollbar {
	if p.r == nil {
		return nil
	}
	return p.r.bar
}

// maxTop is the top row that shows the last row at the bottom.
func (p *logPane) maxTop() int { return max(0, p.v.viewLen()-p.rows) }

// atBottom reports whether the last row is shown.
func (p *logPane) atBottom() bool { return p.top >= p.maxTop() }

// scrollTo shows row top (clamped) first; when the person moved it, the
// tail is paused off the bottom and followed at it.
func (p *logPane) scrollTo(top int, byPerson bool) {
	p.top = min(max(top, 0), p.maxTop())
	if byPerson {
		v := p.v
		switch follow := p.atBottom(); {
		case follow && !v.follow:
			v.follow, v.unseen, v.current = true, 0, -1
			v.updateChrome()
		case !follow && v.follow:
			v.follow, v.unseen = false, 0
			v.updateChrome()
		}
	}
	p.Refresh()
}

// show scrolls just enough for row id to be shown, away from the edges.
func (p *logPane) show(id int) {
	if id < p.top || id >= p.top+p.rows {
		p.top = min(max(id-p.rows/3, 0), p.maxTop())
	}
	p.Refresh()
}

// maxLeft is how far the rows shown can scroll sideways: until the end
// of the longest of them shows.
func (p *logPane) maxLeft() int {
	const stamp = 10 // "15:04:05  "
	const limit = 1 << 16
	widest := 0
	for i := 0; i < p.rows; i++ {
		if abs := p.v.rowAbs(p.top + i); abs >= 0 {
			widest = max(widest, logLineWidth(p.v.ring.at(abs).text, limit))
		}
	}
	return max(0, widest-(p.cols-stamp)+2)
}

// scrollLeft scrolls sideways to show the rows from character left
// (clamped) on.
func (p *logPane) scrollLeft(left int) {
	left = min(max(left, 0), p.maxLeft())
	if left == p.left {
		return
	}
	p.left, p.stale = left, true
	p.Refresh()
}

// Scrolled implements fyne.Scrollable: the wheel scrolls rows, a
// sideways scroll (or Shift with the wheel) characters.
func (p *logPane) Scrolled(ev *fyne.ScrollEvent) {
	dx := ev.Scrolled.DX
	if dx == 0 && shiftHeld() {
		dx = ev.Scrolled.DY
	}
	if dx != 0 {
		p.hfrac -= dx / max(p.charW, 1)
		d := int(p.hfrac)
		p.hfrac -= float32(d)
		if d != 0 {
			p.scrollLeft(p.left + d)
		}
		return
	}
	p.frac -= ev.Scrolled.DY / p.stride
	d := int(p.frac)
	p.frac -= float32(d)
	if d != 0 {
		p.scrollTo(p.top+d, true)
	}
}

// Tapped selects the line tapped (for Copy).
func (p *logPane) Tapped(ev *fyne.PointEvent) {
	if id := p.top + int(ev.Position.Y/p.stride); id < p.top+p.rows {
		p.v.selectLine(p.v.rowAbs(id))
	}
}

// TypedKey moves the view: arrows, page keys, Home and End (which
// follows the tail again).
func (p *logPane) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyUp:
		p.scrollTo(p.top-1, true)
	case fyne.KeyDown:
		p.scrollTo(p.top+1, true)
	case fyne.KeyPageUp:
		p.scrollTo(p.top-p.rows+1, true)
	case fyne.KeyPageDown:
		p.scrollTo(p.top+p.rows-1, true)
	case fyne.KeyHome:
		p.scrollTo(0, true)
	case fyne.KeyEnd:
		p.scrollTo(p.maxTop(), true)
	case fyne.KeyLeft:
		p.scrollLeft(p.left - sidewaysStep)
	case fyne.KeyRight:
		p.scrollLeft(p.left + sidewaysStep)
	}
}

// sidewaysStep is how many characters the Left and Right keys scroll.
const sidewaysStep = 8

// shiftHeld reports whether Shift is held on a desktop driver.
func shiftHeld() bool {
	if d, ok := fyne.CurrentApp().Driver().(desktop.Driver); ok {
		return d.CurrentKeyModifiers()&fyne.KeyModifierShift != 0
	}
	return false
}

// TypedShortcut copies with the platform's copy shortcut.
func (p *logPane) TypedShortcut(s fyne.Shortcut) {
	if _, ok := s.(*fyne.ShortcutCopy); ok {
		p.v.Copy()
	}
}

// FocusGained, FocusLost and TypedRune make the pane focusable, for its
// keys.
func (p *logPane) FocusGained()     {}
func (p *logPane) FocusLost()       {}
func (p *logPane) TypedRune(_ rune) {}

// MinSize is a few rows.
func (p *logPane) MinSize() fyne.Size { return fyne.NewSize(100, p.stride*3) }

// CreateRenderer implements fyne.Widget.
func (p *logPane) CreateRenderer() fyne.WidgetRenderer {
	p.r = &logPaneRenderer{p: p, bar: newLogScrollbar(p)}
	return p.r
}

var (
	_ fyne.Scrollable   = (*logPane)(nil)
	_ fyne.Tappable     = (*logPane)(nil)
	_ fyne.Focusable    = (*logPane)(nil)
	_ fyne.Shortcutable = (*logPane)(nil)
	_ fyne.Draggable    = (*logScrollbar)(nil)
)

// logRow is the canvas objects of one visible row.
type logRow struct {
	bg  *canvas.Rectangle
	txt *canvas.Text
	abs int64 // the line shown, -1 for none
	bgc color.Color
}

type logPaneRenderer struct {
	p    *logPane
	rows []*logRow
	bar  *logScrollbar
	objs []fyne.CanvasObject
	size fyne.Size
}

func (r *logPaneRenderer) Layout(size fyne.Size) {
	p := r.p
	r.size = size
	barW := theme.Size(theme.SizeNameScrollBar)
	p.rows = max(1, int(size.Height/p.stride))
	pad := theme.Padding()
	charW := fyne.MeasureText("M", theme.Size(theme.SizeNameText), fyne.TextStyle{Monospace: true}).Width
	p.charW = charW
	if cols := max(int((size.Width-barW-2*pad)/charW), 1); cols != p.cols {
		p.cols, p.stale = cols, true
	}
	for len(r.rows) < p.rows {
		row := &logRow{bg: canvas.NewRectangle(color.Transparent), abs: -2,
			txt: canvas.NewText("", theme.Color(theme.ColorNameForeground))}
		row.txt.TextStyle.Monospace = true
		r.rows = append(r.rows, row)
		r.objs = nil
	}
	for i, row := range r.rows {
		if i >= p.rows {
			row.bg.Hide()
			row.txt.Hide()
			continue
		}
		y := float32(i) * p.stride
		row.bg.Move(fyne.NewPos(0, y))
		row.bg.Resize(fyne.NewSize(size.Width-barW, p.stride))
		row.txt.Move(fyne.NewPos(pad, y+1))
		row.txt.Resize(fyne.NewSize(size.Width-barW-pad, p.v.rowHeight))
		row.bg.Show()
		row.txt.Show()
	}
	r.bar.Move(fyne.NewPos(size.Width-barW, 0))
	r.bar.Resize(fyne.NewSize(barW, size.Height))
	if p.v.follow {
		p.top = p.maxTop()
	} else {
		p.top = min(p.top, p.maxTop())
	}
	r.update()
}

// update fills the rows from the view's lines, touching only what
// changed.
func (r *logPaneRenderer) update() {
	p, v := r.p, r.p.v
	if p.stale {
		for _, row := range r.rows {
			row.abs = -2
		}
		p.stale = false
	}
	for i := 0; i < p.rows && i < len(r.rows); i++ {
		row := r.rows[i]
		abs := v.rowAbs(p.top + i)
		var text string
		var fg, bg color.Color = theme.Color(theme.ColorNameForeground), color.Transparent
		if abs >= 0 {
			l := v.ring.at(abs)
			if row.abs != abs || row.txt.Text == "" {
				text = logDisplayText(l, p.cols, p.left)
			} else {
				text = row.txt.Text
			}
			fg = streamColor(l.stream)
			bg = v.rowBackground(abs)
		}
		row.abs = abs
		if row.txt.Text != text || row.txt.Color != fg {
			row.txt.Text, row.txt.Color = text, fg
			row.txt.Refresh()
		}
		if row.bgc != bg {
			row.bgc, row.bg.FillColor = bg, bg
			row.bg.Refresh()
		}
	}
	r.bar.Refresh()
}

func (r *logPaneRenderer) MinSize() fyne.Size { return r.p.MinSize() }

func (r *logPaneRenderer) Refresh() {
	if r.p.Size() != r.size {
		r.Layout(r.p.Size())
		return
	}
	r.update()
}

func (r *logPaneRenderer) Objects() []fyne.CanvasObject {
	if r.objs == nil {
		for _, row := range r.rows {
			r.objs = append(r.objs, row.bg, row.txt)
		}
		r.objs = append(r.objs, r.bar)
	}
	return r.objs
}

func (r *logPaneRenderer) Destroy() {}

// logScrollbar is the pane's scrollbar: a thumb sized to the share of
// rows shown, dragged to scroll; a tap beside the thumb pages.
type logScrollbar struct {
	widget.BaseWidget
	p       *logPane
	drag    float32 // dragging not yet a whole row
	hovered bool
}

func newLogScrollbar(p *logPane) *logScrollbar {
	s := &logScrollbar{p: p}
	s.ExtendBaseWidget(s)
	return s
}

// thumb is the thumb's top and height.
func (s *logScrollbar) thumb() (y, h float32) {
	p := s.p
	n := p.v.viewLen()
	H := s.Size().Height
	if n <= p.rows || H <= 0 {
		return 0, 0
	}
	h = max(H*float32(p.rows)/float32(n), theme.Size(theme.SizeNameScrollBar)*2)
	return (H - h) * float32(p.top) / float32(p.maxTop()), h
}

// Dragged moves the view with the thumb.
func (s *logScrollbar) Dragged(ev *fyne.DragEvent) {
	p := s.p
	_, h := s.thumb()
	track := s.Size().Height - h
	if track <= 0 {
		return
	}
	s.drag += ev.Dragged.DY * float32(p.maxTop()) / track
	d := int(s.drag)
	s.drag -= float32(d)
	if d != 0 {
		p.scrollTo(p.top+d, true)
	}
}

// DragEnd implements fyne.Draggable.
func (s *logScrollbar) DragEnd() { s.drag = 0 }

// Tapped pages toward the tap.
func (s *logScrollbar) Tapped(ev *fyne.PointEvent) {
	y, h := s.thumb()
	switch {
	case ev.Position.Y < y:
		s.p.scrollTo(s.p.top-s.p.rows+1, true)
	case ev.Position.Y > y+h:
		s.p.scrollTo(s.p.top+s.p.rows-1, true)
	}
}

// MouseIn, MouseMoved and MouseOut widen the thumb under the pointer.
func (s *logScrollbar) MouseIn(*desktop.MouseEvent)    { s.hovered = true; s.Refresh() }
func (s *logScrollbar) MouseMoved(*desktop.MouseEvent) {}
func (s *logScrollbar) MouseOut()                      { s.hovered = false; s.Refresh() }

// CreateRenderer implements fyne.Widget.
func (s *logScrollbar) CreateRenderer() fyne.WidgetRenderer {
	t := canvas.NewRectangle(theme.Color(theme.ColorNameScrollBar))
	t.CornerRadius = theme.Size(theme.SizeNameScrollBarRadius)
	return &logScrollbarRenderer{s: s, thumb: t}
}

type logScrollbarRenderer struct {
	s     *logScrollbar
	thumb *canvas.Rectangle
}

func (r *logScrollbarRenderer) Layout(size fyne.Size) {
	y, h := r.s.thumb()
	if h == 0 {
		r.thumb.Hide()
		return
	}
	w := theme.Size(theme.SizeNameScrollBarSmall)
	if r.s.hovered {
		w = size.Width
	}
	r.thumb.Move(fyne.NewPos(size.Width-w, y))
	r.thumb.Resize(fyne.NewSize(w, h))
	r.thumb.Show()
}

func (r *logScrollbarRenderer) MinSize() fyne.Size {
	return fyne.NewSize(theme.Size(theme.SizeNameScrollBar), 0)
}

func (r *logScrollbarRenderer) Refresh() {
	r.thumb.FillColor = theme.Color(theme.ColorNameScrollBar)
	r.Layout(r.s.Size())
	r.thumb.Refresh()
}

func (r *logScrollbarRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.thumb} }
func (r *logScrollbarRenderer) Destroy()                     {}
