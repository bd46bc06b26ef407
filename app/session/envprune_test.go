package session

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"sandbar/app/env/ociimage"
)

// TestPruneEnvImages: an image pulled for environments that nothing used
// for two weeks and no session (live or in the trash) boots on is
// removed; the one a session boots on, a recent one and the most
// recently used one stay.
func TestPruneEnvImages(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	f := newFixture(t)
	st := &ociimage.Store{Dir: f.m.cfg.Paths.EnvImages()}
	pull := func(tag string) ociimage.Image {
		t.Helper()
		img, err := random.Image(4096, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", runtime.GOARCH
		img, _ = mutate.ConfigFile(img, cf)
		ref := strings.TrimPrefix(srv.URL, "http://") + "/env/" + tag
		r, _ := name.ParseReference(ref, name.Insecure)
		if err := remote.Write(r, img); err != nil {
			t.Fatal(err)
		}
		got, err := st.Pull(context.Background(), ref, ociimage.PullOptions{LocalTools: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	inUse, old, trashed, recent, newest := pull("in-use"), pull("old"), pull("trashed"), pull("recent"), pull("newest")
	now := time.Now()
	age := func(img ociimage.Image, d time.Duration) {
		t.Helper()
		p := filepath.Join(st.Dir, strings.Replace(img.Digest, ":", "-", 1), "last-use")
		if err := os.Chtimes(p, now.Add(-d), now.Add(-d)); err != nil {
			t.Fatal(err)
		}
	}
	age(inUse, 30*24*time.Hour)
	age(old, 20*24*time.Hour)
	age(trashed, 20*24*time.Hour)
	age(recent, 3*24*time.Hour)
	age(newest, time.Hour)
	use := func(dir string, img ociimage.Image) {
		t.Helper()
		os.MkdirAll(dir, 0o700)
		if err := writeRootImage(filepath.Join(dir, "root-image.json"), &RootImage{Path: img.Path, Name: img.Ref}); err != nil {
			t.Fatal(err)
		}
	}
	use(f.m.cfg.Paths.SessionDir("live1").Path(), inUse)
	use(f.m.cfg.Paths.TrashedSessionDir("gone1", now).Path(), trashed)

	f.m.pruneEnvImages(context.Background(), now)
	left, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, img := range left {
		refs = append(refs, img.Ref[strings.LastIndex(img.Ref, "/")+1:])
	}
	if got := strings.Join(refs, " "); got != "newest recent trashed in-use" {
		t.Errorf("images left: %s, want newest recent trashed in-use", got)
	}
}
