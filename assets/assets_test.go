package assets_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"fyne.io/fyne/v2"

	"sandbar/assets"
	"sandbar/assets/internal/icons"
)

// sizes is every PNG kept in this directory and its side in pixels.
var sizes = map[string]int{
	"icon.png":                 1024,
	"icon-256.png":             256,
	"tray-idle.png":            44,
	"tray-running.png":         44,
	"tray-attention.png":       44,
	"tray-idle-color.png":      44,
	"tray-running-color.png":   44,
	"tray-attention-color.png": 44,
}

// load decodes a PNG file as straight-alpha 8-bit pixels.
func load(t *testing.T, path string) *image.NRGBA {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return toNRGBA(img)
}

func toNRGBA(img image.Image) *image.NRGBA {
	if n, ok := img.(*image.NRGBA); ok && n.Rect.Min == (image.Point{}) {
		return n
	}
	b := img.Bounds()
	n := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			n.Set(x, y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return n
}

// TestFiles checks that the PNGs here are exactly the generated set and
// that each decodes at its size.
func TestFiles(t *testing.T) {
	onDisk, err := filepath.Glob("*.png")
	if err != nil {
		t.Fatal(err)
	}
	var generated []string
	for _, f := range icons.Files() {
		generated = append(generated, f.Name)
	}
	var want []string
	for name := range sizes {
		want = append(want, name)
	}
	slices.Sort(onDisk)
	slices.Sort(generated)
	slices.Sort(want)
	if !slices.Equal(onDisk, want) {
		t.Errorf("PNG files here: %q, want %q", onDisk, want)
	}
	if !slices.Equal(generated, want) {
		t.Errorf("generator writes %q, want %q", generated, want)
	}
	for _, name := range want {
		img := load(t, name)
		if got, size := img.Bounds().Size(), sizes[name]; got != image.Pt(size, size) {
			t.Errorf("%s is %v, want %dx%d", name, got, size, size)
		}
	}
}

// TestGenerated draws every icon again and compares its pixels with the
// committed file, so a hand-edited PNG, or a change to internal/icons
// without `go generate`, fails. Pixels, not bytes: the zlib stream that
// image/png writes may change between Go releases. -short leaves out
// icon.png, the slow one, whose drawing icon-256.png shares.
func TestGenerated(t *testing.T) {
	for _, f := range icons.Files() {
		if testing.Short() && f.Name == "icon.png" {
			t.Logf("-short: not drawing %s", f.Name)
			continue
		}
		if diff := pixelDiff(toNRGBA(f.Draw()), load(t, f.Name)); diff != "" {
			t.Errorf("%s differs from what internal/icons draws (%s): run `go generate ./assets` and review the images", f.Name, diff)
		}
	}
}

// TestWrite checks the generator's output path: files written into a
// new directory decode to what was drawn. Only the tray icons, which are
// quick to draw and to compress.
func TestWrite(t *testing.T) {
	var tray []icons.File
	for _, f := range icons.Files() {
		if sizes[f.Name] == icons.TraySize {
			tray = append(tray, f)
		}
	}
	dir := filepath.Join(t.TempDir(), "new")
	if err := icons.Write(dir, tray); err != nil {
		t.Fatal(err)
	}
	for _, f := range tray {
		if diff := pixelDiff(load(t, filepath.Join(dir, f.Name)), load(t, f.Name)); diff != "" {
			t.Errorf("written %s differs from the committed one (%s)", f.Name, diff)
		}
	}
}

// pixelDiff describes how a and b differ, or is empty when they are the
// same size with the same pixels.
func pixelDiff(a, b *image.NRGBA) string {
	if a.Rect != b.Rect {
		return fmt.Sprintf("size %v, committed %v", a.Rect.Size(), b.Rect.Size())
	}
	n, first := 0, image.Point{}
	for y := range a.Rect.Dy() {
		for x := range a.Rect.Dx() {
			if a.NRGBAAt(x, y) != b.NRGBAAt(x, y) {
				if n == 0 {
					first = image.Pt(x, y)
				}
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d pixels, first at %v: drawn %v, committed %v", n, first, a.NRGBAAt(first.X, first.Y), b.NRGBAAt(first.X, first.Y))
}

// TestTrayTemplates checks that the template icons are usable as macOS
// template images: every pixel black, the shape carried by alpha alone,
// with anti-aliased edges.
func TestTrayTemplates(t *testing.T) {
	for _, name := range []string{"tray-idle.png", "tray-running.png", "tray-attention.png"} {
		img := load(t, name)
		alphas := map[uint8]bool{}
		for y := range img.Rect.Dy() {
			for x := range img.Rect.Dx() {
				c := img.NRGBAAt(x, y)
				if c.A != 0 && (c.R != 0 || c.G != 0 || c.B != 0) {
					t.Fatalf("%s: pixel (%d,%d) is %v, want black", name, x, y, c)
				}
				alphas[c.A] = true
			}
		}
		if !alphas[0] || !alphas[255] || len(alphas) < 8 {
			t.Errorf("%s: %d alpha levels (transparent %v, opaque %v), want a transparent background, opaque ink and anti-aliased edges", name, len(alphas), alphas[0], alphas[255])
		}
	}
}

// TestTrayColors checks that the coloured tray icons are mid grey, with
// orange only in the attention badge.
func TestTrayColors(t *testing.T) {
	grey := color.NRGBA{0x80, 0x80, 0x80, 0}
	orange := color.NRGBA{0xff, 0x8c, 0x1a, 0}
	for _, tt := range []struct {
		name       string
		wantOrange bool
	}{
		{"tray-idle-color.png", false},
		{"tray-running-color.png", false},
		{"tray-attention-color.png", true},
	} {
		img := load(t, tt.name)
		var greys, oranges int
		for y := range img.Rect.Dy() {
			for x := range img.Rect.Dx() {
				c := img.NRGBAAt(x, y)
				if c.A == 0 {
					continue
				}
				switch c.A = 0; c {
				case grey:
					greys++
				case orange:
					oranges++
				default:
					t.Fatalf("%s: pixel (%d,%d) is %v, want grey %v or orange %v", tt.name, x, y, img.NRGBAAt(x, y), grey, orange)
				}
			}
		}
		if greys == 0 || (oranges > 0) != tt.wantOrange {
			t.Errorf("%s: %d grey and %d orange pixels, want grey and orange %v", tt.name, greys, oranges, tt.wantOrange)
		}
	}
}

// TestTrayStatesDiffer checks that each state's icon can be told from the
// others by its shape alone, as the menu bar shows only alpha.
func TestTrayStatesDiffer(t *testing.T) {
	names := []string{"tray-idle.png", "tray-running.png", "tray-attention.png"}
	alpha := make([][]uint8, len(names))
	for i, name := range names {
		img := load(t, name)
		for j := 3; j < len(img.Pix); j += 4 {
			alpha[i] = append(alpha[i], img.Pix[j])
		}
	}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if slices.Equal(alpha[i], alpha[j]) {
				t.Errorf("%s and %s have the same shape", names[i], names[j])
			}
		}
	}
}

// TestResources checks that the exported resources are the files here,
// under their file names, and that Tray picks the right one.
func TestResources(t *testing.T) {
	for _, tt := range []struct {
		res  fyne.Resource
		name string
	}{
		{assets.AppIcon, "icon.png"},
		{assets.TrayIdle, "tray-idle.png"},
		{assets.TrayRunning, "tray-running.png"},
		{assets.TrayAttention, "tray-attention.png"},
		{assets.TrayIdleColor, "tray-idle-color.png"},
		{assets.TrayRunningColor, "tray-running-color.png"},
		{assets.TrayAttentionColor, "tray-attention-color.png"},
	} {
		want, err := os.ReadFile(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if tt.res.Name() != tt.name || !bytes.Equal(tt.res.Content(), want) {
			t.Errorf("resource %q (%d bytes) is not %s (%d bytes)", tt.res.Name(), len(tt.res.Content()), tt.name, len(want))
		}
	}

	for _, tt := range []struct {
		state    assets.TrayState
		template bool
		want     fyne.Resource
	}{
		{assets.Idle, true, assets.TrayIdle},
		{assets.Running, true, assets.TrayRunning},
		{assets.Attention, true, assets.TrayAttention},
		{assets.Idle, false, assets.TrayIdleColor},
		{assets.Running, false, assets.TrayRunningColor},
		{assets.Attention, false, assets.TrayAttentionColor},
		{assets.TrayState(-1), true, assets.TrayIdle},
		{assets.TrayState(99), false, assets.TrayIdleColor},
	} {
		if got := assets.Tray(tt.state, tt.template); got != tt.want {
			t.Errorf("Tray(%v, %v) = %s, want %s", tt.state, tt.template, got.Name(), tt.want.Name())
		}
	}
}

// TestTrayStateNames checks that the assets states name the same files
// as the generator's.
func TestTrayStateNames(t *testing.T) {
	states := []assets.TrayState{assets.Idle, assets.Running, assets.Attention}
	drawn := icons.States()
	if len(states) != len(drawn) {
		t.Fatalf("%d tray states, generator draws %d", len(states), len(drawn))
	}
	for i, s := range states {
		for _, template := range []bool{true, false} {
			if got, want := assets.Tray(s, template).Name(), icons.TrayName(drawn[i], template); got != want {
				t.Errorf("Tray(%v, %v) is %s, generator draws %s", s, template, got, want)
			}
		}
	}
	if got := assets.TrayState(7).String(); got != "TrayState(7)" {
		t.Errorf("TrayState(7).String() = %q", got)
	}
}
