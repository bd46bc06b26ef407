package ui

import (
	"fmt"
	"image/color"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
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

// Text is the figures shown.
func (g *Gauge) Text() string { return g.text }

// Fraction is the share of the bar that is filled.
func (g *Gauge) Fraction() float64 { return g.bar.Value }

// Spark is the gauge's sparkline.
func (g *Gauge) Spark() *Sparkline { return g.spark }

// CreateRenderer implements fyne.Widget.
func (g *Gauge) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(g.row) }

// resourcePanel is the session window's Resources tab: the limits, live
// use as gauges with sparklines, and where the time went at start.
type resourcePanel struct {
	limits  *widget.Label
	cpu     *Gauge
	mem     *Gauge
	disk    *Gauge
	ws      *Gauge
	procs   *Gauge
	rss     *Gauge
	updated *widget.Label
	timing  *timingBars

	memLimit uint64 // bytes, the VM's memory limit
	cpus     int
	lastCPU  float64 // host CPU seconds at the last sample
	lastAt   time.Time
	content  fyne.CanvasObject
}

func newResourcePanel() *resourcePanel {
	p := &resourcePanel{
		limits: widget.NewLabel(""),
		cpu:    NewGauge("CPU", 100), mem: NewGauge("Memory", 0), disk: NewGauge("Scratch disk", 0),
		ws: NewGauge("Workspace disk", 0), procs: NewGauge("Processes", 0), rss: NewGauge("VM on the host", 0),
		updated: widget.NewLabel("No figures yet: they come every 2 s while the session runs."),
		timing:  newTimingBars(),
	}
	p.limits.Wrapping = fyne.TextWrapWord
	p.updated.Importance = widget.LowImportance
	heading := func(s string) *widget.Label {
		l := widget.NewLabel(s)
		l.TextStyle.Bold = true
		l.SizeName = theme.SizeNameSubHeadingText
		return l
	}
	p.content = container.NewVScroll(container.NewVBox(
		heading("Limits"), p.limits,
		heading("Use"), p.cpu, p.mem, p.disk, p.ws, p.procs, p.rss, p.updated,
		heading("Where the time went"), p.timing,
	))
	return p
}

// setSession shows the session's limits and timings.
func (p *resourcePanel) setSession(s store.Session) {
	l := s.Limits
	p.memLimit = uint64(l.MemoryMiB) << 20
	p.cpus = l.CPUs
	net := "network on"
	if !l.Network {
		net = "network off"
	}
	txt := fmt.Sprintf("%d vCPUs · %s memory · %d GiB scratch disk · %s", l.CPUs, byteSize(p.memLimit), l.DiskGiB, net)
	if l.Timeout > 0 {
		txt += " · stops after " + l.Timeout.String()
	}
	if l.IdleTimeout > 0 {
		txt += " · idle after " + l.IdleTimeout.String()
	}
	p.limits.SetText(txt)
	p.timing.set(s.Timings)
}

// addStats shows one stats sample.
func (p *resourcePanel) addStats(at time.Time, st session.Stats) {
	cpuText := fmt.Sprintf("%.0f %%", st.CPU)
	if p.cpus > 0 {
		cpuText += fmt.Sprintf(" of %d vCPUs", p.cpus)
	}
	p.cpu.Set(at, st.CPU, 100, cpuText, st.CPU)
	p.mem.spark.Max = float64(st.MemTotal)
	p.mem.Set(at, float64(st.MemUsed), float64(st.MemTotal), usedOf(st.MemUsed, st.MemTotal), float64(st.MemUsed))
	p.disk.spark.Max = float64(st.DiskTotal)
	p.disk.Set(at, float64(st.DiskUsed), float64(st.DiskTotal), usedOf(st.DiskUsed, st.DiskTotal), float64(st.DiskUsed))
	p.ws.spark.Max = float64(st.WSTotal)
	p.ws.Set(at, float64(st.WSUsed), float64(st.WSTotal), usedOf(st.WSUsed, st.WSTotal), float64(st.WSUsed))
	p.procs.Set(at, 0, 0, fmt.Sprintf("%d", st.Procs), float64(st.Procs))
	rss := "—"
	if st.HostRSS > 0 {
		rss = byteSize(st.HostRSS) + " resident"
		if p.memLimit > 0 {
			rss += " (limit " + byteSize(p.memLimit) + ")"
		}
		if !p.lastAt.IsZero() && at.After(p.lastAt) && st.HostCPUSec >= p.lastCPU {
			rss += fmt.Sprintf(" · %.0f %% of a host core", (st.HostCPUSec-p.lastCPU)/at.Sub(p.lastAt).Seconds()*100)
		}
	}
	p.lastCPU, p.lastAt = st.HostCPUSec, at
	p.rss.spark.Max = float64(p.memLimit)
	p.rss.Set(at, float64(st.HostRSS), float64(p.memLimit), rss, float64(st.HostRSS))
	p.updated.SetText("Updated " + at.Format("15:04:05"))
}

func usedOf(used, total uint64) string {
	if total == 0 {
		return byteSize(used)
	}
	return fmt.Sprintf("%s of %s (%.0f %%)", byteSize(used), byteSize(total), float64(used)/float64(total)*100)
}

// byteSize writes n bytes for a person, as the CLI does.
func byteSize(n uint64) string { return humanBytes(int64(n)) }

// timingPhases are the start-up phases in order, and what they mean.
var timingPhases = []struct{ key, label string }{
	{"clone", "Clone the repository"},
	{"boot", "Boot the VM"},
	{"ready", "Guest ready"},
	{"agent", "Start the agent"},
	{"shutdown", "Shut down"},
}

// timingBars shows how long each phase of a session's start took, as
// bars against the longest.
type timingBars struct {
	widget.BaseWidget
	rows  map[string]*widget.ProgressBar
	texts map[string]string
	total *widget.Label
	box   *fyne.Container
}

func newTimingBars() *timingBars {
	t := &timingBars{rows: map[string]*widget.ProgressBar{}, texts: map[string]string{}, total: widget.NewLabel("")}
	grid := container.New(layout.NewFormLayout())
	for _, ph := range timingPhases {
		bar := widget.NewProgressBar()
		key := ph.key
		bar.TextFormatter = func() string { return t.texts[key] }
		t.rows[key] = bar
		grid.Add(widget.NewLabel(ph.label))
		grid.Add(bar)
	}
	t.box = container.NewVBox(grid, t.total)
	t.ExtendBaseWidget(t)
	return t
}

func (t *timingBars) set(tm map[string]time.Duration) {
	var longest, start time.Duration
	for _, ph := range timingPhases {
		d := tm[ph.key]
		longest = max(longest, d)
		if ph.key != "shutdown" {
			start += d
		}
	}
	for _, ph := range timingPhases {
		d, ok := tm[ph.key]
		bar := t.rows[ph.key]
		if !ok {
			t.texts[ph.key] = "—"
			bar.SetValue(0)
			continue
		}
		t.texts[ph.key] = roundDuration(d).String()
		if longest > 0 {
			bar.SetValue(float64(d) / float64(longest))
		} else {
			bar.SetValue(0)
		}
	}
	if start > 0 {
		t.total.SetText("From Start to a working agent: " + roundDuration(start).String())
	} else {
		t.total.SetText("No timings yet.")
	}
}

// text is what the bar of phase key shows.
func (t *timingBars) text(key string) string { return t.texts[key] }

// CreateRenderer implements fyne.Widget.
func (t *timingBars) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(t.box) }

// roundDuration keeps a duration readable: ms below a second, else 0.1 s.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
