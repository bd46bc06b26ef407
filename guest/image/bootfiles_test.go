package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"sandbar/guest/image/debian"
	"sandbar/guest/image/download"
	"sandbar/guest/image/initramfs"
)

// bootFiles is what the checks read from an image and its kernel package.
type bootFiles struct {
	release string            // uname -r
	files   map[string][]byte // regular files in the initramfs, by path without a leading /
	config  map[string]string // the kernel's build options, CONFIG_ left off: "y", "m"
	modules map[string]string // module name → its path in the initramfs
	deps    map[string][]string
	aliases [][2]string // pattern, module: the initramfs's modules.alias
}

func readBootFiles(t *testing.T, arch string, img *Image) *bootFiles {
	t.Helper()
	raw, err := os.ReadFile(img.Initramfs)
	if err != nil {
		t.Fatal(err)
	}
	files, err := readInitramfs(raw)
	if err != nil {
		t.Fatalf("read the initramfs: %v", err)
	}
	b := &bootFiles{release: img.Manifest.Kernel.Release, files: files, modules: map[string]string{}, deps: map[string][]string{}}
	b.config = kernelConfig(t, arch, img.Manifest.Kernel)
	list, ok := files[initramfs.ModulesList]
	if !ok {
		t.Fatalf("the initramfs has no /%s: sandbar-init would load no module", initramfs.ModulesList)
	}
	for line := range strings.Lines(string(list)) {
		file, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		if file == "" {
			continue
		}
		name := moduleFileName(file)
		b.modules[name] = strings.TrimPrefix(file, "/")
		for _, d := range strings.Fields(rest) {
			b.deps[name] = append(b.deps[name], moduleFileName(d))
		}
	}
	for line := range strings.Lines(string(files[initramfs.ModulesAlias])) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "alias" {
			b.aliases = append(b.aliases, [2]string{f[1], strings.ReplaceAll(f[2], "-", "_")})
		}
	}
	return b
}

func moduleFileName(p string) string {
	return strings.ReplaceAll(strings.TrimSuffix(path.Base(p), ".ko"), "-", "_")
}

// errFound stops a walk through a package once it found what it wanted.
var errFound = errors.New("found")

// kernelConfig reads boot/config-<release> from the kernel package the
// image was built from, out of the download cache (or the archive). It is
// the third file of the package, so the walk stops there: reading on, to
// modules.builtin at the end, takes minutes under -race.
func kernelConfig(t *testing.T, arch string, k KernelRef) map[string]string {
	t.Helper()
	dl := realDownloads(t)
	d, err := download.SHA256Hex(k.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	deb := dl.Path(d)
	if _, err := os.Stat(deb); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		a := &debian.Archive{Mirror: DefaultMirror, Suite: Suite, Components: []string{"main"}, Arch: arch, Cache: dl, Logger: discardLogger()}
		ix, err := a.Index(ctx)
		if err != nil {
			t.Fatalf("the kernel package %s is not in the download cache and the archive index cannot be read: %v", k.Package, err)
		}
		p, ok := ix.Lookup(k.Package)
		if !ok || p.SHA256 != k.SHA256 {
			t.Fatalf("the kernel package %s %s is neither in the download cache nor in the archive any more: rebuild the image", k.Package, k.Version)
		}
		if deb, err = a.Fetch(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	config := map[string]string{}
	err = debian.Unpack(deb, func(hdr *tar.Header, r io.Reader) error {
		if path.Clean("/"+hdr.Name) != "/boot/config-"+k.Release {
			return nil
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.HasPrefix(k, "CONFIG_") {
				config[strings.TrimPrefix(k, "CONFIG_")] = v
			}
		}
		return errFound
	})
	if !errors.Is(err, errFound) {
		t.Fatalf("%s has no boot/config-%s (%v): cannot tell what is built in", k.Package, k.Release, err)
	}
	return config
}

// modinfo returns a module's .modinfo keys and values, and its machine.
func modinfo(data []byte) (map[string][]string, elf.Machine, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("not an ELF object: %w", err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, 0, errors.New("no .modinfo section")
	}
	raw, err := sec.Data()
	if err != nil {
		return nil, 0, err
	}
	info := map[string][]string{}
	for _, kv := range bytes.Split(raw, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			info[k] = append(info[k], v)
		}
	}
	return info, f.Machine, nil
}

// loadedFor returns the initramfs modules sandbar-init loads for a device
// with this modalias: those whose modules.alias pattern matches it, as its
// loader matches them, or every module when there is no alias list.
func (b *bootFiles) loadedFor(modalias string) []string {
	var out []string
	if len(b.aliases) == 0 {
		for name := range b.modules {
			out = append(out, name)
		}
		return out
	}
	for _, a := range b.aliases {
		if ok, err := path.Match(a[0], modalias); ok && err == nil && !slices.Contains(out, a[1]) {
			out = append(out, a[1])
		}
	}
	return out
}

// readInitramfs returns the regular files of a newc cpio archive, which
// may be compressed (gzip, xz or zstd) and may be several archives one
// after another, as the kernel accepts.
func readInitramfs(b []byte) (map[string][]byte, error) {
	files := map[string][]byte{}
	for len(b) > 0 {
		if b[0] == 0 { // padding between archives
			b = b[1:]
			continue
		}
		var r io.Reader
		switch {
		case bytes.HasPrefix(b, []byte("070701")):
			n, err := readNewc(b, files)
			if err != nil {
				return nil, err
			}
			b = b[n:]
			continue
		case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			r = zr
		case bytes.HasPrefix(b, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
			xr, err := xz.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			r = xr
		case bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}):
			zr, err := zstd.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			defer zr.Close()
			r = zr
		default:
			return nil, fmt.Errorf("not a newc cpio archive or a compression the test knows (starts % x)", b[:min(len(b), 6)])
		}
		// A compressed archive is taken to run to the end of the file.
		out, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		sub, err := readInitramfs(out)
		if err != nil {
			return nil, err
		}
		for k, v := range sub {
			files[k] = v
		}
		break
	}
	return files, nil
}

// readNewc reads one newc archive from the start of b into files, and
// returns how many bytes it took, up to and including its trailer.
func readNewc(b []byte, files map[string][]byte) (int, error) {
	const hdrLen = 110
	pad4 := func(n int) int { return (n + 3) &^ 3 }
	off := 0
	for {
		if off+hdrLen > len(b) || string(b[off:off+6]) != "070701" {
			return 0, fmt.Errorf("bad newc header at offset %d", off)
		}
		field := func(i int) (int, error) {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			return int(v), err
		}
		mode, err1 := field(1)
		size, err2 := field(6)
		nameLen, err3 := field(11)
		if err := errors.Join(err1, err2, err3); err != nil {
			return 0, fmt.Errorf("newc header at offset %d: %w", off, err)
		}
		nameEnd := off + hdrLen + nameLen
		dataStart := pad4(nameEnd)
		if nameLen == 0 || dataStart+size > len(b) {
			return 0, fmt.Errorf("newc entry at offset %d runs past the archive", off)
		}
		name := string(b[off+hdrLen : nameEnd-1])
		if name == "TRAILER!!!" {
			return pad4(dataStart + size), nil
		}
		if mode&0o170000 == 0o100000 {
			files[strings.TrimPrefix(path.Clean("/"+name), "/")] = b[dataStart : dataStart+size]
		}
		off = pad4(dataStart + size)
	}
}

// TestReadInitramfs checks the test's reader on what the initramfs
// package writes, plain, compressed and two archives in a row.
func TestReadInitramfs(t *testing.T) {
	var buf bytes.Buffer
	w := initramfs.NewWriter(&buf)
	if err := errors.Join(w.AddFile("init", 0o755, []byte("x")), w.AddFile("etc/a", 0o644, []byte("hello")), w.AddSymlink("l", "init"), w.Close()); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(buf.Bytes())
	zw.Close()
	for name, data := range map[string][]byte{"plain": buf.Bytes(), "gzip": gz.Bytes(), "two archives": append(slices.Clone(buf.Bytes()), gz.Bytes()...)} {
		files, err := readInitramfs(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(files) != 2 || string(files["init"]) != "x" || string(files["etc/a"]) != "hello" {
			t.Errorf("%s: read %v", name, files)
		}
	}
}
