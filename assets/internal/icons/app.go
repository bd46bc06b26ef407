package icons

import (
	"image"
	"image/color"
)

// AppDesign is the side of the app icon's design grid, which is also the
// size of the master icon.png.
const AppDesign = 1024

// App draws the app icon at size×size pixels.
//
// macOS Big Sur layout on a 1024 grid: an 824-unit continuous-corner
// square centred with a 100-unit margin, and a soft shadow below it. In
// it, shallow teal water over a sandbar whose edge is a wave with a line
// of foam, and on the sand a white box (the VM) with a ">_" prompt.
func App(size int) *image.NRGBA {
	var (
		center = vec{512, 512}
		half   = 412.0

		waterTop    = color.NRGBA{0x1f, 0x7a, 0x85, 0xff}
		waterBottom = color.NRGBA{0x5f, 0xc4, 0xbb, 0xff}
		sandTop     = color.NRGBA{0xf4, 0xe3, 0xbb, 0xff}
		sandBottom  = color.NRGBA{0xdd, 0xbb, 0x80, 0xff}
		foam        = solid(color.NRGBA{0xff, 0xff, 0xff, 0xff})
		boxFill     = solid(color.NRGBA{0xff, 0xfc, 0xf5, 0xff})
		ink         = solid(color.NRGBA{0x1f, 0x7a, 0x85, 0xff})
		shadow      = solid(color.NRGBA{0, 0, 0, 0xff})

		shore = newWave(0, 1024, 660, 22, 560, 0.6, 256)
		// The foam rides just above the shore, overlapping the sand
		// by two units so that no seam shows between them.
		foamLine   = newWave(0, 1024, 650, 22, 560, 0.6, 256)
		foamW      = 20.0
		boxC       = vec{512, 500}
		boxH       = vec{180, 180}
		boxR       = 64.0
		promptW    = 42.0
		prompt     = [][2]vec{{{424, 438}, {494, 500}}, {{494, 500}, {424, 562}}, {{542, 562}, {604, 562}}}
		iconShadow = vec{0, 12}
		boxShadow  = vec{0, 18}
	)
	return rasterize(size, AppDesign, func(p vec) paint {
		if !squircle(p, center, half) {
			// The icon's drop shadow, from a rounded square close
			// enough to the squircle once blurred.
			d := roundRect(p.sub(iconShadow), center, vec{half, half}, 190)
			return shadow.fade(0.3 * (1 - smoothstep(-8, 28, d)))
		}
		var c paint
		if shore.below(p) {
			c = mix(sandTop, sandBottom, (p.y-640)/(924-640))
		} else {
			c = mix(waterTop, waterBottom, (p.y-100)/(680-100))
		}
		if foamLine.dist(p, foamW) <= foamW/2 {
			c = foam
		}
		d := roundRect(p, boxC, boxH, boxR)
		if d > 0 {
			s := roundRect(p.sub(boxShadow), boxC, boxH, boxR)
			return shadow.fade(0.22 * (1 - smoothstep(-12, 40, s))).over(c)
		}
		for _, s := range prompt {
			if segment(p, s[0], s[1]) <= promptW/2 {
				return ink
			}
		}
		return boxFill
	})
}
