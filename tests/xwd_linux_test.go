//go:build linux

package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/bits"
	"os"
)

// Xvfb's -fbdir option keeps each screen's framebuffer in a file, in the
// X Window Dump format (xwd), updated as the server draws. Reading that
// file is a screenshot without any X client tool (xwd, import): this
// file decodes the TrueColor dumps Xvfb writes.

// xwdHeader is XWDFileHeader from X11/XWDFile.h: 25 big-endian CARD32s,
// then the window name up to HeaderSize.
type xwdHeader struct {
	HeaderSize, FileVersion, PixmapFormat, PixmapDepth, PixmapWidth, PixmapHeight, XOffset,
	ByteOrder, BitmapUnit, BitmapBitOrder, BitmapPad, BitsPerPixel, BytesPerLine, VisualClass,
	RedMask, GreenMask, BlueMask, BitsPerRGB, ColormapEntries, NColors,
	WindowWidth, WindowHeight, WindowX, WindowY, WindowBorderWidth uint32
}

const (
	xwdZPixmap   = 2
	xwdTrueColor = 4
	xwdColorSize = 12 // an XWDColor: pixel CARD32, r, g, b CARD16, flags, pad
)

// decodeXWD decodes a 24- or 32-bit-per-pixel TrueColor ZPixmap dump.
func decodeXWD(data []byte) (*image.RGBA, error) {
	var h xwdHeader
	if err := binary.Read(bytes.NewReader(data), binary.BigEndian, &h); err != nil {
		return nil, fmt.Errorf("xwd header: %w", err)
	}
	if h.FileVersion != 7 || h.PixmapFormat != xwdZPixmap || h.VisualClass != xwdTrueColor {
		return nil, fmt.Errorf("xwd: version %d, format %d, visual %d: want a version 7 ZPixmap of a TrueColor visual", h.FileVersion, h.PixmapFormat, h.VisualClass)
	}
	bpp := int(h.BitsPerPixel)
	if bpp != 24 && bpp != 32 {
		return nil, fmt.Errorf("xwd: %d bits per pixel: want 24 or 32", bpp)
	}
	w, ht, stride := int(h.PixmapWidth), int(h.PixmapHeight), int(h.BytesPerLine)
	off := int(h.HeaderSize) + int(h.NColors)*xwdColorSize
	if stride < w*bpp/8 || off+stride*ht > len(data) {
		return nil, fmt.Errorf("xwd: %dx%d at %d bytes a line does not fit in %d bytes", w, ht, stride, len(data))
	}
	var order binary.ByteOrder = binary.LittleEndian // ByteOrder 0: LSBFirst
	if h.ByteOrder != 0 {
		order = binary.BigEndian
	}
	chans := []struct{ mask, shift uint32 }{
		{h.RedMask, uint32(bits.TrailingZeros32(h.RedMask))},
		{h.GreenMask, uint32(bits.TrailingZeros32(h.GreenMask))},
		{h.BlueMask, uint32(bits.TrailingZeros32(h.BlueMask))},
	}
	level := func(px uint32, c int) uint8 {
		ch := chans[c]
		v := (px & ch.mask) >> ch.shift
		max := ch.mask >> ch.shift
		if max == 0 {
			return 0
		}
		return uint8(v * 255 / max)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, ht))
	for y := range ht {
		line := data[off+y*stride:]
		for x := range w {
			var px uint32
			if bpp == 32 {
				px = order.Uint32(line[x*4:])
			} else {
				b := line[x*3 : x*3+3]
				if order == binary.LittleEndian {
					px = uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
				} else {
					px = uint32(b[2]) | uint32(b[1])<<8 | uint32(b[0])<<16
				}
			}
			img.SetRGBA(x, y, color.RGBA{level(px, 0), level(px, 1), level(px, 2), 255})
		}
	}
	return img, nil
}

// frame is one read of the screen.
type frame struct {
	img     *image.RGBA
	colours int // distinct colours: a bare X screen has one, a window hundreds
}

// grab reads an Xvfb framebuffer file.
func grab(fbFile string) (frame, error) {
	data, err := os.ReadFile(fbFile)
	if err != nil {
		return frame{}, err
	}
	img, err := decodeXWD(data)
	if err != nil {
		return frame{}, err
	}
	colours := map[color.RGBA]struct{}{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			colours[img.RGBAAt(x, y)] = struct{}{}
		}
	}
	return frame{img: img, colours: len(colours)}, nil
}

// same reports whether two frames hold the same pixels.
func (f frame) same(o frame) bool {
	return f.img != nil && o.img != nil && bytes.Equal(f.img.Pix, o.img.Pix)
}

// writePNG writes the frame as a PNG file.
func (f frame) writePNG(path string) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, f.img); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
