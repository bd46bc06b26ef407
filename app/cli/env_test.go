package cli

import (
	"context"
	"encoding/json"
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

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// TestEnvShow: `sandbar env` says where a project's environment comes
// from and whether it is used (trusted or not), what the file asks for
// (image not pulled yet, features, each command and when it runs, the
// fields not acted on), the repository's text escaped; --json gives the
// same; a file that does not parse names its line and column.
func TestEnvShow(t *testing.T) {
	env := sessiontest.New(t)
	svc, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := env.Repo(t, "envrepo")
	if _, _, err := svc.AddProject(ctx, repo); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		stdout.Reset()
		err := Run(ctx, cli, args)
		return stdout.String(), err
	}
	out, err := run("env", repo)
	if err != nil || !strings.Contains(out, "environment: Sandbar's own image (the repository has no devcontainer.json)") {
		t.Errorf("no file: %v %q", err, out)
	}

	file := filepath.Join(repo, ".devcontainer", "devcontainer.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(`{
		// comments and a trailing comma
		"image": "golang:1.23",
		"features": {"ghcr.io/devcontainers/features/node:1": {"version": "22"}},
		"postCreateCommand": "go mod download \u001b[2J",
		"postStartCommand": ["make", "dev"],
		"runArgs": ["--privileged"],
	}`), 0o644)
	out, err = run("env", repo)
	for _, want := range []string{
		"environment: Sandbar's own image: the repository's .devcontainer/devcontainer.json is not trusted yet, so not used",
		"image: golang:1.23 (not on this machine yet",
		"features: ghcr.io/devcontainers/features/node:1",
		`postCreateCommand (once, in the prepared environment): /bin/sh -c go mod download \x1b[2J`,
		"postStartCommand (every start, a restart too): make dev",
		"not supported, so not acted on: runArgs",
		"to use it: sandbar project trust envrepo",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("sandbar env lacks %q (%v):\n%s", want, err, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape reached the terminal: %q", out)
	}
	if _, err := run("project", "trust", "--yes", repo); err != nil {
		t.Fatal(err)
	}
	out, _ = run("env", "--json", repo)
	var v session.EnvironmentView
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Source != "devcontainer" || v.Trust != session.TrustTrusted || v.Image != "golang:1.23" || len(v.Commands) != 2 {
		t.Errorf("sandbar env --json after trust: %v %+v", err, v)
	}

	os.WriteFile(file, []byte("{\n  \"image\": 3\n}\n"), 0o644)
	if _, err := run("project", "trust", "--yes", repo); err != nil {
		t.Fatal(err)
	}
	out, _ = run("env", repo)
	if !strings.Contains(out, "cannot be used: .devcontainer/devcontainer.json:2:") {
		t.Errorf("a bad file: %q", out)
	}
}

// TestEnvBuild: `sandbar env build` pulls the image a trusted
// devcontainer.json names (a registry on loopback), after which `sandbar
// env` shows it pulled; an untrusted file builds nothing.
func TestEnvBuild(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	img, err := random.Image(1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	img, _ = mutate.ConfigFile(img, cf)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/env:1"
	r, _ := name.ParseReference(ref, name.Insecure)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}

	env := sessiontest.New(t)
	svc, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := env.Repo(t, "envbuild")
	if _, _, err := svc.AddProject(ctx, repo); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, ".devcontainer"), 0o755)
	os.WriteFile(filepath.Join(repo, ".devcontainer", "devcontainer.json"), []byte(`{"image": "`+ref+`"}`), 0o644)
	run := func(args ...string) (string, error) {
		stdout.Reset()
		err := Run(ctx, cli, args)
		return stdout.String(), err
	}
	if out, err := run("env", "build", repo); err != nil || !strings.Contains(out, "nothing to build") {
		t.Errorf("env build of an untrusted file: %v %q", err, out)
	}
	if _, err := run("project", "trust", "--yes", repo); err != nil {
		t.Fatal(err)
	}
	out, err := run("env", "build", repo)
	if err != nil || !strings.Contains(out, "image "+ref) || !strings.Contains(out, "start on it without a pull") {
		t.Fatalf("env build: %v %q", err, out)
	}
	if out, _ := run("env", repo); !strings.Contains(out, "image: "+ref+" (sha256:") {
		t.Errorf("sandbar env after the build: %q", out)
	}
}
