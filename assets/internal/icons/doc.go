// Package icons draws Sandbar's app and tray icons from code, with the
// standard library only, so that every pixel of assets/*.png can be
// regenerated and reviewed as a diff of Go.
//
// It is the single source of the artwork: the generator (assets/gen, run
// by `go generate ./assets`) writes what Files returns, and the assets
// tests render Files again and compare it with the committed PNGs. It is
// not what the app imports: the app embeds the PNGs through package
// assets and never draws at run time.
//
// Shapes are described by signed distances in a design grid (1024 units
// for the app icon, 44 for the tray icons) and rasterised by point
// sampling: each pixel is the box-filtered mean of a 4×4 grid of samples,
// which is drawing at 4× and box-downsampling without the 4× buffer.
// Only +, −, ×, ÷, sqrt and math.Sin take part, none of which has a
// machine-specific implementation in Go. Machines may still differ in the
// last bit where the compiler fuses a multiply and an add (arm64, or
// amd64 built with GOAMD64=v3), which could change a byte of output only
// at an exact rounding tie; GOAMD64=v3 draws the same bytes as v1.
package icons
