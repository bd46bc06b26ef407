package dockerbuild

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/ociimage"
	"sandbar/guest/image"
	"sandbar/tests/registrytest"
	"sandbar/vm"
)

// noVM is a hypervisor that boots nothing: a build that needs a VM fails
// with errNoVM, which tells the tests a VM was asked for.
type noVM struct{}

var errNoVM = errors.New("no VM in this test")

func (noVM) Name() string                                      { return "none" }
func (noVM) Check(context.Context) vm.Status                   { return vm.Status{} }
func (noVM) Info() vm.Info                                     { return vm.Info{} }
func (noVM) Boot(context.Context, vm.Spec) (vm.Machine, error) { return nil, errNoVM }

func platformImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestBuildCache: an unchanged build is served from the store without a
// VM; a changed one asks for a VM; with the base's registry out of reach,
// the image built before from the same inputs serves, saying why.
func TestBuildCache(t *testing.T) {
	registrytest.NeedTool(t, "docker-registry", "docker-registry")
	reg := registrytest.Start(t, "", "")
	base := platformImage(t)
	ref := reg.Push(t, "base/img:1", base)
	baseDigest, _ := base.Digest()

	b := &Builder{Hypervisor: noVM{}, Store: &ociimage.Store{Dir: t.TempDir()}, Dir: t.TempDir(),
		Guest: &image.Image{Manifest: image.Manifest{Packages: []image.PackageRef{{Name: "buildah", Version: "1.28"}}}}}
	req := Request{Dockerfile: ".devcontainer/Dockerfile", DockerfileData: []byte("FROM " + ref + "\nRUN true\n"),
		DockerfileID: "blob1", Context: ".", ContextID: "tree1", Args: []devcontainer.EnvVar{{Name: "A", Value: "1"}},
		Workspace: "/nonexistent", Pull: ociimage.PullOptions{LocalTools: []string{}}}
	ctx := context.Background()

	if _, err := b.Build(ctx, req); !errors.Is(err, errNoVM) {
		t.Fatalf("a first build: %v, want it to boot a VM", err)
	}

	// What an earlier build left: the image in the store, its key.
	built := platformImage(t)
	stored, err := b.Store.Import(ctx, "the test's image", "built", built, ociimage.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := Key(KeyInputs{Dockerfile: req.Dockerfile, DockerfileID: "blob1", Context: ".", ContextID: "tree1",
		Args: map[string]string{"A": "1"}, Bases: []string{baseDigest.String()}, Platform: "linux/" + runtime.GOARCH, Builder: "buildah 1.28"})
	rec, _ := json.Marshal(keyRecord{Digest: stored.Digest})
	if err := writeAtomic(b.keyPath(key), rec); err != nil {
		t.Fatal(err)
	}
	res, err := b.Build(ctx, req)
	if err != nil || !res.Cached || res.Image.Digest != stored.Digest || res.Image.Source != "built" {
		t.Fatalf("the unchanged build: %+v, %v; want the stored %s", res, err, stored.Digest)
	}

	changed := req
	changed.Args = []devcontainer.EnvVar{{Name: "A", Value: "2"}}
	if _, err := b.Build(ctx, changed); !errors.Is(err, errNoVM) {
		t.Errorf("a build with another argument: %v, want it to boot a VM", err)
	}
	changed = req
	changed.ContextID = "tree2"
	if _, err := b.Build(ctx, changed); !errors.Is(err, errNoVM) {
		t.Errorf("a build of another context: %v, want it to boot a VM", err)
	}

	// The registry out of reach (a proxy that refuses): the image built
	// before serves, and the result says why.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	offline := req
	offline.Pull.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse(dead) }
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err = b.Build(ctx, offline)
	if err != nil || res.Image.Digest != stored.Digest || !strings.Contains(res.Note, "cannot be reached") {
		t.Fatalf("offline: %+v, %v", res, err)
	}
	// Another context offline has nothing built before: the pull's error.
	offline.ContextID = "tree3"
	if _, err := b.Build(ctx, offline); !errors.Is(err, ociimage.ErrUnreachable) || !strings.Contains(err.Error(), "line 1: the base image "+ref) {
		t.Errorf("offline, nothing built before: %v", err)
	}
}

// TestBuildErrors: a missing base image is ociimage's error with the
// Dockerfile's line; a bad Dockerfile is refused before anything is
// pulled.
func TestBuildErrors(t *testing.T) {
	registrytest.NeedTool(t, "docker-registry", "docker-registry")
	reg := registrytest.Start(t, "", "")
	missing := reg.Ref(t, "no/such:1").String()
	b := &Builder{Hypervisor: noVM{}, Store: &ociimage.Store{Dir: t.TempDir()}, Dir: t.TempDir(), Guest: &image.Image{}}
	req := Request{Dockerfile: "Dockerfile", DockerfileData: []byte("# base\n\nFROM " + missing + "\n"), Pull: ociimage.PullOptions{LocalTools: []string{}}}
	_, err := b.Build(context.Background(), req)
	if !errors.Is(err, ociimage.ErrNotFound) || !strings.Contains(err.Error(), "Dockerfile, line 3: the base image "+missing) {
		t.Errorf("a missing base: %v", err)
	}
	req.DockerfileData = []byte("FROM " + missing + "\nRUN <<EOF\nx\nEOF\n")
	var pe *ParseError
	if _, err := b.Build(context.Background(), req); !errors.As(err, &pe) {
		t.Errorf("a heredoc: %v", err)
	}
}

func TestBuildError(t *testing.T) {
	e := &BuildError{Dockerfile: ".devcontainer/Dockerfile", Step: "STEP 3/3: RUN exit 7", Code: 7, Tail: []string{"a", "b"}}
	want := ".devcontainer/Dockerfile failed to build at STEP 3/3: RUN exit 7 (exit code 7): fix the Dockerfile and start again; the build's last lines:\n  a\n  b"
	if e.Error() != want {
		t.Errorf("%q", e.Error())
	}
}
