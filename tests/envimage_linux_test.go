package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sandbar/app/config"
	"sandbar/guest/image"
	"sandbar/guest/image/download"
	"sandbar/tests/registrytest"
)

// TestDevcontainerImage: a trusted devcontainer.json that names an image
// in a registry (a real docker-registry on loopback) runs the session on
// that image: pulled on the host with its progress, its root the agent's,
// its config's variables the agent's and the commands', its files there;
// the image has no git, yet the work is saved and merged with Sandbar's
// own. A second session finds the image pulled.
func TestDevcontainerImage(t *testing.T) {
	registrytest.NeedTool(t, "docker-registry", "docker-registry")
	reg := registrytest.Start(t, "", "")
	ref := reg.Push(t, "env/debian:1", debianImage(t))

	w := newWorld(t)
	dc := filepath.Join(w.repo, ".devcontainer")
	os.MkdirAll(dc, 0o755)
	file := fmt.Sprintf(`{
		"image": %q,
		"containerEnv": {"FROM_FILE": "${containerEnv:IMAGE_FLAVOUR}-file"},
		"postCreateCommand": "cat /etc/image-marker > created.txt; command -v git >> created.txt || echo no-git >> created.txt",
	}`, ref)
	os.WriteFile(filepath.Join(dc, "devcontainer.json"), []byte(file), 0o644)
	// What postCreateCommand leaves is an ignored file: the prepared
	// environment keeps it, listed by Sandbar's git (the image has none).
	os.WriteFile(filepath.Join(w.repo, ".gitignore"), []byte("created.txt\n"), 0o644)
	w.git("add", ".")
	w.git("commit", "-qm", "environment")
	w.ok("project", "add", w.repo)
	w.ok("project", "trust", "--yes", w.repo)
	if out := w.ok("env", w.repo); !strings.Contains(out, "image: "+ref+" (not on this machine yet") {
		t.Errorf("sandbar env before the pull:\n%s", out)
	}

	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	w.waitLog(id, "agent started", 1)
	sh := func(script string) string {
		t.Helper()
		out, errOut, code := w.guestSh(id, script)
		if code != 0 {
			_, log, _ := w.run("", "logs", id)
			t.Fatalf("%s: exit %d: %s %s\nlog:\n%s", script, code, out, errOut, clip(log))
		}
		return out
	}
	if got := sh("cat created.txt"); got != "built for sandbar's test\nno-git\n" {
		t.Errorf("postCreateCommand on the image saw %q", got)
	}
	if got := sh(`echo "$IMAGE_FLAVOUR $FROM_FILE"`); got != "test test-file\n" {
		t.Errorf("the image's and the file's variables: %q", got)
	}
	// The image's own trust gets Sandbar's CA and this machine's (the
	// company networks' issue): the bundle where Debian keeps it.
	if got := sh("grep -c 'Sandbar CA: added by the guest supervisor' /etc/ssl/certs/ca-certificates.crt"); got != "1\n" {
		t.Errorf("the image's CA bundle has Sandbar's block %q times", got)
	}
	_, log, _ := w.run("", "logs", id)
	if !strings.Contains(log, "environment: image "+ref+" (sha256:") || !strings.Contains(log, "pulled in") {
		t.Errorf("the log does not name the pulled image:\n%s", clip(log))
	}
	if out := w.ok("env", w.repo); !strings.Contains(out, "image: "+ref+" (sha256:") {
		t.Errorf("sandbar env after the pull:\n%s", out)
	}

	// The image has no git: Sandbar's own saves the work, and it merges.
	sh("echo made on the image > made.txt")
	if out := w.ok("changes", id); !strings.Contains(out, "made.txt") {
		t.Errorf("changes: %s", out)
	}
	w.ok("stop", id)
	w.ok("merge", id)
	if got := w.git("show", "sandbar/"+id+":made.txt"); got != "made on the image" {
		t.Errorf("the merged branch's made.txt: %q", got)
	}

	// The next session finds it pulled.
	id2 := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	w.waitLog(id2, "agent started", 1)
	if _, log, _ := w.run("", "logs", id2); !strings.Contains(log, "environment: image "+ref) {
		t.Errorf("the second session's log:\n%s", clip(log))
	}
}

// debianImage is an OCI image of a Debian root (essential packages, no
// git) with a marker file and variables in its config.
func debianImage(t *testing.T) v1.Image {
	t.Helper()
	paths, err := config.Resolve(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var root bytes.Buffer
	if err := image.WriteRoot(ctx, image.RootOptions{Downloads: &download.Cache{Dir: paths.Downloads}, Essential: true, Without: []string{"git"},
		Files: []image.RootFile{{Name: "etc/image-marker", Mode: 0o644, Data: []byte("built for sandbar's test\n")}}}, &root); err != nil {
		t.Fatalf("build the Debian root: %v", err)
	}
	data := root.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "IMAGE_FLAVOUR=test"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
