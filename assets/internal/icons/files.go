package icons

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
)

// File is one icon and the name it is kept under in assets/.
type File struct {
	Name string
	// Draw renders it; drawing the app icon takes about a second.
	Draw func() *image.NRGBA
}

// Files lists every icon Sandbar ships, app icons first.
func Files() []File {
	files := []File{
		{"icon.png", func() *image.NRGBA { return App(AppDesign) }},
		{"icon-256.png", func() *image.NRGBA { return App(256) }},
	}
	for _, s := range States() {
		files = append(files,
			File{TrayName(s, true), func() *image.NRGBA { return Tray(s, true) }},
			File{TrayName(s, false), func() *image.NRGBA { return Tray(s, false) }},
		)
	}
	return files
}

// TrayName is the file name of a tray icon: tray-<state>.png for the
// template, tray-<state>-color.png for the coloured one.
func TrayName(s State, template bool) string {
	if template {
		return "tray-" + s.String() + ".png"
	}
	return "tray-" + s.String() + "-color.png"
}

// Encode is img as a PNG, compressed as well as image/png can.
func Encode(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteAll draws every icon in Files and writes it into dir, creating dir
// if need be.
func WriteAll(dir string) error {
	return Write(dir, Files())
}

// Write draws files and writes them into dir, creating dir if need be.
func Write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		b, err := Encode(f.Draw())
		if err != nil {
			return fmt.Errorf("encode %s: %w", f.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.Name, err)
		}
	}
	return nil
}
