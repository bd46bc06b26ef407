package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sandbar/tests/registrytest"
)

// The shared loopback registry, under the names these tests use.
type registry = registrytest.Registry

func startRegistry(t testing.TB, user, pwd string) *registry { return registrytest.Start(t, user, pwd) }

func needTool(t testing.TB, tool, pkg string) string { return registrytest.NeedTool(t, tool, pkg) }

func dockerConfig(t *testing.T, host, user, pwd string) string {
	return registrytest.DockerConfig(t, host, user, pwd)
}

// entry is one file of a test layer.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

// layer makes a gzip layer of entries, in order.
func layer(t testing.TB, es ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body)), ModTime: time.Unix(1700000000, 0)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			io.WriteString(tw, e.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// image stacks layers (the first at the bottom) into an image for
// os/arch with cfg.
func image(t testing.TB, arch string, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return registrytest.Platform(t, img, arch, func(c *v1.Config) { *c = cfg })
}

// debugfs runs one debugfs request against an ext4 file.
func debugfs(t testing.TB, img, req string) string {
	t.Helper()
	bin := needTool(t, "debugfs", "e2fsprogs")
	out, err := exec.Command(bin, "-R", req, img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs -R %q %s: %v\n%s", req, img, err, out)
	}
	// debugfs prints its version banner on stderr first.
	s := string(out)
	if i := strings.Index(s, "\n"); strings.HasPrefix(s, "debugfs ") && i >= 0 {
		s = s[i+1:]
	}
	return s
}

var sizeRE = regexp.MustCompile(`Size: (\d+)`)

// catFile returns a file's contents in the ext4 image. debugfs 1.47's
// cat prints the whole inline-data area of a small file, so the contents
// are cut at the size stat gives.
func catFile(t testing.TB, img, p string) string {
	t.Helper()
	m := sizeRE.FindStringSubmatch(debugfs(t, img, "stat "+p))
	if m == nil {
		t.Fatalf("%s is not in %s", p, img)
	}
	n, _ := strconv.Atoi(m[1])
	c := debugfs(t, img, "cat "+p)
	if len(c) > n {
		c = c[:n]
	}
	return c
}

// names lists a directory of the ext4 image, without . and ..
func names(t testing.TB, img, dir string) []string {
	t.Helper()
	out := debugfs(t, img, "ls -p "+dir)
	var ns []string
	for _, line := range strings.Split(out, "\n") {
		// ls -p: /inode/mode/uid/gid/name/size/
		f := strings.Split(line, "/")
		if len(f) < 6 || f[5] == "." || f[5] == ".." || f[5] == "" {
			continue
		}
		ns = append(ns, f[5])
	}
	return ns
}

// assertNothingLeft fails when the store holds an image or a temporary
// directory.
func assertNothingLeft(t *testing.T, s *Store) {
	t.Helper()
	imgs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 0 {
		t.Errorf("the store holds %d images after failed pulls", len(imgs))
	}
	ents, err := os.ReadDir(filepath.Join(s.Dir, tmpDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in %s: %s", filepath.Join(s.Dir, tmpDir), e.Name())
	}
}

// checkExt4 runs e2fsck -fn on img. It forgives the one flaw hcsshim's
// writer always leaves (as guest/image's test does): unset padding bits
// at the end of the inode bitmap, which neither the kernel nor a
// read-only mount reads.
func checkExt4(t *testing.T, img string) {
	t.Helper()
	fsck := needTool(t, "e2fsck", "e2fsprogs")
	out, err := exec.Command(fsck, "-fn", img).CombinedOutput()
	if err == nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "Fix? no") && !strings.HasPrefix(line, "Padding at end of inode bitmap is not set") {
			t.Errorf("e2fsck -fn %s: %s\n%s", img, line, out)
			return
		}
	}
	if !strings.Contains(string(out), "Padding at end of inode bitmap") {
		t.Errorf("e2fsck -fn %s: %v\n%s", img, err, out)
	}
}
