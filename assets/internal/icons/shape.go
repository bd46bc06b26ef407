package icons

import "math"

// vec is a point or offset in a design grid; y grows downwards.
type vec struct{ x, y float64 }

func (a vec) sub(b vec) vec { return vec{a.x - b.x, a.y - b.y} }
func (a vec) add(b vec) vec { return vec{a.x + b.x, a.y + b.y} }

func (a vec) len() float64 { return math.Sqrt(a.x*a.x + a.y*a.y) }

// Distances below are signed: negative inside a shape, positive
// outside, zero on its edge.

// roundRect is the distance from p to the rectangle centred at c with
// half-extents h and corner radius r.
func roundRect(p, c, h vec, r float64) float64 {
	q := vec{math.Abs(p.x-c.x) - h.x + r, math.Abs(p.y-c.y) - h.y + r}
	out := vec{max(q.x, 0), max(q.y, 0)}
	return out.len() + min(max(q.x, q.y), 0) - r
}

// circle is the distance from p to the disc centred at c with radius r.
func circle(p, c vec, r float64) float64 {
	return p.sub(c).len() - r
}

// segment is the distance from p to the segment from a to b: a stroke
// of width w along it, with round caps, is segment(...) <= w/2.
func segment(p, a, b vec) float64 {
	pa, ba := p.sub(a), b.sub(a)
	t := clamp01((pa.x*ba.x + pa.y*ba.y) / (ba.x*ba.x + ba.y*ba.y))
	return vec{pa.x - ba.x*t, pa.y - ba.y*t}.len()
}

// squircle reports whether p lies inside the superellipse
// |x/h|⁵ + |y/h|⁵ <= 1 centred at c: the continuous-corner rounded
// square that macOS icons since Big Sur are cut to.
func squircle(p, c vec, h float64) bool {
	u, v := math.Abs(p.x-c.x)/h, math.Abs(p.y-c.y)/h
	u2, v2 := u*u, v*v
	return u2*u2*u+v2*v2*v <= 1
}

// smoothstep is 0 below e0, 1 above e1 and a smooth ramp between.
func smoothstep(e0, e1, x float64) float64 {
	t := clamp01((x - e0) / (e1 - e0))
	return t * t * (3 - 2*t)
}

// wave is the sine curve y = cy + amp·sin(2π(x−x0)/period + phase) for
// x in [x0, x1], flattened into a polyline of evenly spaced points so
// that distances to it are exact for the polyline.
type wave struct {
	x0, step   float64
	minY, maxY float64
	pts        []vec
}

// newWave flattens the curve into n segments.
func newWave(x0, x1, cy, amp, period, phase float64, n int) wave {
	w := wave{x0: x0, step: (x1 - x0) / float64(n), minY: math.Inf(1), maxY: math.Inf(-1), pts: make([]vec, n+1)}
	for i := range w.pts {
		x := x0 + w.step*float64(i)
		y := cy + amp*math.Sin(2*math.Pi*(x-x0)/period+phase)
		w.pts[i] = vec{x, y}
		w.minY, w.maxY = min(w.minY, y), max(w.maxY, y)
	}
	return w
}

// dist is the distance from p to the curve, or reach where that is
// less: only segments within reach of p horizontally are looked at. A
// stroke of width w along the curve, with round caps, is
// dist(p, w) <= w/2.
func (w wave) dist(p vec, reach float64) float64 {
	if p.y < w.minY-reach || p.y > w.maxY+reach {
		return reach
	}
	last := len(w.pts) - 2
	lo := max(int(math.Floor((p.x-reach-w.x0)/w.step)), 0)
	hi := min(int(math.Floor((p.x+reach-w.x0)/w.step)), last)
	d := math.Inf(1)
	for i := lo; i <= hi; i++ {
		d = min(d, segment(p, w.pts[i], w.pts[i+1]))
	}
	return min(d, reach)
}

// below reports whether p lies below the curve (y greater than the
// polyline's at p.x), extending its end segments flat outside [x0, x1].
func (w wave) below(p vec) bool {
	i := max(0, min(int(math.Floor((p.x-w.x0)/w.step)), len(w.pts)-2))
	a, b := w.pts[i], w.pts[i+1]
	t := clamp01((p.x - a.x) / (b.x - a.x))
	return p.y > a.y+(b.y-a.y)*t
}
