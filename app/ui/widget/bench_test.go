package widget

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/ui/internal/uitest"
)

// BenchmarkLogView10Sessions is the session windows' load when ten
// sessions each log 1,000 lines a second: ten log views in test windows,
// fed for 5 s from one goroutine while the benchmark's goroutine plays
// the UI goroutine. It reports how long a line takes from Append to the
// list's data (median, p99), refreshes a second per view (bounded at
// 30), and the share of the UI goroutine the views use; then it feeds
// 1,000,000 lines in all and reports the heap, which stays at what the
// full rings cost.
func BenchmarkLogView10Sessions(b *testing.B) {
	const (
		views   = 10
		rate    = 1000 // lines a second per view
		feedFor = 5 * time.Second
		tick    = 10 * time.Millisecond
		total   = 1_000_000
	)
	for i := 0; i < b.N; i++ {
		a := test.NewTempApp(b)
		q := uitest.NewQueue()
		vs := make([]*LogView, views)
		at := make([][]time.Time, views) // when each seq was appended
		var lat []time.Duration
		shown := make([]int64, views)
		for j := range vs {
			v := NewLogView(DefaultLogCapacity, "")
			v.Post = q.Post
			w := a.NewWindow(fmt.Sprint("session ", j))
			w.SetContent(v)
			w.Resize(fyne.NewSize(800, 600))
			at[j] = make([]time.Time, int(feedFor/time.Second)*rate+2*rate)
			j := j
			v.onFlush = func(int) {
				now := time.Now()
				last := v.ring.at(v.ring.next - 1).seq
				for s := shown[j] + 1; s <= last && int(s) < len(at[j]); s++ {
					lat = append(lat, now.Sub(at[j][s]))
				}
				shown[j] = last
			}
			vs[j] = v
		}

		// 5 s of 1,000 lines a second per view.
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			t := time.NewTicker(tick)
			defer t.Stop()
			per := int(rate * tick / time.Second)
			seq := int64(0)
			start := time.Now()
			for time.Since(start) < feedFor {
				<-t.C
				batch := make([]LogLine, per)
				for j, v := range vs {
					for k := range batch {
						s := seq + int64(k) + 1
						at[j][s] = time.Now()
						batch[k] = LogLine{Seq: s, Stream: "stdout", Time: at[j][s], Text: benchLine(j, s)}
					}
					v.Append(batch...)
				}
				seq += int64(per)
			}
		}()
		b.ResetTimer()
		start := time.Now()
		var busy time.Duration
		runUI := func() {
			t0 := time.Now()
			q.Drain()
			busy += time.Since(t0)
		}
	feeding:
		for {
			select {
			case <-done:
				break feeding
			case <-q.Wake():
				runUI()
			}
		}
		wg.Wait()
		// The last flushes: each is posted, so wake on the queue.
		allIdle := func() bool {
			for _, v := range vs {
				if !logIdle(v) {
					return false
				}
			}
			return true
		}
		last := time.NewTimer(time.Second)
		for runUI(); !allIdle(); runUI() {
			select {
			case <-q.Wake():
			case <-last.C:
				b.Fatal("after 1s: the views did not flush the last lines")
			}
		}
		last.Stop()
		wall := time.Since(start)
		b.StopTimer()

		refreshes, most := 0, 0
		for _, v := range vs {
			refreshes += v.refreshes
			most = max(most, v.refreshes)
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
		fedLines := 0
		for _, v := range vs {
			fedLines += v.Len()
		}
		b.ReportMetric(float64(pct(0.5).Microseconds())/1000, "latency-p50-ms")
		b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "latency-p99-ms")
		b.ReportMetric(float64(refreshes)/float64(views)/wall.Seconds(), "refreshes/s/view")
		b.ReportMetric(float64(busy)/float64(wall)*100, "ui-busy-%")
		b.Logf("update latency, append to list data: median %v, p99 %v, max %v (%d lines)", pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond), len(lat))
		b.Logf("refreshes: %.1f a second per view (busiest view %.1f; bound 30) for %d lines a second per view", float64(refreshes)/float64(views)/wall.Seconds(), float64(most)/wall.Seconds(), rate)
		b.Logf("UI goroutine busy with the views: %.1f%% of %v", float64(busy)/float64(wall)*100, wall.Round(time.Millisecond))

		// Fill every ring, then feed the rest of 1,000,000 lines: the heap
		// stays what the full rings cost.
		seq := int64(len(at[0]))
		feed := func(lines int) {
			batch := make([]LogLine, 1000)
			for n := 0; n < lines; n += len(batch) {
				for j, v := range vs {
					for k := range batch {
						batch[k] = LogLine{Seq: seq + int64(k), Stream: "stdout", Time: time.Now(), Text: benchLine(j, seq+int64(k))}
					}
					v.Append(batch...)
				}
				seq += int64(len(batch))
				q.Drain()
			}
			q.WaitFor(b, 5*time.Second, "the views flushing the fed lines", allIdle)
		}
		heap := func() uint64 {
			var m runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapInuse
		}
		fed := fedLines
		empty := heap() // the views with a few thousand lines each, fonts and theme
		feed(DefaultLogCapacity)
		fed += DefaultLogCapacity * views
		full := heap()
		feed(total/views - fed/views)
		fed = total
		after := heap()
		held := 0
		for _, v := range vs {
			held += v.Len()
		}
		b.ReportMetric(float64(after)/(1<<20), "heap-after-1M-MiB")
		b.ReportMetric(float64(after)/float64(full), "heap-ratio")
		b.ReportMetric(float64(full-min(empty, full))/float64(held-fedLines), "B/line-held")
		b.Logf("heap in use: %.1f MiB with every ring full (%d lines held, %.0f B a line), %.1f MiB after %s lines (%.2f×)",
			float64(full)/(1<<20), held, float64(full-min(empty, full))/float64(held-fedLines), float64(after)/(1<<20), formatCount(int64(fed)), float64(after)/float64(full))
		for _, v := range vs {
			v.Close()
		}
	}
}

// benchLine is a log line of typical length (about 90 bytes).
func benchLine(view int, seq int64) string {
	return fmt.Sprintf("session %d: step %d: compiling package sandbar/app/ui (cached: false, 12 files, 3 deps)", view, seq)
}
