package ui

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// resourcePanel is the session window's Resources tab: the limits, live
// use as gauges with sparklines, and where the time went at start.
type resourcePanel struct {
	limits  *widget.Label
	cpu     *sbwidget.Gauge
	mem     *sbwidget.Gauge
	disk    *sbwidget.Gauge
	ws      *sbwidget.Gauge
	procs   *sbwidget.Gauge
	rss     *sbwidget.Gauge
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
		cpu:    sbwidget.NewGauge("CPU", 100), mem: sbwidget.NewGauge("Memory", 0), disk: sbwidget.NewGauge("Scratch disk", 0),
		ws: sbwidget.NewGauge("Workspace disk", 0), procs: sbwidget.NewGauge("Processes", 0), rss: sbwidget.NewGauge("VM on the host", 0),
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
	p.mem.Spark().Max = float64(st.MemTotal)
	p.mem.Set(at, float64(st.MemUsed), float64(st.MemTotal), usedOf(st.MemUsed, st.MemTotal), float64(st.MemUsed))
	p.disk.Spark().Max = float64(st.DiskTotal)
	p.disk.Set(at, float64(st.DiskUsed), float64(st.DiskTotal), usedOf(st.DiskUsed, st.DiskTotal), float64(st.DiskUsed))
	p.ws.Spark().Max = float64(st.WSTotal)
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
	p.rss.Spark().Max = float64(p.memLimit)
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
func byteSize(n uint64) string { return doctor.HumanBytes(int64(n)) }

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
		t.texts[ph.key] = sbwidget.RoundDuration(d).String()
		if longest > 0 {
			bar.SetValue(float64(d) / float64(longest))
		} else {
			bar.SetValue(0)
		}
	}
	if start > 0 {
		t.total.SetText("From Start to a working agent: " + sbwidget.RoundDuration(start).String())
	} else {
		t.total.SetText("No timings yet.")
	}
}

// text is what the bar of phase key shows.
func (t *timingBars) text(key string) string { return t.texts[key] }

// CreateRenderer implements fyne.Widget.
func (t *timingBars) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(t.box) }
