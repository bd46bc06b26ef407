package ui

import (
	"image/color"
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
)

// luminance is WCAG 2's relative luminance of an opaque colour.
func luminance(c color.Color) float64 {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	lin := func(v uint8) float64 {
		x := float64(v) / 255
		if x <= 0.03928 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(n.R) + 0.7152*lin(n.G) + 0.0722*lin(n.B)
}

// contrast is WCAG 2's contrast ratio of two opaque colours, 1 to 21.
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// over is c drawn over the opaque bg (a selection's tint, say).
func over(c, bg color.Color) color.Color {
	f := color.NRGBAModel.Convert(c).(color.NRGBA)
	b := color.NRGBAModel.Convert(bg).(color.NRGBA)
	a := float64(f.A) / 255
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x)*a + float64(y)*(1-a))) }
	return color.NRGBA{R: mix(f.R, b.R), G: mix(f.G, b.G), B: mix(f.B, b.B), A: 0xff}
}

// TestThemeContrast checks, from the theme itself, that every colour
// Sandbar's windows draw text in reaches WCAG AA (4.5:1) on every surface
// that text sits on, in both variants: labels of every importance
// (LowImportance ones are drawn in "disabled"), placeholders and form
// hints, hyperlinks, the diff's and the log's coloured lines, text in
// menus, dialogs, inputs, banners and selected list rows, and the text
// of filled buttons on their fill.
func TestThemeContrast(t *testing.T) {
	const aa = 4.5
	th := Theme()
	text := []fyne.ThemeColorName{
		theme.ColorNameForeground, theme.ColorNamePlaceHolder, theme.ColorNameDisabled,
		theme.ColorNamePrimary, theme.ColorNameHyperlink,
		theme.ColorNameSuccess, theme.ColorNameWarning, theme.ColorNameError,
	}
	surfaces := []fyne.ThemeColorName{
		theme.ColorNameBackground, theme.ColorNameInputBackground, theme.ColorNameOverlayBackground,
		theme.ColorNameMenuBackground, theme.ColorNameHeaderBackground, theme.ColorNameButton,
	}
	// Filled buttons: their text on their fill.
	filled := [][2]fyne.ThemeColorName{
		{theme.ColorNameForegroundOnPrimary, theme.ColorNamePrimary},
		{theme.ColorNameForegroundOnSuccess, theme.ColorNameSuccess},
		{theme.ColorNameForegroundOnWarning, theme.ColorNameWarning},
		{theme.ColorNameForegroundOnError, theme.ColorNameError},
		{theme.ColorNameDisabled, theme.ColorNameDisabledButton},
	}
	for _, v := range []struct {
		name    string
		variant fyne.ThemeVariant
	}{{"light", theme.VariantLight}, {"dark", theme.VariantDark}} {
		t.Run(v.name, func(t *testing.T) {
			c := func(n fyne.ThemeColorName) color.Color { return th.Color(n, v.variant) }
			check := func(fg fyne.ThemeColorName, bgName string, bg color.Color) {
				t.Helper()
				if r := contrast(c(fg), bg); r < aa {
					t.Errorf("%s text on %s: %.2f:1, want at least %.1f:1 (%v on %v)", fg, bgName, r, aa, c(fg), bg)
				}
			}
			for _, fg := range text {
				for _, bg := range surfaces {
					check(fg, string(bg), c(bg))
				}
			}
			// A selected row keeps its texts (a session's state and
			// path in the main window's list).
			sel := over(c(theme.ColorNameSelection), c(theme.ColorNameBackground))
			for _, fg := range []fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameDisabled} {
				check(fg, "a selected row", sel)
			}
			for _, p := range filled {
				check(p[0], string(p[1]), c(p[1]))
			}
		})
	}
}

// TestThemeContrastMath pins the ratio computation to WCAG's own
// figures, so that a passing TestThemeContrast means what it says.
func TestThemeContrastMath(t *testing.T) {
	white, black := color.White, color.Black
	if r := contrast(white, black); math.Abs(r-21) > 0.01 {
		t.Errorf("white on black %.2f, want 21", r)
	}
	if r := contrast(rgb(0x777777), white); math.Abs(r-4.48) > 0.01 {
		t.Errorf("#777 on white %.3f, want 4.48 (WCAG's own example of just failing AA)", r)
	}
	// Fyne's default dark secondary text, the "about 2:1".
	if r := contrast(theme.DefaultTheme().Color(theme.ColorNameDisabled, theme.VariantDark),
		theme.DefaultTheme().Color(theme.ColorNameBackground, theme.VariantDark)); r > 2 {
		t.Errorf("Fyne's dark disabled text on its background %.2f, want the failing ~1.5 this theme replaces", r)
	}
}

// TestNewSetsTheme: every window Sandbar opens is drawn with its theme.
func TestNewSetsTheme(t *testing.T) {
	a := test.NewTempApp(t)
	u := New(a, nil, nil)
	defer u.Close()
	if _, ok := a.Settings().Theme().(sandbarTheme); !ok {
		t.Errorf("the app's theme is %T, want Sandbar's", a.Settings().Theme())
	}
}
