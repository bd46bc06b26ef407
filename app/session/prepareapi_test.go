package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/store"
)

// TestPrepareRefusesADockerfileBuild: a project whose trusted file builds
// its image from a Dockerfile is prepared on the image a session builds
// as it starts; `sandbar env build` must say so rather than prepare it on
// Sandbar's own image, which no session of the project would boot on.
func TestPrepareRefusesADockerfileBuild(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := filepath.Join(f.repo, ".devcontainer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM debian\nRUN true\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "devcontainer.json"), []byte(`{"build": {"dockerfile": "Dockerfile"}, "postCreateCommand": "make"}`), 0o644)
	git(t, f.repo, "add", ".")
	git(t, f.repo, "commit", "-qm", "environment")

	if _, _, err := f.m.AddProject(ctx, f.repo); err != nil {
		t.Fatal(err)
	}
	rev, err := f.m.RepoTrust(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for _, pr := range rev.Pending() {
		hashes[pr.Kind] = pr.Hash
	}
	if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustTrusted, hashes); err != nil {
		t.Fatal(err)
	}
	_, err = f.m.PrepareEnvironment(ctx, f.repo, false)
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "when a session starts") {
		t.Fatalf("preparing a Dockerfile project: %v, want a refusal saying a session builds it", err)
	}
}
