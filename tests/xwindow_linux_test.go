//go:build linux

package tests

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// One window on the test's X server, as a person sees it: where it is,
// a picture of it alone, and the mouse and keys that act on it. The
// server has no window manager, so a window is exactly its client area
// (no frame to leave out) and the test raises the one it looks at.

// xdotool runs xdotool against x's display.
func (x *xserver) xdotool(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xdotool", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+x.display)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("xdotool %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// windows lists the visible windows, id and name, for a failure to say.
func (x *xserver) windows() string {
	out, _ := x.xdotool("search", "--onlyvisible", "--name", ".")
	var list []string
	for _, id := range strings.Fields(out) {
		name, _ := x.xdotool("getwindowname", id)
		list = append(list, fmt.Sprintf("%s %q", id, strings.TrimSpace(name)))
	}
	return "[" + strings.Join(list, ", ") + "]"
}

// gone fails t for an xdotool error about window id, naming the name it
// was found by and the windows there are now: a window the app closed
// by itself shows as BadWindow.
func (x *xserver) gone(t *testing.T, id string, err error) {
	t.Helper()
	t.Fatalf("%v\n(window %s was found as %q; windows now: %s)", err, id, x.foundAs[id], x.windows())
}

// geometry is where window id is on the screen.
func (x *xserver) geometry(t *testing.T, id string) image.Rectangle {
	t.Helper()
	out, err := x.xdotool("getwindowgeometry", "--shell", id)
	if err != nil {
		x.gone(t, id, err)
	}
	v := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if k, n, ok := strings.Cut(l, "="); ok {
			v[k], _ = strconv.Atoi(n)
		}
	}
	return image.Rect(v["X"], v["Y"], v["X"]+v["WIDTH"], v["Y"]+v["HEIGHT"])
}

// raise puts window id above the others (there is no window manager to
// do it on a click).
func (x *xserver) raise(t *testing.T, id string) {
	t.Helper()
	if _, err := x.xdotool("windowraise", id); err != nil {
		x.gone(t, id, err)
	}
}

// click clicks the left button at p, in screen coordinates.
func (x *xserver) click(t *testing.T, p image.Point) {
	t.Helper()
	if _, err := x.xdotool("mousemove", strconv.Itoa(p.X), strconv.Itoa(p.Y), "click", "1"); err != nil {
		t.Fatal(err)
	}
}

// closeWithKey types a key (xdotool's names: Escape, ctrl+w) that
// closes window id, and waits until no window is named name. xdotool
// sends the key's press and then its release: the press closes the
// window, so the release may find it gone (BadWindow), which is the
// key having worked, not failed. xdotool then stops before it lets go
// of the key, which the X server holds down and repeats into whichever
// window has the focus next: a session window opened after it got an
// Escape from nobody and closed (what failed TestScreenshots in CI, the
// app's key handler shown receiving it). The key is let go of here.
func (x *xserver) closeWithKey(t *testing.T, id, name, key string) {
	t.Helper()
	if _, err := x.xdotool("key", "--window", id, key); err != nil && !strings.Contains(err.Error(), "BadWindow") {
		t.Fatal(err)
	}
	if _, err := x.xdotool("keyup", key); err != nil {
		t.Fatal(err)
	}
	x.waitGone(t, name, 10*time.Second)
}

// settled reads the screen until window id is drawn (more than a few
// colours) and two reads a beat apart show it the same, in the same
// place, and returns that picture of the window alone. A session's
// uptime ticks once a second: the beat is short enough to fall between
// two ticks.
func (x *xserver) settled(t *testing.T, id string) *image.RGBA {
	t.Helper()
	var prev, cur *image.RGBA
	var colours int
	if !waitUntil(30*time.Second, 250*time.Millisecond, func() bool {
		f, err := grab(x.fb)
		if err != nil {
			t.Fatalf("read the screen: %v", err)
		}
		prev, cur = cur, crop(f.img, x.geometry(t, id))
		colours = countColours(cur)
		return colours > 16 && prev != nil && prev.Rect == cur.Rect && bytes.Equal(prev.Pix, cur.Pix)
	}) {
		t.Fatalf("window %s did not settle into a drawn picture within 30 s (%d colours)", id, colours)
	}
	return cur
}

// shot saves window id, alone, to path (a PNG) once it has settled, and
// returns the picture.
func (x *xserver) shot(t *testing.T, id, path string) *image.RGBA {
	t.Helper()
	img := x.settled(t, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	t.Logf("screenshot %dx%d, %d KiB: %s", img.Rect.Dx(), img.Rect.Dy(), buf.Len()>>10, abs)
	return img
}

// crop copies the part of img inside r (clipped to the screen), with
// its origin at 0,0.
func crop(img *image.RGBA, r image.Rectangle) *image.RGBA {
	r = r.Intersect(img.Rect)
	out := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(out, out.Rect, img, r.Min, draw.Src)
	return out
}

// countColours counts the distinct colours of img, every other pixel.
func countColours(img *image.RGBA) int {
	seen := map[color.RGBA]struct{}{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			seen[img.RGBAAt(x, y)] = struct{}{}
		}
	}
	return len(seen)
}

// park moves the pointer to the screen's bottom-right corner, where no
// window of these tests reaches, so that it neither shows in a picture
// nor lights up what it hovers.
func (x *xserver) park(t *testing.T) {
	t.Helper()
	if _, err := x.xdotool("mousemove", strconv.Itoa(x.screen.Max.X-1), strconv.Itoa(x.screen.Max.Y-1)); err != nil {
		t.Fatal(err)
	}
}

// accent reports whether c is the theme's accent (primary) blue, as
// drawn: blended at the edges, so by its hue rather than its exact value.
func accent(c color.RGBA) bool {
	return c.B > 150 && int(c.B)-int(c.R) > 80
}

// tabUnderline finds the line under the selected tab of an AppTabs in
// img: the top-most thin horizontal run of the accent colour, 30 to 250
// pixels long (a focused field's border is longer; a button's fill is
// not thin; a label's text has no such run).
func tabUnderline(img *image.RGBA) (image.Rectangle, bool) {
	b := img.Bounds()
	for y := b.Min.Y + 3; y < b.Max.Y-3; y++ {
		for x := b.Min.X; x < b.Max.X; {
			if !accent(img.RGBAAt(x, y)) {
				x++
				continue
			}
			x0 := x
			for x < b.Max.X && accent(img.RGBAAt(x, y)) {
				x++
			}
			mid := (x0 + x) / 2
			if n := x - x0; n >= 30 && n <= 250 && !accent(img.RGBAAt(mid, y-3)) && !accent(img.RGBAAt(mid, y+3)) {
				return image.Rect(x0, y, x, y+1), true
			}
		}
	}
	return image.Rectangle{}, false
}

// differing counts the pixels of r that differ between a and b (two
// pictures of one window).
func differing(a, b *image.RGBA, r image.Rectangle) int {
	n := 0
	r = r.Intersect(a.Rect).Intersect(b.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.RGBAAt(x, y) != b.RGBAAt(x, y) {
				n++
			}
		}
	}
	return n
}

// resize sizes window id as a person dragging its corner would.
func (x *xserver) resize(t *testing.T, id string, w, h int) {
	t.Helper()
	if _, err := x.xdotool("windowsize", "--sync", id, strconv.Itoa(w), strconv.Itoa(h)); err != nil {
		x.gone(t, id, err)
	}
}

// waitGone waits until no visible window's name matches name, failing t
// after d.
func (x *xserver) waitGone(t *testing.T, name string, d time.Duration) {
	t.Helper()
	if !waitUntil(d, 100*time.Millisecond, func() bool {
		// xdotool search exits 1 when it finds nothing.
		out, _ := x.xdotool("search", "--onlyvisible", "--name", name)
		return strings.TrimSpace(out) == ""
	}) {
		t.Fatalf("the window named %q was still there %s later", name, d)
	}
}
