package widget

import (
	"image/color"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// SparkWindow is how much history a Sparkline shows.
const SparkWindow = 2 * time.Minute

// sparkMaxPoints bounds a Sparkline's samples, however often they come.
const sparkMaxPoints = 240

// Sparkline is a small line chart of the last SparkWindow of a value,
// drawn with canvas lines.
type Sparkline struct {
	widget.BaseWidget

	// Max is the value drawn at the top; 0 scales to the highest sample.
	Max float64

	times  []time.Time
	values []float64
	color  fyne.ThemeColorName
}

// NewSparkline returns an empty sparkline drawn in the theme colour c
// (the primary colour when "").
func NewSparkline(c fyne.ThemeColorName) *Sparkline {
	if c == "" {
		c = theme.ColorNamePrimary
	}
	s := &Sparkline{color: c}
	s.ExtendBaseWidget(s)
	return s
}

// Add records value v at time t and redraws. Samples older than the
// window before t fall out.
func (s *Sparkline) Add(t time.Time, v float64) {
	s.times = append(s.times, t)
	s.values = append(s.values, v)
	cut := 0
	for cut < len(s.times)-1 && t.Sub(s.times[cut]) > SparkWindow {
		cut++
	}
	if over := len(s.times) - cut - sparkMaxPoints; over > 0 {
		cut += over
	}
	if cut > 0 {
		s.times = append(s.times[:0], s.times[cut:]...)
		s.values = append(s.values[:0], s.values[cut:]...)
	}
	s.Refresh()
}

// Len is the number of samples shown.
func (s *Sparkline) Len() int { return len(s.values) }

// Last is the newest sample, 0 when there is none.
func (s *Sparkline) Last() float64 {
	if len(s.values) == 0 {
		return 0
	}
	return s.values[len(s.values)-1]
}

// MinSize implements fyne.CanvasObject.
func (s *Sparkline) MinSize() fyne.Size {
	h := theme.Size(theme.SizeNameText) * 2
	return fyne.NewSize(h*4, h)
}

// CreateRenderer implements fyne.Widget.
func (s *Sparkline) CreateRenderer() fyne.WidgetRenderer {
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.Size(theme.SizeNameInputRadius)
	return &sparkRenderer{s: s, bg: bg}
}

type sparkRenderer struct {
	s     *Sparkline
	bg    *canvas.Rectangle
	lines []*canvas.Line
	objs  []fyne.CanvasObject
}

func (r *sparkRenderer) Layout(size fyne.Size) {
	r.bg.Resize(size)
	s := r.s
	n := len(s.values)
	for len(r.lines) < n-1 {
		l := canvas.NewLine(color.Transparent)
		l.StrokeWidth = 1.5
		r.lines = append(r.lines, l)
	}
	top := s.Max
	if top <= 0 {
		for _, v := range s.values {
			top = max(top, v)
		}
		top *= 1.1
	}
	if top <= 0 {
		top = 1
	}
	pad := float32(2)
	w, h := size.Width-2*pad, size.Height-2*pad
	var end time.Time
	if n > 0 {
		end = s.times[n-1]
	}
	start := end.Add(-SparkWindow)
	point := func(i int) fyne.Position {
		x := float32(s.times[i].Sub(start)) / float32(SparkWindow) * w
		v := min(max(s.values[i], 0), top)
		return fyne.NewPos(pad+max(x, 0), pad+h-float32(v/top)*h)
	}
	c := theme.Color(s.color)
	for i, l := range r.lines {
		if i >= n-1 {
			l.Hide()
			continue
		}
		l.StrokeColor = c
		l.Position1, l.Position2 = point(i), point(i+1)
		l.Show()
	}
}

func (r *sparkRenderer) MinSize() fyne.Size { return r.s.MinSize() }

func (r *sparkRenderer) Refresh() {
	r.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.Layout(r.s.Size())
	r.bg.Refresh()
	for _, l := range r.lines {
		l.Refresh()
	}
}

func (r *sparkRenderer) Objects() []fyne.CanvasObject {
	r.objs = append(r.objs[:0], r.bg)
	for _, l := range r.lines {
		r.objs = append(r.objs, l)
	}
	return r.objs
}

func (r *sparkRenderer) Destroy() {}

// Gauge is one resource: its name, a bar of use against the limit, the
// figures, and a sparkline of the last two minutes.
type Gauge struct {
	widget.BaseWidget

	title *widget.Label
	bar   *widget.ProgressBar
	text  string
	spark *Sparkline
	row   fyne.CanvasObject
}

// NewGauge returns a gauge titled title; max is its sparkline's top (0
// scales to the samples).
func NewGauge(title string, sparkMax float64) *Gauge {
	g := &Gauge{title: widget.NewLabel(title), bar: widget.NewProgressBar(), spark: NewSparkline(""), text: "—"}
	g.title.TextStyle.Bold = true
	g.spark.Max = sparkMax
	g.bar.TextFormatter = func() string { return g.text }
	g.row = container.NewBorder(nil, nil, container.NewGridWrap(fyne.NewSize(140, g.title.MinSize().Height), g.title), g.spark, g.bar)
	g.ExtendBaseWidget(g)
	return g
}

// Set shows used against limit (the bar is empty when limit is 0), with
// text as the figures, and adds spark to the sparkline at t.
func (g *Gauge) Set(t time.Time, used, limit float64, text string, spark float64) {
	g.text = text
	g.bar.Max = 1
	if limit > 0 {
		g.bar.SetValue(min(used/limit, 1))
	} else {
		g.bar.SetValue(0)
	}
	g.spark.Add(t, spark)
}

// Title is the gauge's name.
func (g *Gauge) Title() string { return g.title.Text }

// Text is the figures shown.
func (g *Gauge) Text() string { return g.text }

// Fraction is the share of the bar that is filled.
func (g *Gauge) Fraction() float64 { return g.bar.Value }

// Spark is the gauge's sparkline.
func (g *Gauge) Spark() *Sparkline { return g.spark }

// CreateRenderer implements fyne.Widget.
func (g *Gauge) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(g.row) }
