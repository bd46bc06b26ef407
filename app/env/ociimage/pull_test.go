package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"sandbar/app/net/hostproxy/proxytest"
)

// registryOnly pulls without asking a local Docker or Podman.
func registryOnly(o PullOptions) PullOptions {
	o.LocalTools = []string{}
	return o
}

// TestPullLayers pulls an image whose layers replace, delete (whiteout),
// hide (opaque directory) and hard-link across layers, and reads the ext4
// back; then the cache hit, List, Touch and Remove.
func TestPullLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	base := layer(t,
		entry{name: "etc/", typ: tar.TypeDir},
		entry{name: "etc/keep.txt", body: "base keep\n"},
		entry{name: "etc/gone.txt", body: "deleted above\n"},
		entry{name: "opt/", typ: tar.TypeDir},
		entry{name: "opt/old/", typ: tar.TypeDir},
		entry{name: "opt/old/a", body: "hidden by the opaque dir\n"},
		entry{name: "opt/old/sub/", typ: tar.TypeDir},
		entry{name: "opt/old/sub/b", body: "hidden too\n"},
		entry{name: "usr/", typ: tar.TypeDir},
		entry{name: "usr/bin/", typ: tar.TypeDir},
		entry{name: "usr/bin/tool", body: "v1\n", mode: 0o755},
		entry{name: "srv/", typ: tar.TypeDir, mode: 0o700},
		entry{name: "srv/data", body: "under a dir only the base names\n"},
	)
	mid := layer(t,
		entry{name: "etc/.wh.gone.txt"},
		entry{name: "opt/old/.wh..wh..opq"},
		entry{name: "opt/old/new", body: "new\n"},
		entry{name: "usr/bin/tool", body: "v2\n", mode: 0o755},
		entry{name: "var/lib/x", body: "no parent entries\n"},
		entry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin"},
	)
	top := layer(t,
		// A hard link to a file of a lower layer: Extract writes it first.
		entry{name: "usr/bin/keep-link", typ: tar.TypeLink, link: "etc/keep.txt"},
		entry{name: "etc/", typ: tar.TypeDir, mode: 0o750},
		entry{name: "srv/new", body: "top\n"},
	)
	cfg := v1.Config{
		Env: []string{"PATH=/usr/bin:/bin", "GOFLAGS=-mod=vendor"}, User: "1000:1000", WorkingDir: "/src",
		Entrypoint: []string{"/bin/sh", "-c"}, Cmd: []string{"echo hi"}, Labels: map[string]string{"org.example": "yes"},
	}
	img := image(t, runtime.GOARCH, cfg, base, mid, top)
	ref := reg.Push(t, "sandbar/layers:1", img)
	wantDigest, _ := img.Digest()
	m, _ := img.Manifest()
	wantBytes := m.Config.Size
	for _, l := range m.Layers {
		wantBytes += l.Size
	}

	s := &Store{Dir: t.TempDir()}
	var ps []Progress
	got, err := s.Pull(context.Background(), ref, PullOptions{Progress: func(p Progress) { ps = append(ps, p) }})
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if got.Digest != wantDigest.String() || got.Ref != ref || got.Source != "registry" || got.Platform != "linux/"+runtime.GOARCH {
		t.Errorf("pulled %+v; want digest %s, ref %s, source registry", got, wantDigest, ref)
	}
	wantCfg := Config{Env: cfg.Env, User: cfg.User, WorkingDir: cfg.WorkingDir, Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, Labels: cfg.Labels}
	if !reflect.DeepEqual(got.Config, wantCfg) {
		t.Errorf("config %+v, want %+v", got.Config, wantCfg)
	}
	p := got.Path
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("the root file %s: %v, mode %v; want read-only 0444", p, err, fi.Mode())
	}
	checkExt4(t, p)
	for file, want := range map[string]string{
		"/etc/keep.txt":      "base keep\n",
		"/usr/bin/tool":      "v2\n",
		"/usr/bin/keep-link": "base keep\n",
		"/opt/old/new":       "new\n",
		"/var/lib/x":         "no parent entries\n",
		"/srv/data":          "under a dir only the base names\n",
		"/srv/new":           "top\n",
	} {
		if c := catFile(t, p, file); c != want {
			t.Errorf("%s holds %q, want %q", file, c, want)
		}
	}
	if ns := names(t, p, "/etc"); !slices.Equal(ns, []string{"keep.txt"}) {
		t.Errorf("/etc holds %q: the whiteout of gone.txt was not applied", ns)
	}
	if ns := names(t, p, "/opt/old"); !slices.Equal(ns, []string{"new"}) {
		t.Errorf("/opt/old holds %q: the opaque directory did not hide the lower layer's entries", ns)
	}
	for _, ns := range names(t, p, "/") {
		if strings.HasPrefix(ns, ".wh.") {
			t.Errorf("whiteout %s is in the root", ns)
		}
	}
	if st := debugfs(t, p, "stat /etc"); !strings.Contains(st, "Mode:  0750") {
		t.Errorf("/etc's mode is not the top layer's 0750:\n%s", st)
	}
	if st := debugfs(t, p, "stat /srv"); !strings.Contains(st, "Mode:  0700") {
		t.Errorf("/srv's mode is not the base layer's 0700:\n%s", st)
	}
	if st := debugfs(t, p, "stat /usr/bin/keep-link"); !strings.Contains(st, "Links: 2") {
		t.Errorf("usr/bin/keep-link is not a hard link of etc/keep.txt:\n%s", st)
	}
	if st := debugfs(t, p, "stat /bin"); !strings.Contains(st, `Fast link dest: "usr/bin"`) {
		t.Errorf("/bin is not the symlink to usr/bin:\n%s", st)
	}

	// Progress: starts at zero, ends whole, never goes back.
	if len(ps) < 2 {
		t.Fatalf("%d progress reports, want at least a start and an end", len(ps))
	}
	if first := ps[0]; first.BytesDone != 0 || first.LayersDone != 0 || first.LayersTotal != 3 || first.BytesTotal != wantBytes {
		t.Errorf("first progress %+v, want 0 of %d bytes, 0 of 3 layers", first, wantBytes)
	}
	if last := ps[len(ps)-1]; last.BytesDone != wantBytes || last.LayersDone != 3 {
		t.Errorf("last progress %+v, want all %d bytes and 3 layers", last, wantBytes)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].BytesDone < ps[i-1].BytesDone || ps[i].LayersDone < ps[i-1].LayersDone {
			t.Errorf("progress went back: %+v after %+v", ps[i], ps[i-1])
		}
	}

	// A second pull, under another tag, is a cache hit: no blob fetched.
	reg.Push(t, "sandbar/layers:again", img)
	before := reg.BlobGets.Load()
	ps = nil
	again, err := s.Pull(context.Background(), reg.Host+"/sandbar/layers:again", PullOptions{Progress: func(p Progress) { ps = append(ps, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if n := reg.BlobGets.Load() - before; n != 0 {
		t.Errorf("the second pull of one digest fetched %d blobs, want none", n)
	}
	if again.Path != got.Path || again.Digest != got.Digest || again.Ref != reg.Host+"/sandbar/layers:again" {
		t.Errorf("second pull %+v, want the first's path %s", again, got.Path)
	}
	if len(ps) != 1 || !ps[0].Cached {
		t.Errorf("a cache hit reported %+v, want one Cached", ps)
	}

	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Digest != got.Digest || list[0].Size != got.Size || list[0].Size == 0 {
		t.Fatalf("List = %+v, %v; want the one image of %d bytes", list, err, got.Size)
	}
	if list[0].Ref != ref || list[0].LastUse.IsZero() {
		t.Errorf("listed %+v: want the first ref and a last use", list[0])
	}
	if err := s.Touch(got.Digest); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Get(got.Digest); err != nil || g.LastUse.Before(list[0].LastUse) {
		t.Errorf("after Touch: %+v, %v", g, err)
	}
	if err := s.Remove(context.Background(), got.Digest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(got.Digest); !errors.Is(err, ErrNotStored) {
		t.Errorf("Get after Remove: %v, want ErrNotStored", err)
	}
	if err := s.Remove(context.Background(), got.Digest); !errors.Is(err, ErrNotStored) {
		t.Errorf("second Remove: %v, want ErrNotStored", err)
	}
	assertNothingLeft(t, s)
	if _, err := s.Get("sha256:../../etc"); err == nil || !strings.Contains(err.Error(), "not an image digest") {
		t.Errorf("Get of a path: %v", err)
	}
}

// TestPullMultiArch resolves an amd64+arm64 index to the wanted platform
// and names the index's platforms when it has none for it.
func TestPullMultiArch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	archImg := map[string]v1.Image{}
	idx := v1.ImageIndex(empty.Index)
	for _, arch := range []string{"amd64", "arm64"} {
		img := image(t, arch, v1.Config{}, layer(t, entry{name: "arch", body: arch + "\n"}))
		archImg[arch] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	ref := reg.PushIndex(t, "sandbar/multi:1", idx)

	s := &Store{Dir: t.TempDir()}
	for _, arch := range []string{"arm64", "amd64"} {
		// The default tools: docker's CLI may be here without a daemon;
		// not finding the image there falls through to the registry.
		got, err := s.Pull(context.Background(), ref, PullOptions{Platform: "linux/" + arch})
		if err != nil {
			t.Fatalf("pull %s for %s: %v", ref, arch, err)
		}
		want, _ := archImg[arch].Digest()
		if got.Digest != want.String() || got.Platform != "linux/"+arch {
			t.Errorf("for %s: digest %s platform %s, want %s", arch, got.Digest, got.Platform, want)
		}
		if c := catFile(t, got.Path, "/arch"); c != arch+"\n" {
			t.Errorf("for %s the root holds /arch %q", arch, c)
		}
	}
	def, err := s.Pull(context.Background(), ref, registryOnly(PullOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if def.Platform != "linux/"+runtime.GOARCH {
		t.Errorf("the default platform pulled %s, want linux/%s", def.Platform, runtime.GOARCH)
	}

	_, err = s.Pull(context.Background(), ref, registryOnly(PullOptions{Platform: "linux/s390x"}))
	if !errors.Is(err, ErrNoPlatform) {
		t.Fatalf("pull for s390x: %v, want ErrNoPlatform", err)
	}
	for _, w := range []string{ref, "linux/s390x", "linux/amd64, linux/arm64"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	// A single-platform image for another architecture says so too.
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	one := reg.Push(t, "sandbar/only:1", archImg[other])
	_, err = s.Pull(context.Background(), one, registryOnly(PullOptions{}))
	if !errors.Is(err, ErrNoPlatform) || !strings.Contains(err.Error(), "linux/"+other+" only") {
		t.Errorf("pull of a %s-only image: %v", other, err)
	}
}

// TestPullConcurrent: pulls of one digest at once all succeed, on one
// download, with one image in the store.
func TestPullConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	img := image(t, runtime.GOARCH, v1.Config{},
		layer(t, entry{name: "a", body: strings.Repeat("a", 1<<20)}),
		layer(t, entry{name: "b", body: strings.Repeat("b", 1<<20)}))
	ref := reg.Push(t, "sandbar/conc:1", img)
	before := reg.BlobGets.Load()
	s := &Store{Dir: t.TempDir()}
	const n = 4
	var wg sync.WaitGroup
	got := make([]Image, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = s.Pull(context.Background(), ref, registryOnly(PullOptions{}))
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
		if got[i].Path != got[0].Path {
			t.Errorf("pull %d gave %s, pull 0 %s", i, got[i].Path, got[0].Path)
		}
	}
	// Two layers and the config, fetched once.
	if d := reg.BlobGets.Load() - before; d != 3 {
		t.Errorf("%d concurrent pulls fetched %d blobs, want 3 (2 layers and the config, once)", n, d)
	}
	if c := catFile(t, got[0].Path, "/b"); len(c) != 1<<20 {
		t.Errorf("/b is %d bytes, want 1 MiB", len(c))
	}
	list, _ := s.List()
	if len(list) != 1 {
		t.Errorf("the store holds %d images, want 1", len(list))
	}
}

// TestPullThroughProxy: with the host's proxy given, every request of the
// pull goes through it (the registry here is plain HTTP on loopback, so
// the proxy forwards them; HTTPS would be a CONNECT), and the image
// arrives whole. A proxy that refuses fails the pull.
func TestPullThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	img := image(t, runtime.GOARCH, v1.Config{Cmd: []string{"true"}},
		layer(t, entry{name: "etc/", typ: tar.TypeDir}, entry{name: "etc/proxied.txt", body: "through the proxy\n"}))
	ref := reg.Push(t, "sandbar/proxied:1", img)
	p := proxytest.NewConnect(t)
	proxy := func(*http.Request) (*url.URL, error) { return p.URL, nil }
	s := &Store{Dir: t.TempDir()}
	got, err := s.Pull(context.Background(), ref, registryOnly(PullOptions{Proxy: proxy}))
	if err != nil {
		t.Fatalf("pull through the proxy: %v", err)
	}
	if body := catFile(t, got.Path, "/etc/proxied.txt"); body != "through the proxy\n" {
		t.Errorf("/etc/proxied.txt is %q", body)
	}
	reqs := p.Requests()
	blobs := 0
	for _, r := range reqs {
		if !strings.Contains(r, reg.Host) {
			t.Errorf("the proxy forwarded a request to somewhere else: %s", r)
		}
		if strings.Contains(r, "/blobs/") {
			blobs++
		}
	}
	if blobs < 2 {
		t.Errorf("the proxy carried %d blob requests, want the config's and the layer's at least: %q", blobs, reqs)
	}

	p.Refuse(http.StatusForbidden)
	_, err = (&Store{Dir: t.TempDir()}).Pull(context.Background(), ref, registryOnly(PullOptions{Proxy: proxy}))
	if err == nil {
		t.Fatal("a pull through a proxy that refuses succeeded")
	}
	if !strings.Contains(err.Error(), "403") && !strings.Contains(strings.ToLower(err.Error()), "forbidden") {
		t.Errorf("a refused pull does not say the proxy's answer: %v", err)
	}
}
