package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// arm64ImageMagic is the magic of the arm64 Image header
// (Documentation/arch/arm64/booting.rst), at offset 0x38.
const arm64ImageMagic = "ARM\x64"

// ExtractArm64Image returns the raw arm64 Image that Virtualization.framework
// boots, given an arm64 vmlinuz: a gzip of the Image, an EFI zboot image
// ("zimg" at offset 4) or an Image already uncompressed, which is what
// Debian bookworm ships (its signed EFI-stub Image, starting "MZ").
func ExtractArm64Image(vmlinuz []byte) ([]byte, error) {
	img := vmlinuz
	switch {
	case isArm64Image(vmlinuz):
	case len(vmlinuz) >= 32 && string(vmlinuz[0:2]) == "MZ" && string(vmlinuz[4:8]) == "zimg":
		// EFI zboot header: payload offset and size at 8 and 12, the
		// compression name (NUL padded) at 24.
		off := int(binary.LittleEndian.Uint32(vmlinuz[8:]))
		n := int(binary.LittleEndian.Uint32(vmlinuz[12:]))
		if off+n > len(vmlinuz) || n == 0 {
			return nil, fmt.Errorf("extract arm64 Image: zboot payload (offset %d, size %d) lies outside the %d-byte file: the vmlinuz is truncated", off, n, len(vmlinuz))
		}
		c, ok := detectCompression(vmlinuz[off:])
		if !ok {
			return nil, fmt.Errorf("extract arm64 Image: zboot payload compression %q is not recognised", trimNUL(vmlinuz[24:32]))
		}
		out, err := decompress(c, vmlinuz[off:off+n])
		if err != nil {
			return nil, fmt.Errorf("extract arm64 Image: decompress zboot %s payload: %w", c, err)
		}
		img = out
	default:
		c, ok := detectCompression(vmlinuz)
		if !ok {
			return nil, errors.New("extract arm64 Image: not a compressed or raw arm64 kernel (no known compression magic, no \"ARM\\x64\" at 0x38): pass the vmlinuz from an arm64 linux-image package")
		}
		out, err := decompress(c, vmlinuz)
		if err != nil {
			return nil, fmt.Errorf("extract arm64 Image: decompress %s: %w", c, err)
		}
		img = out
	}
	if !isArm64Image(img) {
		return nil, errors.New("extract arm64 Image: decompressed data has no arm64 Image magic \"ARM\\x64\" at 0x38: the vmlinuz is not an arm64 kernel")
	}
	return img, nil
}

func isArm64Image(b []byte) bool {
	return len(b) >= 0x40 && string(b[0x38:0x3c]) == arm64ImageMagic
}

func trimNUL(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
