package session

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"sandbar/app/env/ociimage"
	"sandbar/tests/registrytest"
)

// TestRemoveEnvImage: a pulled image a session boots on is listed as in
// use and its removal refused, saying which session, while the session
// is there, in the trash too; once the trash is emptied it is removed.
// An unknown digest is ErrNotFound.
func TestRemoveEnvImage(t *testing.T) {
	registrytest.NeedTool(t, "mkfs.ext4", "e2fsprogs")
	reg := registrytest.Start(t, "", "")
	f := newFixture(t)
	ctx := context.Background()

	img, err := random.Image(32<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := reg.Push(t, "sandbar/inuse:1", img)
	pulled, err := (&ociimage.Store{Dir: f.paths.EnvImages()}).Pull(ctx, ref, ociimage.PullOptions{LocalTools: []string{}})
	if err != nil {
		t.Fatal(err)
	}

	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up"}},
		Root: &RootImage{Path: pulled.Path, Name: ref, Digest: pulled.Digest}})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	list, err := f.m.EnvImages(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("EnvImages: %+v, %v", list, err)
	}
	if got := list[0]; got.Ref != ref || got.Digest != pulled.Digest || got.Size != pulled.Size || got.InUse != "session "+shortKey(s.ID) {
		t.Errorf("listed %+v", got)
	}
	err = f.m.RemoveEnvImage(ctx, pulled.Digest)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "session "+shortKey(s.ID)+" boots on it") {
		t.Errorf("removing an image a session boots on: %v", err)
	}

	if err := f.m.Remove(ctx, s.ID, true); err != nil {
		t.Fatal(err)
	}
	err = f.m.RemoveEnvImage(ctx, pulled.Digest)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "(in the trash)") {
		t.Errorf("removing an image a session in the trash boots on: %v", err)
	}
	if _, err := f.m.EmptyTrash(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.m.RemoveEnvImage(ctx, pulled.Digest); err != nil {
		t.Fatalf("removing an unused image: %v", err)
	}
	if list, _ := f.m.EnvImages(ctx); len(list) != 0 {
		t.Errorf("after removal: %+v", list)
	}
	if err := f.m.RemoveEnvImage(ctx, pulled.Digest); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing it again: %v, want ErrNotFound", err)
	}
}
