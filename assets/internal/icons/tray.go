package icons

import (
	"fmt"
	"image"
	"image/color"
)

// State is what the tray icon says about the sessions as a whole.
type State int

// The tray states, in the order their files are listed.
const (
	// Idle: no session is running. The glyph in outline.
	Idle State = iota
	// Running: at least one session is working. The glyph filled.
	Running
	// Attention: a session waits for input, has finished or has failed.
	// The outline glyph with a badge at its top right.
	Attention
)

// States lists every State, in order.
func States() []State { return []State{Idle, Running, Attention} }

// String is the state's name as used in file names: "idle", "running",
// "attention".
func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Running:
		return "running"
	case Attention:
		return "attention"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// TraySize is the side of a tray icon in pixels: the 22-point menu bar
// height of macOS at 2×; Linux trays scale it to their panel.
const TraySize = 44

// trayArt is the tray glyph on its 44-unit grid: a box (the VM) with a
// ">_" prompt in it, above a wave (the sandbar's water line). Strokes are
// 3.5 units, 1.75 points on a Retina menu bar, like the system's own
// symbols.
type trayArt struct {
	stroke  float64
	boxC    vec
	boxH    vec
	boxR    float64
	prompt  [][2]vec
	promptW float64
	wave    wave
	badgeC  vec
	badgeR  float64
	// badgeGap is the clear ring between the badge and the glyph.
	badgeGap float64
}

func newTrayArt() trayArt {
	return trayArt{
		stroke:   3.5,
		boxC:     vec{22, 16},
		boxH:     vec{12, 12},
		boxR:     6,
		prompt:   [][2]vec{{{16.5, 11.5}, {20.5, 15.5}}, {{20.5, 15.5}, {16.5, 19.5}}, {{23.5, 20}, {27.5, 20}}},
		promptW:  3,
		wave:     newWave(5.75, 38.25, 35.5, 2.25, 16, 0, 64),
		badgeC:   vec{35, 9},
		badgeR:   6,
		badgeGap: 2.5,
	}
}

// Tray draws the tray icon for a state. A template icon is black on
// transparent, for macOS to recolour (only its alpha counts); otherwise
// the glyph is a mid grey that reads on light and dark panels alike and
// the attention badge is orange.
func Tray(s State, template bool) *image.NRGBA {
	// Mid grey has about the same contrast, 3.5:1, with a light panel
	// (#eeeeee) as with a dark one (#2b2b2b).
	glyph := solid(color.NRGBA{0x80, 0x80, 0x80, 0xff})
	badge := solid(color.NRGBA{0xff, 0x8c, 0x1a, 0xff})
	if template {
		black := solid(color.NRGBA{0, 0, 0, 0xff})
		glyph, badge = black, black
	}
	art := newTrayArt()
	return rasterize(TraySize, TraySize, func(p vec) paint {
		if s == Attention {
			d := circle(p, art.badgeC, art.badgeR)
			if d <= 0 {
				return badge
			}
			if d <= art.badgeGap {
				return paint{}
			}
		}
		if art.inked(p, s == Running) {
			return glyph
		}
		return paint{}
	})
}

// inked reports whether p is inked: the box in outline, or filled with
// the prompt cut out of it, and the wave.
func (a trayArt) inked(p vec, filled bool) bool {
	if a.wave.dist(p, a.stroke) <= a.stroke/2 {
		return true
	}
	box := roundRect(p, a.boxC, a.boxH, a.boxR)
	if box > 0 {
		return false
	}
	prompt := false
	for _, s := range a.prompt {
		if segment(p, s[0], s[1]) <= a.promptW/2 {
			prompt = true
			break
		}
	}
	if filled {
		return !prompt
	}
	return box >= -a.stroke || prompt
}
