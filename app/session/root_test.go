package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sandbar/app/store"

	"sandbar/vm"
)

// fakeExt4 writes a file with an ext4 superblock's magic, which is all
// the host reads of a root image.
func fakeExt4(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image root.ext4")
	b := make([]byte, 4096)
	b[1024+56], b[1024+57] = 0x53, 0xEF
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStartOnImageRoot: a session started with Options.Root boots that
// file as its root, Sandbar's own root beside it for its tools, at its
// start and at a restart; bad roots are refused before anything is made.
func TestStartOnImageRoot(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	root := fakeExt4(t)
	agent := AgentSpec{Command: "sh", Args: []string{"-c", `echo up; sleep 600`}}
	ri := &RootImage{Path: root, Name: "example/node:22", Digest: "sha256:abc", User: "node", Env: []string{"PATH=/usr/local/go/bin:/usr/bin"}}
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512, Root: ri})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	checkSpec := func(spec vm.Spec) {
		t.Helper()
		if len(spec.Disks) < 5 || spec.Disks[0] != (vm.Disk{Path: root, ReadOnly: true}) {
			t.Fatalf("disks %+v: want the image's root first", spec.Disks)
		}
		last := len(spec.Disks) - 1
		if !spec.Disks[last].ReadOnly || filepath.Base(spec.Disks[last].Path) != "rootfs.ext4" ||
			!slices.Contains(spec.CommandLine, "sandbar.tools=/dev/"+vm.DiskName(last)) {
			t.Errorf("Sandbar's own root is not the tools disk: disks %+v, command line %q", spec.Disks, spec.CommandLine)
		}
	}
	checkSpec(f.hv.Booted()[0].Spec)
	got, err := readRootImage(f.paths.SessionDir(s.ID).RootImage())
	if err != nil || got == nil || got.Path != root || got.User != "node" || !slices.Equal(got.Env, ri.Env) {
		t.Fatalf("recorded root %+v, %v", got, err)
	}
	waitFor(t, f, s.ID, "environment: the agent's root is the image example/node:22 (sha256:abc)")

	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	if _, err := f.m.Restart(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	f.until(t, s.ID, 30*time.Second, "a second boot", func(store.Session) bool { return len(f.hv.Booted()) == 2 })
	checkSpec(f.hv.Booted()[1].Spec)

	bad := filepath.Join(t.TempDir(), "not-ext4")
	os.WriteFile(bad, []byte("hello"), 0o644)
	for _, r := range []*RootImage{{Path: bad}, {Path: "relative.ext4"}, {Path: ""}, {Path: filepath.Join(t.TempDir(), "missing.ext4")}} {
		if _, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512, Root: r}); !errors.Is(err, ErrBadOptions) {
			t.Errorf("root %q: Start = %v, want ErrBadOptions", r.Path, err)
		}
	}
}
