package cli

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestImagePull pulls an image from a registry on loopback (the
// registry library's own server; app/env/ociimage tests against
// docker-registry) and prints where it is, then a cache hit.
func TestImagePull(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "arm64"
	img, _ = mutate.ConfigFile(img, cf)
	ref := host + "/team/tool:1"
	r, _ := name.ParseReference(ref, name.Insecure)
	if err := remote.Write(r, img, remote.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()

	env, out := testEnv(t)
	if err := Run(context.Background(), env, []string{"image", "pull", "--platform", "linux/arm64", ref}); err != nil {
		t.Fatalf("image pull: %v\n%s", err, out)
	}
	t.Logf("image pull printed:\n%s", out)
	want := "image " + ref + " (" + digest.Hex[:12] + ", linux/arm64) pulled in "
	if !strings.Contains(out.String(), "pull…") || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "rootfs.ext4") {
		t.Errorf("image pull printed %q, want %q and the path", out, want)
	}
	out.Reset()
	if err := Run(context.Background(), env, []string{"image", "ls"}); err != nil || !strings.Contains(out.String(), "images pulled for project environments") || !strings.Contains(out.String(), ref) || !strings.Contains(out.String(), digest.Hex[:12]) {
		t.Errorf("image ls: %v\n%s", err, out)
	}
	out.Reset()
	if err := Run(context.Background(), env, []string{"image", "pull", "--platform", "linux/arm64", ref}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "already pulled") {
		t.Errorf("the second pull printed %q, want already pulled", out)
	}
	err = Run(context.Background(), env, []string{"image", "pull", "--platform", "linux/riscv64", ref})
	if err == nil || !strings.Contains(err.Error(), "linux/arm64 only") {
		t.Errorf("a pull for riscv64: %v", err)
	}
	var u UsageError
	if err := Run(context.Background(), env, []string{"image", "pull"}); err == nil || !errors.As(err, &u) {
		t.Errorf("image pull without a ref: %v, want a usage error", err)
	}
}
