package kernel

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// testTree is a lib/modules/<kver> tree shaped like Debian's: ext4 with a
// crypto softdep, virtio modules in a diamond, one compressed of each kind,
// one module built in.
func testTree(t *testing.T) fstest.MapFS {
	ko := func(name string, info ...string) *fstest.MapFile {
		return &fstest.MapFile{Data: testKo(append([]string{"name=" + name, "license=GPL"}, info...)...)}
	}
	ext4 := testKo("name=ext4", "softdep=pre: crypto-crc32c", "alias=fs-ext4", "depends=jbd2,mbcache,crc16")
	return fstest.MapFS{
		"modules.builtin":                      {Data: []byte("kernel/drivers/block/loop.ko\nkernel/fs/unix-thing.ko\n")},
		"modules.order":                        {Data: []byte("ignored\n")},
		"kernel/fs/ext4/ext4.ko.xz":            {Data: compressWith(t, compXZ, ext4)},
		"kernel/fs/jbd2/jbd2.ko":               ko("jbd2", "softdep=pre: crypto-crc32c", "depends="),
		"kernel/fs/mbcache.ko.zst":             {Data: compressWith(t, compZstd, testKo("name=mbcache", "depends="))},
		"kernel/lib/crc16.ko":                  ko("crc16", "depends="),
		"kernel/crypto/crc32c_generic.ko":      ko("crc32c_generic", "alias=crc32c", "depends="),
		"kernel/drivers/virtio/virtio.ko":      ko("virtio", "depends="),
		"kernel/drivers/virtio/virtio_ring.ko": ko("virtio_ring", "depends="),
		"kernel/drivers/virtio/virtio_pci.ko":  ko("virtio_pci", "depends=virtio_ring,virtio_pci_modern_dev,virtio"),
		"kernel/drivers/virtio/virtio_pci_modern_dev.ko.gz": {
			Data: compressWith(t, compGzip, testKo("name=virtio_pci_modern_dev", "depends=")),
		},
		"kernel/drivers/block/virtio_blk.ko":                        ko("virtio_blk", "depends=virtio,virtio_ring"),
		"kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko": ko("vmw_vsock_virtio_transport_common", "depends=vsock"),
		"kernel/net/vmw_vsock/vsock.ko":                             ko("vsock", "depends="),
		"kernel/arch/x86/crypto/crc32c-intel.ko":                    ko("crc32c_intel", "depends="),
		"kernel/drivers/cycle/a.ko":                                 ko("a", "depends=b"),
		"kernel/drivers/cycle/b.ko":                                 ko("b", "depends=a"),
		"kernel/drivers/broken/needs_ghost.ko":                      ko("needs_ghost", "depends=ghost"),
		"kernel/drivers/broken/not_elf.ko":                          {Data: []byte("this is not an ELF file")},
	}
}

func TestResolveModules(t *testing.T) {
	tree := testTree(t)
	tests := []struct {
		name      string
		want      []string
		wantNames []string
		wantErr   string
	}{
		{
			name:      "ext4 pulls deps and the crc32c softdep",
			want:      []string{"ext4"},
			wantNames: []string{"crc32c_generic", "jbd2", "mbcache", "crc16", "ext4"},
		},
		{
			name:      "diamond loads shared deps once, in order",
			want:      []string{"virtio_pci", "virtio_blk"},
			wantNames: []string{"virtio_ring", "virtio_pci_modern_dev", "virtio", "virtio_pci", "virtio_blk"},
		},
		{
			name:      "builtins skipped, dashes normalised",
			want:      []string{"loop", "unix-thing", "crc32c-intel"},
			wantNames: []string{"crc32c_intel"},
		},
		{
			name:      "repeated names",
			want:      []string{"crc16", "crc16"},
			wantNames: []string{"crc16"},
		},
		{name: "missing wanted module", want: []string{"virtio_blk", "nosuchmod"}, wantErr: `"nosuchmod" is neither built in nor shipped`},
		{name: "missing dependency", want: []string{"needs_ghost"}, wantErr: `"ghost", needed by needs_ghost`},
		{name: "cycle", want: []string{"a"}, wantErr: "cycle: a → b → a"},
		{name: "not ELF", want: []string{"not_elf"}, wantErr: "not an ELF object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods, err := ResolveModules(tree, tt.want)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range mods {
				names = append(names, m.Name)
			}
			if !reflect.DeepEqual(names, tt.wantNames) {
				t.Fatalf("load order = %v, want %v", names, tt.wantNames)
			}
			assertLoadOrder(t, mods)
		})
	}
}

func TestResolveModulesFields(t *testing.T) {
	mods, err := ResolveModules(testTree(t), []string{"ext4"})
	if err != nil {
		t.Fatal(err)
	}
	ext4 := mods[len(mods)-1]
	if ext4.Path != "kernel/fs/ext4/ext4.ko" {
		t.Errorf("Path = %q, want the path without .xz", ext4.Path)
	}
	if want := []string{"jbd2", "mbcache", "crc16", "crc32c_generic"}; !reflect.DeepEqual(ext4.Depends, want) {
		t.Errorf("Depends = %v, want %v", ext4.Depends, want)
	}
	if want := []string{"fs-ext4"}; !reflect.DeepEqual(ext4.Aliases, want) {
		t.Errorf("Aliases = %v, want %v", ext4.Aliases, want)
	}
	if !bytes.HasPrefix(ext4.Data, []byte("\x7fELF")) {
		t.Error("Data is not the decompressed ELF")
	}
	if mods[2].Path != "kernel/fs/mbcache.ko" || !bytes.HasPrefix(mods[2].Data, []byte("\x7fELF")) {
		t.Errorf("zstd module: Path %q, Data %q...", mods[2].Path, mods[2].Data[:4])
	}
}

func TestResolveModulesDeterministic(t *testing.T) {
	tree := testTree(t)
	first, err := ResolveModules(tree, []string{"virtio_blk", "ext4", "virtio_pci"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, err := ResolveModules(tree, []string{"virtio_blk", "ext4", "virtio_pci"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatal("two resolutions of the same tree differ")
		}
	}
}

// assertLoadOrder checks every module comes after all it depends on.
func assertLoadOrder(t *testing.T, mods []Module) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range mods {
		for _, d := range m.Depends {
			if !seen[d] {
				t.Fatalf("%s is loaded before its dependency %s", m.Name, d)
			}
		}
		seen[m.Name] = true
	}
}

func TestParseSoftPre(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"pre: crc32c", []string{"crc32c"}},
		{"pre: a b post: c", []string{"a", "b"}},
		{"post: c pre: d", []string{"d"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := parseSoftPre(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseSoftPre(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestRealDebianKernel runs against a real linux-image package when
// SANDBAR_TEST_KERNEL_DEB names a linux-image-*.deb or a directory it was
// extracted into (dpkg-deb -x).
func TestRealDebianKernel(t *testing.T) {
	src := os.Getenv("SANDBAR_TEST_KERNEL_DEB")
	if src == "" {
		t.Skip("set SANDBAR_TEST_KERNEL_DEB to a linux-image-*.deb or its extracted directory")
	}
	root := src
	if st, err := os.Stat(src); err != nil {
		t.Fatal(err)
	} else if !st.IsDir() {
		root = t.TempDir()
		extractDeb(t, src, root)
	}
	vmlinuzes, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(vmlinuzes) != 1 {
		t.Fatalf("want one boot/vmlinuz-* under %s, found %v", root, vmlinuzes)
	}
	kver := strings.TrimPrefix(filepath.Base(vmlinuzes[0]), "vmlinuz-")
	vmlinuz, err := os.ReadFile(vmlinuzes[0])
	if err != nil {
		t.Fatal(err)
	}
	arch := "amd64"
	if strings.HasSuffix(kver, "arm64") {
		arch = "arm64"
	}
	start := time.Now()
	kernel, err := Bootable(arch, vmlinuz)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s kernel: vmlinuz %d bytes → %d bytes in %v", arch, len(vmlinuz), len(kernel), time.Since(start))

	var modDir string
	for _, d := range []string{"lib/modules", "usr/lib/modules"} {
		if _, err := os.Stat(filepath.Join(root, d, kver)); err == nil {
			modDir = filepath.Join(root, d, kver)
		}
	}
	if modDir == "" {
		t.Fatalf("no lib/modules/%s under %s", kver, root)
	}
	start = time.Now()
	mods, err := ResolveModules(os.DirFS(modDir), DefaultModules())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	var names []string
	for _, m := range mods {
		total += len(m.Data)
		names = append(names, m.Name)
	}
	t.Logf("%d modules, %d bytes, in %v: %s", len(mods), total, time.Since(start), strings.Join(names, " "))
	assertLoadOrder(t, mods)
}

// extractDeb unpacks a .deb's data.tar.* with the dpkg-deb tool; this is
// test set-up only, the product unpacks packages in Go (guest/image/debian).
func extractDeb(t *testing.T, deb, dir string) {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is needed to unpack a .deb in this test; pass an extracted directory instead")
	}
	out, err := exec.Command("dpkg-deb", "--fsys-tarfile", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --fsys-tarfile %s: %v", deb, err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(name), 0o755); err == nil {
				var b []byte
				if b, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(name, b, fs.FileMode(0o644))
				}
			}
		}
		if err != nil {
			t.Fatal(fmt.Errorf("unpack %s: %w", h.Name, err))
		}
	}
}
