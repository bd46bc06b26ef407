package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// series is the runs of one measured quantity, in one unit.
type series struct {
	// Metric says what was measured, for people.
	Metric string
	// Key names it in b.ReportMetric: Key-median-Unit and so on.
	Key  string
	Unit string
	vals []float64
}

func (s *series) add(v float64) { s.vals = append(s.vals, v) }

// summary is a series reduced to what the table shows.
type summary struct {
	Median, Min, Max float64
	Runs             int
}

// summarize returns the median (the mean of the middle two for an even
// count), min and max of vals; all zero for none.
func summarize(vals []float64) summary {
	if len(vals) == 0 {
		return summary{}
	}
	v := slices.Clone(vals)
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return summary{Median: med, Min: v[0], Max: v[len(v)-1], Runs: len(v)}
}

// format renders v in unit with the precision the unit deserves.
func format(v float64, unit string) string {
	switch {
	case unit == "x":
		return fmt.Sprintf("%.2f×", v)
	case unit == "ms" && v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case unit == "MB/s" && v < 100:
		return fmt.Sprintf("%.1f MB/s", v)
	default:
		return fmt.Sprintf("%.0f %s", v, unit)
	}
}

// line is the human line of one series.
func line(accel string, s *series) string {
	sum := summarize(s.vals)
	return fmt.Sprintf("[%s] %-58s median %-11s min %-11s max %-11s runs %d",
		accel, s.Metric, format(sum.Median, s.Unit), format(sum.Min, s.Unit), format(sum.Max, s.Unit), sum.Runs)
}

// row is one line of the Markdown table.
type row struct {
	Metric, Unit string
	summary
}

// table collects the run's rows in the order they were measured.
type table struct {
	mu   sync.Mutex
	rows []row
}

// add records s; a series measured again (the same Metric) replaces the
// earlier row.
func (t *table) add(accel string, s *series) {
	r := row{Metric: s.Metric + " [" + accel + "]", Unit: s.Unit, summary: summarize(s.vals)}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.rows {
		if t.rows[i].Metric == r.Metric {
			t.rows[i] = r
			return
		}
	}
	t.rows = append(t.rows, r)
}

func (t *table) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rows)
}

// markdown writes the table under a heading and the lines of header.
func (t *table) markdown(w io.Writer, heading string, header []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w, "\n### %s\n\n", heading)
	for _, h := range header {
		fmt.Fprintf(w, "%s  \n", h)
	}
	fmt.Fprintf(w, "\n| metric | median | min | max | runs |\n|---|---:|---:|---:|---:|\n")
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d |\n", r.Metric,
			format(r.Median, r.Unit), format(r.Min, r.Unit), format(r.Max, r.Unit), r.Runs)
	}
}

// cpuModel is the host CPU's name from /proc/cpuinfo, or "unknown CPU".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// machine is the host in one line: CPU model, cores and accelerator.
func machine(accel string) string {
	return fmt.Sprintf("%s, %d cores, %s", cpuModel(), runtime.NumCPU(), accel)
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []float64
		want summary
	}{
		{nil, summary{}},
		{[]float64{5}, summary{5, 5, 5, 1}},
		{[]float64{3, 1, 2}, summary{2, 1, 3, 3}},
		{[]float64{4, 1, 3, 2}, summary{2.5, 1, 4, 4}},
	}
	for _, tt := range tests {
		if got := summarize(tt.in); got != tt.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	in := []float64{3, 1, 2}
	summarize(in)
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Errorf("summarize reordered its input: %v", in)
	}
}

func TestTable(t *testing.T) {
	var tb table
	tb.add("tcg", &series{Metric: "boot → system:ready", Unit: "ms", vals: []float64{5600, 5400, 6100}})
	tb.add("tcg", &series{Metric: "ready / floor", Unit: "x", vals: []float64{1.9}})
	tb.add("tcg", &series{Metric: "boot → system:ready", Unit: "ms", vals: []float64{700}})
	var b strings.Builder
	tb.markdown(&b, "Sandbar VM benchmarks", []string{"machine: test"})
	out := b.String()
	for _, want := range []string{
		"| metric | median | min | max | runs |",
		"| boot → system:ready [tcg] | 700 ms | 700 ms | 700 ms | 1 |",
		"| ready / floor [tcg] | 1.90× | 1.90× | 1.90× | 1 |",
		"machine: test",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "system:ready") != 1 {
		t.Errorf("a re-measured series should replace its row:\n%s", out)
	}
	if got := line("kvm", &series{Metric: "exec true", Unit: "ms", vals: []float64{1.234}}); !strings.HasPrefix(got, "[kvm] exec true") || !strings.Contains(got, "1.23 ms") {
		t.Errorf("line = %q", got)
	}
}
