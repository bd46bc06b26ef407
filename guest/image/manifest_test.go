package image

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func testManifest() Manifest {
	return Manifest{
		Arch:       "amd64",
		Suite:      Suite,
		Kernel:     KernelRef{Package: "linux-image-6.1.0-28-amd64", Version: "6.1.119-1", Release: "6.1.0-28-amd64", SHA256: "aa"},
		Modules:    []string{"virtio_blk", "ext4"},
		Packages:   []PackageRef{{"bash", "5.2.15-2+b7", "bb"}, {"git", "1:2.39.5-0+deb12u1", "cc"}},
		Agent:      DefaultAgent("amd64"),
		InitSHA256: "dd",
		Builder:    Builder,
	}
}

func TestManifestHash(t *testing.T) {
	base := testManifest()
	h := base.ComputeHash()
	if again := testManifest(); again.ComputeHash() != h {
		t.Fatal("same inputs gave different hashes")
	}
	if !validHash(h) {
		t.Fatalf("hash %q is not 64 lower-case hex digits", h)
	}
	changes := []struct {
		name   string
		change func(m *Manifest)
		same   bool
	}{
		{"arch", func(m *Manifest) { m.Arch = "arm64" }, false},
		{"suite", func(m *Manifest) { m.Suite = "trixie" }, false},
		{"builder", func(m *Manifest) { m.Builder++ }, false},
		{"kernel package", func(m *Manifest) { m.Kernel.Package = "linux-image-6.1.0-29-amd64" }, false},
		{"kernel version", func(m *Manifest) { m.Kernel.Version = "6.1.120-1" }, false},
		{"kernel sha", func(m *Manifest) { m.Kernel.SHA256 = "ab" }, false},
		{"module added", func(m *Manifest) { m.Modules = append(m.Modules, "overlay") }, false},
		{"module order", func(m *Manifest) { m.Modules = []string{"ext4", "virtio_blk"} }, false},
		{"package version", func(m *Manifest) { m.Packages[0].Version = "5.2.15-2+b8" }, false},
		{"package sha", func(m *Manifest) { m.Packages[1].SHA256 = "cd" }, false},
		{"package removed", func(m *Manifest) { m.Packages = m.Packages[:1] }, false},
		{"agent version", func(m *Manifest) { m.Agent.Version = "9.9.9" }, false},
		{"agent integrity", func(m *Manifest) { m.Agent.Integrity = "sha512-x" }, false},
		{"agent binary", func(m *Manifest) { m.Agent.Binary = "package/other" }, false},
		{"init", func(m *Manifest) { m.InitSHA256 = "de" }, false},
		{"sizes are outputs", func(m *Manifest) { m.Sizes = map[string]int64{"kernel": 1} }, true},
		{"build time is an output", func(m *Manifest) { m.BuiltAt = time.Now(); m.BuildSeconds = 3 }, true},
		{"hash is ignored", func(m *Manifest) { m.Hash = "x" }, true},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			m := testManifest()
			c.change(&m)
			if got := m.ComputeHash(); (got == h) != c.same {
				t.Errorf("hash after changing %s: same=%v, want same=%v", c.name, got == h, c.same)
			}
		})
	}
}

// writeImage writes a complete fake image into dir and returns its hash.
func writeImage(t *testing.T, dir string, m Manifest, builtAt time.Time) string {
	t.Helper()
	m.Hash = m.ComputeHash()
	m.BuiltAt = builtAt
	d := filepath.Join(dir, m.Hash)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	m.Sizes = map[string]int64{}
	for i, name := range imageFiles() {
		data := make([]byte, i+1)
		if err := os.WriteFile(filepath.Join(d, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m.Sizes[name] = int64(len(data))
	}
	if err := writeManifest(d, &m); err != nil {
		t.Fatal(err)
	}
	return m.Hash
}

func TestOpenAndLatest(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Latest(dir)
		if !errors.Is(err, ErrNotBuilt) {
			t.Fatalf("Latest(empty) = %v, want ErrNotBuilt", err)
		}
		if err.Error() != "no guest image yet: run `sandbar image build`" {
			t.Errorf("message = %q", err.Error())
		}
		if _, err := Latest(filepath.Join(dir, "missing")); !errors.Is(err, ErrNotBuilt) {
			t.Errorf("Latest(missing dir) = %v, want ErrNotBuilt", err)
		}
	})

	t.Run("incomplete images are ignored", func(t *testing.T) {
		dir := t.TempDir()
		old := writeImage(t, dir, testManifest(), time.Now().Add(-time.Hour))
		m := testManifest()
		m.InitSHA256 = "newer"
		newer := writeImage(t, dir, m, time.Now())
		if err := os.Remove(filepath.Join(dir, newer, AgentFile)); err != nil {
			t.Fatal(err)
		}
		m.InitSHA256 = "truncated"
		truncated := writeImage(t, dir, m, time.Now())
		if err := os.WriteFile(filepath.Join(dir, truncated, RootFSFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// A build in progress and a manifest that lies about its hash.
		if err := os.MkdirAll(filepath.Join(dir, ".tmp-abc-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		m.InitSHA256 = "liar"
		liar := writeImage(t, dir, m, time.Now())
		fake := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		if err := os.Rename(filepath.Join(dir, liar), filepath.Join(dir, fake)); err != nil {
			t.Fatal(err)
		}
		if err := setCurrent(dir, newer); err != nil {
			t.Fatal(err)
		}

		for _, h := range []string{newer, truncated, fake, "not-a-hash", "../x"} {
			if _, err := Open(dir, h); err == nil {
				t.Errorf("Open(%s) succeeded on an incomplete image", h)
			}
		}
		img, err := Latest(dir)
		if err != nil {
			t.Fatalf("Latest: %v", err)
		}
		if img.Manifest.Hash != old {
			t.Errorf("Latest = %s, want the only complete image %s", img.Manifest.Hash, old)
		}
		if img.RootFS != filepath.Join(dir, old, RootFSFile) || img.AgentDisk != filepath.Join(dir, old, AgentFile) {
			t.Errorf("paths: %+v", img)
		}
	})

	t.Run("current wins", func(t *testing.T) {
		dir := t.TempDir()
		a := writeImage(t, dir, testManifest(), time.Now().Add(-time.Hour))
		m := testManifest()
		m.Arch = "arm64"
		writeImage(t, dir, m, time.Now())
		if err := setCurrent(dir, a); err != nil {
			t.Fatal(err)
		}
		img, err := Latest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if img.Manifest.Hash != a {
			t.Errorf("Latest = %s, want current %s", img.Manifest.Hash, a)
		}
	})
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, ".tmp-old-1")
	young := filepath.Join(dir, ".tmp-young-2")
	keep := filepath.Join(dir, "0123")
	for _, d := range []string{old, young, keep} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-48 * time.Hour)
	for _, d := range []string{old, keep} {
		if err := os.Chtimes(d, past, past); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir, time.Now().Add(-staleAfter), discardLogger())
	for d, want := range map[string]bool{old: false, young: true, keep: true} {
		_, err := os.Stat(d)
		if (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
