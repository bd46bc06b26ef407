// Package kernel turns a Debian linux-image package's contents into what a
// hypervisor boots: the uncompressed kernel (an ELF vmlinux with a PVH entry
// for QEMU's microvm on x86-64, the raw arm64 Image for
// Virtualization.framework) and the handful of modules the guest init loads,
// in load order.
//
// It is pure Go and runs on macOS as well as Linux. It does not fetch or
// unpack packages (see guest/image/debian) and does not write the initramfs
// (see guest/image/initramfs).
package kernel

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Bootable returns the kernel that a hypervisor for arch ("amd64" or
// "arm64", Go's names) boots directly, given the vmlinuz from the Debian
// package.
func Bootable(arch string, vmlinuz []byte) ([]byte, error) {
	switch arch {
	case "amd64":
		return ExtractVmlinux(vmlinuz)
	case "arm64":
		return ExtractArm64Image(vmlinuz)
	default:
		return nil, fmt.Errorf("boot a %s kernel: unsupported architecture (use amd64 or arm64)", arch)
	}
}

// maxKernelSize bounds decompression so that a corrupt or hostile payload
// cannot exhaust memory; real kernels are tens of megabytes.
const maxKernelSize = 512 << 20

// compression names a compressed stream by its magic bytes.
type compression string

const (
	compGzip  compression = "gzip"
	compXZ    compression = "xz"
	compZstd  compression = "zstd"
	compLZMA  compression = "lzma"
	compLZ4   compression = "lz4"
	compBzip2 compression = "bzip2"
	compLZO   compression = "lzo"
)

func detectCompression(b []byte) (compression, bool) {
	switch {
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		return compGzip, true
	case bytes.HasPrefix(b, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return compXZ, true
	case bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return compZstd, true
	case bytes.HasPrefix(b, []byte{0x02, 0x21, 0x4c, 0x18}):
		return compLZ4, true
	case bytes.HasPrefix(b, []byte("BZh")):
		return compBzip2, true
	case bytes.HasPrefix(b, []byte{0x89, 'L', 'Z', 'O'}):
		return compLZO, true
	case bytes.HasPrefix(b, []byte{0x5d, 0x00, 0x00}):
		return compLZMA, true
	}
	return "", false
}

// decompress inflates one stream of kind c. The kernel build appends the
// uncompressed size as four bytes after xz, zstd and friends, so trailing
// bytes after the first stream are ignored.
func decompress(c compression, b []byte) ([]byte, error) {
	out, err := decompressStream(c, b)
	if err != nil && c != compGzip && len(b) > 4 {
		// The kernel build's size_append trails the stream; retry without it.
		if out2, err2 := decompressStream(c, b[:len(b)-4]); err2 == nil {
			return out2, nil
		}
	}
	return out, err
}

func decompressStream(c compression, b []byte) ([]byte, error) {
	var r io.Reader
	switch c {
	case compGzip:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		zr.Multistream(false)
		r = zr
	case compXZ:
		if out, err := xzBCJ(b); !errors.Is(err, errNotBCJ) {
			return out, err
		}
		xr, err := xz.ReaderConfig{SingleStream: true}.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = xr
	case compZstd:
		return decompressZstd(b)
	default:
		return nil, fmt.Errorf("%s compression is not supported (gzip, xz and zstd are): use a kernel built with one of those", c)
	}
	return readBounded(r)
}

func decompressZstd(b []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxKernelSize), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(b, nil)
}

func readBounded(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxKernelSize+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxKernelSize {
		return nil, errors.New("decompressed kernel is larger than 512 MiB: the file is not a kernel")
	}
	return out, nil
}
