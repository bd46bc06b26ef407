package debian

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/guest/image/download"
)

// testMirror serves a tiny bookworm suite: a Release, its Packages.xz (by
// hash only, as deb.debian.org also serves them) and one .deb.
type testMirror struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func newTestMirror(t *testing.T) *testMirror {
	t.Helper()
	deb, err := os.ReadFile(makeDeb(t, t.TempDir(), "hello", ".xz", []entry{dir("./"), dir("./usr/"), dir("./usr/bin/"), exe("./usr/bin/hello", "hi")}))
	if err != nil {
		t.Fatal(err)
	}
	packages := fmt.Sprintf(`Package: hello
Version: 2.10-3
Architecture: amd64
Depends: libc6 (>= 2.34)
Filename: pool/main/h/hello/hello_2.10-3_amd64.deb
Size: %d
SHA256: %s

Package: libc6
Version: 2.36-9+deb12u4
Architecture: amd64
Filename: pool/main/g/glibc/libc6.deb
Size: 1
SHA256: %s
`, len(deb), sha(deb), strings.Repeat("0", 64))
	pxz := compress(t, ".xz", []byte(packages))
	release := fmt.Sprintf(`Origin: Debian
Suite: stable
Codename: bookworm
Date: Sat, 10 Aug 2024 09:00:00 UTC
Acquire-By-Hash: yes
Architectures: amd64 arm64
Components: main
SHA256:
 %s %d main/binary-amd64/Packages
 %s %d main/binary-amd64/Packages.xz
`, sha([]byte(packages)), len(packages), sha(pxz), len(pxz))
	m := &testMirror{files: map[string][]byte{
		"/debian/dists/bookworm/Release":                                      []byte(release),
		"/debian/dists/bookworm/main/binary-amd64/by-hash/SHA256/" + sha(pxz): pxz,
		"/debian/pool/main/h/hello/hello_2.10-3_amd64.deb":                    deb,
	}, hits: map[string]int{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.hits[r.URL.Path]++
		b, ok := m.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(m.Close)
	return m
}

func TestArchiveOnlineThenOffline(t *testing.T) {
	m := newTestMirror(t)
	ctx := context.Background()
	a := &Archive{Mirror: m.URL + "/debian/", Arch: "amd64", Cache: &download.Cache{Dir: t.TempDir()}}

	ix, err := a.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := ix.Resolve([]string{"hello"})
	if err != nil {
		t.Fatal(err)
	}
	if names(pkgs) != "hello libc6" {
		t.Fatalf("Resolve(hello) = %s", names(pkgs))
	}
	debPath, err := a.Fetch(ctx, pkgs[0])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := Unpack(debPath, func(h *tar.Header, r io.Reader) error { got = append(got, h.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "./ ./usr/ ./usr/bin/ ./usr/bin/hello" {
		t.Errorf("unpacked %v", got)
	}

	// The pool has no libc6.deb: the 404 must name the package and the status.
	if _, err := a.Fetch(ctx, pkgs[1]); err == nil || !strings.Contains(err.Error(), "libc6") || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch of a missing .deb: err = %v", err)
	}

	// Offline: the index and the fetched package still come from the cache.
	m.Close()
	ix, err = a.Index(ctx)
	if err != nil {
		t.Fatalf("offline Index: %v", err)
	}
	if p, ok := ix.Lookup("hello"); !ok || p.Version != "2.10-3" {
		t.Fatalf("offline Lookup(hello) = %+v, %v", p, ok)
	}
	if again, err := a.Fetch(ctx, pkgs[0]); err != nil || again != debPath {
		t.Errorf("offline Fetch = %q, %v; want the cached %q", again, err, debPath)
	}
	if _, err := a.Fetch(ctx, pkgs[1]); !errors.Is(err, download.ErrNoNetwork) {
		t.Errorf("offline Fetch of an uncached package: err = %v, want ErrNoNetwork", err)
	}
}

func TestArchiveCorruptIndex(t *testing.T) {
	m := newTestMirror(t)
	for p, b := range m.files {
		if strings.Contains(p, "by-hash") {
			m.files[p] = append([]byte{}, b...)
			m.files[p][len(b)/2] ^= 0xff
		}
	}
	a := &Archive{Mirror: m.URL + "/debian", Arch: "amd64", Cache: &download.Cache{Dir: t.TempDir()}}
	if _, err := a.Index(context.Background()); !errors.Is(err, download.ErrChecksum) {
		t.Errorf("Index over a corrupt Packages.xz: err = %v, want a checksum mismatch", err)
	}
}

func TestArchiveWrongArch(t *testing.T) {
	m := newTestMirror(t)
	a := &Archive{Mirror: m.URL + "/debian", Arch: "riscv64", Cache: &download.Cache{Dir: t.TempDir()}}
	if _, err := a.Index(context.Background()); err == nil || !strings.Contains(err.Error(), "no riscv64 packages") {
		t.Errorf("err = %v, want one naming the architecture", err)
	}
	a.Arch = "arm64" // listed, but this mirror has no Packages for it
	if _, err := a.Index(context.Background()); err == nil || !strings.Contains(err.Error(), "main/binary-arm64/Packages.xz") {
		t.Errorf("err = %v, want one naming the missing index", err)
	}
}

// TestBookworm reads the real archive. It is skipped under -short and
// when deb.debian.org cannot be reached.
func TestBookworm(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the Debian archive; skipped under -short")
	}
	mirror := DefaultMirror
	if !reachable(mirror + "/dists/bookworm/Release") {
		t.Skipf("%s is not reachable", mirror)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := &Archive{Mirror: mirror, Arch: "amd64", Cache: &download.Cache{Dir: t.TempDir()}}
	start := time.Now()
	ix, err := a.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("index: %d packages in %s", ix.Len(), time.Since(start).Round(time.Millisecond))
	want := []string{"bash", "coreutils", "git", "ca-certificates", "curl", "openssh-client", "procps", "ripgrep", "less", "make", "python3", "nodejs", "e2fsprogs"}
	start = time.Now()
	pkgs, err := ix.Resolve(want)
	if err != nil {
		t.Fatal(err)
	}
	var size, installed int64
	for _, p := range pkgs {
		size += p.Size
		installed += p.InstalledSize
	}
	t.Logf("resolved %d names to %d packages in %s: %.1f MiB of .debs, %.1f MiB installed", len(want), len(pkgs),
		time.Since(start).Round(time.Millisecond), float64(size)/(1<<20), float64(installed)/(1<<20))
	t.Logf("packages: %s", names(pkgs))
	withEssential, err := ix.Resolve(append(ix.Essential(), want...))
	if err != nil {
		t.Fatal(err)
	}
	size = 0
	for _, p := range withEssential {
		size += p.Size
	}
	t.Logf("with the %d Essential packages: %d packages, %.1f MiB of .debs", len(ix.Essential()), len(withEssential), float64(size)/(1<<20))

	p, ok := ix.Lookup("less")
	if !ok {
		t.Fatal("less not in the index")
	}
	deb, err := a.Fetch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	err = Unpack(deb, func(h *tar.Header, r io.Reader) error {
		if MergedUsrPath(h.Name) == "usr/bin/less" && h.Typeflag == tar.TypeReg {
			found = true
		}
		return nil
	})
	if err != nil || !found {
		t.Fatalf("Unpack(%s) = %v; usr/bin/less found: %v", deb, err, found)
	}
}

// reachable says whether a quick HEAD of url gets any answer.
func reachable(url string) bool {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext, Proxy: http.ProxyFromEnvironment}}
	resp, err := c.Head(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode < 500
}
