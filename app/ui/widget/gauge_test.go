package widget

import (
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
)

func TestSparklineKeepsTwoMinutes(t *testing.T) {
	test.NewTempApp(t)
	s := NewSparkline("")
	s.Resize(fyne.NewSize(120, 30))
	t0 := time.Now()
	for i := 0; i < 100; i++ { // 200 s of samples every 2 s
		s.Add(t0.Add(time.Duration(i)*2*time.Second), float64(i))
	}
	if n := s.Len(); n != 61 {
		t.Errorf("%d samples kept, want the last 2 minutes (61)", n)
	}
	r := test.TempWidgetRenderer(t, s).(*sparkRenderer)
	var shown []*canvas.Line
	for _, l := range r.lines {
		if l.Visible() {
			shown = append(shown, l)
		}
	}
	if len(shown) != 60 {
		t.Fatalf("%d segments drawn for 61 samples", len(shown))
	}
	last := shown[len(shown)-1]
	if last.Position2.X < 115 || last.Position2.Y > 5 {
		t.Errorf("the newest, highest sample is drawn at %v, want the top right", last.Position2)
	}
	if first := shown[0]; first.Position1.X > 5 {
		t.Errorf("the oldest sample is drawn at %v, want the left edge", first.Position1)
	}
	for i := 0; i < 1000; i++ { // a burst never grows it past its bound
		s.Add(t0.Add(200*time.Second+time.Duration(i)*time.Millisecond), 1)
	}
	if s.Len() > sparkMaxPoints {
		t.Errorf("%d samples, bound %d", s.Len(), sparkMaxPoints)
	}
}
