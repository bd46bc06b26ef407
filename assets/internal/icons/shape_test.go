package icons

import (
	"math"
	"testing"
)

func TestDistances(t *testing.T) {
	flat := newWave(0, 10, 5, 0, 10, 0, 10)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"roundRect centre", roundRect(vec{0, 0}, vec{0, 0}, vec{4, 2}, 1), -2},
		{"roundRect side", roundRect(vec{6, 0}, vec{0, 0}, vec{4, 2}, 1), 2},
		{"roundRect corner", roundRect(vec{4, 2}, vec{0, 0}, vec{4, 2}, 1), math.Sqrt2 - 1},
		{"circle", circle(vec{3, 4}, vec{0, 0}, 2), 3},
		{"segment middle", segment(vec{5, 3}, vec{0, 0}, vec{10, 0}), 3},
		{"segment cap", segment(vec{13, 4}, vec{0, 0}, vec{10, 0}), 5},
		{"wave above", flat.dist(vec{5, 3}, 10), 2},
		{"wave cap", flat.dist(vec{13, 9}, 10), 5},
		{"wave out of reach", flat.dist(vec{5, 40}, 10), 10},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if !flat.below(vec{5, 6}) || flat.below(vec{5, 4}) || !flat.below(vec{-3, 6}) {
		t.Error("below is wrong about a flat wave at y = 5")
	}
	// On the diagonal the edge is at 2^-⅕ ≈ 0.87 of the half-side.
	if !squircle(vec{8.5, 8.5}, vec{0, 0}, 10) || squircle(vec{9, 9}, vec{0, 0}, 10) || !squircle(vec{0, 9.9}, vec{0, 0}, 10) {
		t.Error("squircle is wrong about its corner or side")
	}
}

func TestRasterizeCoverage(t *testing.T) {
	// A half-plane edge through the middle of pixel 1 covers half its
	// samples; pixels wholly on either side are opaque or transparent.
	img := rasterize(3, 3, func(p vec) paint {
		if p.x < 1.5 {
			return paint{0, 0, 0, 1}
		}
		return paint{}
	})
	for x, want := range []uint8{255, 128, 0} {
		if got := img.NRGBAAt(x, 0).A; got != want {
			t.Errorf("pixel %d alpha %d, want %d", x, got, want)
		}
	}
}
