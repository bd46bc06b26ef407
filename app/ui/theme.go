package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// sandbarTheme is Fyne's default theme with text colours a person can
// read: every colour Sandbar draws text in reaches WCAG AA (4.5:1)
// against every surface it is drawn on, in the light and the dark
// variant (theme_test.go computes the ratios).
//
// Fyne's defaults fall short where it matters most here: secondary
// text (LowImportance labels, drawn in the "disabled" colour) is 1.3:1
// to 1.6:1, placeholders 3.2:1 in light, the primary blue 3.3:1 on dark
// menus and buttons, and green, amber and red text 1.3:1 to 3.7:1 on
// white. Everything else (sizes, fonts, icons, focus and selection
// colours) is the default theme's.
type sandbarTheme struct{ fyne.Theme }

// Theme returns Sandbar's theme; New sets it on the app.
func Theme() fyne.Theme { return sandbarTheme{theme.DefaultTheme()} }

func (t sandbarTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	p := lightPalette
	if v == theme.VariantDark {
		p = darkPalette
	}
	if c, ok := p[n]; ok {
		return c
	}
	return t.Theme.Color(n, v)
}

func rgb(hex uint32) color.NRGBA {
	return color.NRGBA{R: uint8(hex >> 16), G: uint8(hex >> 8), B: uint8(hex), A: 0xff}
}

// The light variant's text is at most as light as L = 0.16, so that it
// reads at 4.5:1 on its lightest-but-one surface (inputs, #f3f3f3); the
// filled buttons (primary, success, warning, error) keep white text,
// which those darker colours carry at 5:1 or more.
var lightPalette = map[fyne.ThemeColorName]color.Color{
	theme.ColorNameForeground:  rgb(0x333333),
	theme.ColorNamePlaceHolder: rgb(0x6b6b6b),
	// Fyne draws LowImportance labels (paths, subtitles, hints) in the
	// disabled colour, so it is a readable secondary grey, dark enough
	// for a selected row's blue tint too; disabled buttons still differ
	// by their background and from Foreground.
	theme.ColorNameDisabled:            rgb(0x5c5c5c),
	theme.ColorNamePrimary:             rgb(0x1a5fd6),
	theme.ColorNameHyperlink:           rgb(0x1a5fd6),
	theme.ColorNameSuccess:             rgb(0x1b7330),
	theme.ColorNameWarning:             rgb(0x8a5300),
	theme.ColorNameError:               rgb(0xc62828),
	theme.ColorNameForegroundOnPrimary: rgb(0xffffff),
	theme.ColorNameForegroundOnSuccess: rgb(0xffffff),
	theme.ColorNameForegroundOnWarning: rgb(0xffffff),
	theme.ColorNameForegroundOnError:   rgb(0xffffff),
}

// The dark variant's text is at least as light as L = 0.28, so that it
// reads at 4.5:1 on its lightest surface (menus and buttons, #28292e).
// Colours that light cannot carry white text at 4.5:1, so the filled
// buttons have near-black text, as Fyne's dark success, warning and
// error buttons already do.
var darkPalette = map[fyne.ThemeColorName]color.Color{
	theme.ColorNameForeground:          rgb(0xf3f3f3),
	theme.ColorNamePlaceHolder:         rgb(0xb2b2b2),
	theme.ColorNameDisabled:            rgb(0x9a9a9a),
	theme.ColorNamePrimary:             rgb(0x6ea8ff),
	theme.ColorNameHyperlink:           rgb(0x6ea8ff),
	theme.ColorNameSuccess:             rgb(0x43d13a),
	theme.ColorNameWarning:             rgb(0xff9800),
	theme.ColorNameError:               rgb(0xff6b60),
	theme.ColorNameForegroundOnPrimary: rgb(0x171718),
	theme.ColorNameForegroundOnSuccess: rgb(0x171718),
	theme.ColorNameForegroundOnWarning: rgb(0x171718),
	theme.ColorNameForegroundOnError:   rgb(0x171718),
}
