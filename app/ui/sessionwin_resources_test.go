package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

func TestResourcePanelShowsStats(t *testing.T) {
	test.NewTempApp(t)
	p := newResourcePanel()
	p.setSession(store.Session{Limits: store.Limits{CPUs: 2, MemoryMiB: 1024, DiskGiB: 8, Network: true},
		Timings: map[string]time.Duration{"clone": 120 * time.Millisecond, "boot": 1500 * time.Millisecond, "ready": 300 * time.Millisecond, "agent": 40 * time.Millisecond}})
	if !strings.Contains(p.limits.Text, "2 vCPUs") || !strings.Contains(p.limits.Text, "1.0 GiB") {
		t.Errorf("limits %q", p.limits.Text)
	}
	t0 := time.Now()
	p.addStats(t0, session.Stats{CPU: 50, MemUsed: 256 << 20, MemTotal: 1 << 30, DiskUsed: 1 << 30, DiskTotal: 8 << 30,
		WSUsed: 10 << 30, WSTotal: 100 << 30, Procs: 7, HostRSS: 300 << 20, HostCPUSec: 10})
	p.addStats(t0.Add(2*time.Second), session.Stats{CPU: 25, MemUsed: 512 << 20, MemTotal: 1 << 30, DiskUsed: 1 << 30, DiskTotal: 8 << 30,
		WSUsed: 10 << 30, WSTotal: 100 << 30, Procs: 9, HostRSS: 310 << 20, HostCPUSec: 11})
	cases := []struct {
		g    *sbwidget.Gauge
		frac float64
		text string
	}{
		{p.cpu, 0.25, "25 % of 2 vCPUs"},
		{p.mem, 0.5, "512.0 MiB of 1.0 GiB (50 %)"},
		{p.disk, 0.125, "1.0 GiB of 8.0 GiB (12 %)"},
		{p.ws, 0.1, "10.0 GiB of 100.0 GiB (10 %)"},
		{p.procs, 0, "9"},
	}
	for _, c := range cases {
		if c.g.Fraction() < c.frac-0.001 || c.g.Fraction() > c.frac+0.001 || c.g.Text() != c.text {
			t.Errorf("%s: %.3f %q, want %.3f %q", c.g.Title(), c.g.Fraction(), c.g.Text(), c.frac, c.text)
		}
		if c.g.Spark().Len() != 2 {
			t.Errorf("%s sparkline has %d samples", c.g.Title(), c.g.Spark().Len())
		}
	}
	if !strings.Contains(p.rss.Text(), "310.0 MiB resident") || !strings.Contains(p.rss.Text(), "50 % of a host core") {
		t.Errorf("host line %q", p.rss.Text())
	}
	if p.timing.text("boot") != "1.5s" || p.timing.text("shutdown") != "—" {
		t.Errorf("timings boot %q shutdown %q", p.timing.text("boot"), p.timing.text("shutdown"))
	}
	if got := p.timing.rows["boot"].Value; got != 1 {
		t.Errorf("the longest phase's bar is at %v", got)
	}
	if !strings.Contains(p.timing.total.Text, "2s") {
		t.Errorf("total %q", p.timing.total.Text)
	}
}
