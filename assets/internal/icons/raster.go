package icons

import (
	"image"
	"image/color"
	"runtime"
	"sync"
)

// supersample is the number of samples per pixel along each axis.
const supersample = 4

// paint is a premultiplied colour with channels in [0, 1]; the zero
// paint is transparent.
type paint struct{ r, g, b, a float64 }

// solid is c, fully opaque, as a paint.
func solid(c color.NRGBA) paint {
	return paint{float64(c.R) / 255, float64(c.G) / 255, float64(c.B) / 255, 1}
}

// fade scales p's opacity by k in [0, 1].
func (p paint) fade(k float64) paint {
	return paint{p.r * k, p.g * k, p.b * k, p.a * k}
}

// over composites p over q (Porter–Duff source-over).
func (p paint) over(q paint) paint {
	k := 1 - p.a
	return paint{p.r + q.r*k, p.g + q.g*k, p.b + q.b*k, p.a + q.a*k}
}

// mix is the opaque colour a fraction t of the way from a to b, with t
// clamped to [0, 1].
func mix(a, b color.NRGBA, t float64) paint {
	t = clamp01(t)
	pa, pb := solid(a), solid(b)
	return paint{
		pa.r + (pb.r-pa.r)*t,
		pa.g + (pb.g-pa.g)*t,
		pa.b + (pb.b-pa.b)*t,
		1,
	}
}

// scene gives the paint at a point of a design grid.
type scene func(p vec) paint

// rasterize renders a scene drawn on a design×design grid into a
// size×size image: each pixel is the mean of supersample² point samples
// taken at the centres of its sub-pixels. Rows are shared among
// goroutines; each pixel depends only on its own samples, so the result
// is the same however the rows are shared.
func rasterize(size int, design float64, s scene) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	scale := design / float64(size)
	const n = supersample * supersample

	rows := make(chan int, size)
	for y := range size {
		rows <- y
	}
	close(rows)

	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), size) {
		wg.Go(func() {
			for y := range rows {
				for x := range size {
					var sum paint
					for j := range supersample {
						sy := (float64(y*supersample+j) + 0.5) / supersample * scale
						for i := range supersample {
							sx := (float64(x*supersample+i) + 0.5) / supersample * scale
							c := s(vec{sx, sy})
							sum = paint{sum.r + c.r, sum.g + c.g, sum.b + c.b, sum.a + c.a}
						}
					}
					img.SetNRGBA(x, y, unpremultiply(sum.fade(1.0/n)))
				}
			}
		})
	}
	wg.Wait()
	return img
}

// unpremultiply turns a premultiplied paint into the straight-alpha
// 8-bit colour a PNG stores.
func unpremultiply(p paint) color.NRGBA {
	a := to8(p.a)
	if a == 0 {
		return color.NRGBA{}
	}
	return color.NRGBA{to8(p.r / p.a), to8(p.g / p.a), to8(p.b / p.a), a}
}

// to8 maps [0, 1] to 0..255, rounding to nearest.
func to8(v float64) uint8 {
	return uint8(clamp01(v)*255 + 0.5)
}

func clamp01(v float64) float64 {
	return max(0, min(1, v))
}
