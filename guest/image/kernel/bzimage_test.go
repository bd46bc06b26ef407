package kernel

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

func compressWith(t *testing.T, c compression, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch c {
	case compGzip:
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case compXZ:
		zw, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case compZstd:
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no compressor for %s", c)
	}
	return buf.Bytes()
}

// sizeAppended adds the uncompressed size after the stream, as the kernel
// build does for every compression but gzip.
func sizeAppended(c compression, payload []byte, size int) []byte {
	if c == compGzip {
		return payload
	}
	return binary.LittleEndian.AppendUint32(payload, uint32(size))
}

// testBzImage wraps payload in a minimal bzImage: setup sectors, the setup
// header with "HdrS", and payload_offset/payload_length.
func testBzImage(setupSects byte, payload []byte) []byte {
	n := int(setupSects)
	if n == 0 {
		n = 4
	}
	start := (n + 1) * 512
	const payloadOffset = 0x100 // the real one has decompressor code first
	b := make([]byte, start+payloadOffset, start+payloadOffset+len(payload)+64)
	b[0x1f1] = setupSects
	b[0x1fe], b[0x1ff] = 0x55, 0xaa
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020f)
	binary.LittleEndian.PutUint32(b[0x248:], payloadOffset)
	binary.LittleEndian.PutUint32(b[0x24c:], uint32(len(payload)))
	b = append(b, payload...)
	return append(b, make([]byte, 64)...) // trailing code/CRC, as in a real one
}

func TestExtractVmlinux(t *testing.T) {
	good := testVmlinux(true)
	tests := []struct {
		name       string
		setupSects byte
		comp       compression
		vmlinux    []byte
		wantErr    string
	}{
		{name: "gzip", setupSects: 27, comp: compGzip, vmlinux: good},
		{name: "xz", setupSects: 39, comp: compXZ, vmlinux: good},
		{name: "zstd", setupSects: 30, comp: compZstd, vmlinux: good},
		{name: "zero setup sectors mean four", setupSects: 0, comp: compGzip, vmlinux: good},
		{name: "no PVH note", setupSects: 27, comp: compGzip, vmlinux: testVmlinux(false), wantErr: "no PVH entry"},
		{name: "not ELF", setupSects: 27, comp: compXZ, vmlinux: []byte("hello, not an elf at all........................................"), wantErr: "not ELF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := sizeAppended(tt.comp, compressWith(t, tt.comp, tt.vmlinux), len(tt.vmlinux))
			got, err := ExtractVmlinux(testBzImage(tt.setupSects, payload))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.vmlinux) {
				t.Fatalf("got %d bytes, want the %d-byte vmlinux back", len(got), len(tt.vmlinux))
			}
		})
	}
}

func TestExtractVmlinuxRejects(t *testing.T) {
	good := compressWith(t, compGzip, testVmlinux(true))
	noMagic := testBzImage(27, good)
	copy(noMagic[0x202:], "Nope")
	truncated := testBzImage(27, good)
	truncated = truncated[:len(truncated)-len(good)/2-64]
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{name: "empty", in: nil, wantErr: "HdrS"},
		{name: "wrong magic", in: noMagic, wantErr: "HdrS"},
		{name: "truncated", in: truncated, wantErr: "outside"},
		{name: "bzip2", in: testBzImage(27, []byte("BZh91AY&SY....")), wantErr: "bzip2 compression is not supported"},
		{name: "lz4", in: testBzImage(27, []byte{0x02, 0x21, 0x4c, 0x18, 1, 2, 3}), wantErr: "lz4 compression is not supported"},
		{name: "unknown", in: testBzImage(27, []byte("garbage!")), wantErr: "unknown compression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ExtractVmlinux(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func testArm64Image() []byte {
	img := make([]byte, 8192)
	copy(img[0x38:], arm64ImageMagic)
	for i := 0x40; i < len(img); i++ {
		img[i] = byte(i * 7)
	}
	return img
}

func testZboot(t *testing.T, img []byte) []byte {
	payload := compressWith(t, compGzip, img)
	const off = 512
	b := make([]byte, off, off+len(payload))
	copy(b, "MZ")
	copy(b[4:], "zimg")
	binary.LittleEndian.PutUint32(b[8:], off)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(payload)))
	copy(b[24:], "gzip")
	return append(b, payload...)
}

func TestExtractArm64Image(t *testing.T) {
	img := testArm64Image()
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{name: "gzip", in: compressWith(t, compGzip, img)},
		{name: "raw", in: img},
		{name: "zboot", in: testZboot(t, img)},
		{name: "gzip of something else", in: compressWith(t, compGzip, make([]byte, 4096)), wantErr: "ARM\\x64"},
		{name: "garbage", in: []byte("definitely not a kernel image"), wantErr: "not a compressed or raw arm64 kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Bootable("arm64", tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, img) {
				t.Fatal("image did not round trip")
			}
		})
	}
}

func TestBootableUnknownArch(t *testing.T) {
	if _, err := Bootable("riscv64", nil); err == nil || !strings.Contains(err.Error(), "unsupported architecture") {
		t.Fatalf("err = %v, want unsupported architecture", err)
	}
}

// TestExtractVmlinuxXZBCJ uses the xz tool, when present, to make a payload
// the way the kernel build does (x86 BCJ filter, LZMA2, CRC32), which no Go
// encoder writes.
func TestExtractVmlinuxXZBCJ(t *testing.T) {
	xzBin, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("the xz tool is needed to make a BCJ-filtered stream")
	}
	vmlinux := testVmlinux(true)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ { // calls and jumps with near and far targets
		op := []byte{0xe8, 0xe9, 0x90, 0x0f}[rng.IntN(4)]
		vmlinux = append(vmlinux, op, byte(rng.IntN(256)), byte(rng.IntN(256)), []byte{0, 0xff, 3}[rng.IntN(3)], []byte{0, 0xff, 7}[rng.IntN(3)])
	}
	cmd := exec.Command(xzBin, "--format=xz", "--check=crc32", "--x86", "--lzma2=dict=1MiB", "-c")
	cmd.Stdin = bytes.NewReader(vmlinux)
	payload, err := cmd.Output()
	if err != nil {
		t.Fatalf("xz: %v", err)
	}
	got, err := ExtractVmlinux(testBzImage(39, sizeAppended(compXZ, payload, len(vmlinux))))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, vmlinux) {
		t.Fatal("BCJ-filtered xz payload did not round trip")
	}
}
