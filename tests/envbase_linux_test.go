package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sandbar/guest/image"
	"sandbar/tests/registrytest"
)

// The environment tests' images: a Debian root made here from the
// downloads cache, as a one-layer OCI image, served by a real
// docker-registry on loopback. One helper for the tests that pull
// (envimage) and the tests that build (envbuild).

// basePath is the PATH every test image's config gives.
const basePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// serveImage starts a docker-registry for the test (skipping, or failing
// under CI, without one), pushes img as repoTag and returns the registry
// and the image's reference.
func serveImage(t *testing.T, repoTag string, img v1.Image) (*registrytest.Registry, string) {
	t.Helper()
	registrytest.NeedTool(t, "docker-registry", "docker-registry")
	reg := registrytest.Start(t, "", "")
	return reg, reg.Push(t, repoTag, img)
}

// debianOCI is an OCI image of the Debian root opts describes, for this
// machine's architecture, with env (PATH first) in its config.
func debianOCI(t *testing.T, opts image.RootOptions, env ...string) v1.Image {
	t.Helper()
	began := time.Now()
	data := buildRoot(t, opts, "")
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img = registrytest.Platform(t, img, runtime.GOARCH, func(c *v1.Config) { c.Env = append([]string{basePath}, env...) })
	t.Logf("the test's Debian root (%d MiB) made in %s", len(data)>>20, time.Since(began).Round(100*time.Millisecond))
	return img
}

var (
	rootbuildOnce sync.Once
	rootbuildPath string
	rootbuildErr  error
)

// buildRoot writes the Debian root opts describes (its Downloads is the
// user's cache whatever it says) with tests/rootbuild, built once per
// run without -race: in this process, under -race, it took seven times
// as long. With ext4 it writes that file and returns nil; without, it
// returns the root as a tar.
func buildRoot(t *testing.T, opts image.RootOptions, ext4 string) []byte {
	t.Helper()
	rootbuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandbar-rootbuild-")
		if err != nil {
			rootbuildErr = err
			return
		}
		rootbuildPath = filepath.Join(dir, "rootbuild")
		if out, err := exec.Command("go", "build", "-o", rootbuildPath, "./rootbuild").CombinedOutput(); err != nil {
			rootbuildErr = fmt.Errorf("build tests/rootbuild: %v\n%s", err, out)
		}
	})
	if rootbuildErr != nil {
		t.Fatal(rootbuildErr)
	}
	spec, err := json.Marshal(map[string]any{"packages": opts.Packages, "essential": opts.Essential,
		"without": opts.Without, "links": opts.Links, "files": opts.Files})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var args []string
	if ext4 != "" {
		args = []string{"-ext4", ext4}
	}
	cmd := exec.CommandContext(ctx, rootbuildPath, args...)
	cmd.Stdin = bytes.NewReader(spec)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("build the Debian root (%s): %v\n%s", spec, err, errb.String())
	}
	return out.Bytes()
}

// slimDebianImage is an OCI image of a Debian root of dash and coreutils
// alone (no Essential set, no git, 23 MiB): what the build tests build
// FROM, small because the build moves it into the VM and back out under
// emulation.
func slimDebianImage(t *testing.T) v1.Image {
	t.Helper()
	return debianOCI(t, image.RootOptions{Packages: []string{"dash", "coreutils"}})
}

// debianImage is an OCI image of a Debian root (essential packages, no
// git) with a marker file and a variable in its config.
func debianImage(t *testing.T) v1.Image {
	t.Helper()
	return debianOCI(t, image.RootOptions{Essential: true, Without: []string{"git"},
		Files: []image.RootFile{{Name: "etc/image-marker", Mode: 0o644, Data: []byte("built for sandbar's test\n")}}},
		"IMAGE_FLAVOUR=test")
}
