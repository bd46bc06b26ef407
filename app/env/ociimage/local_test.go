package ociimage

import (
	"sandbar/tests/registrytest"

	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// dockerSave writes img as `docker image save` does (Docker 25 and
// later): uncompressed layers and the config as blobs, and manifest.json.
func dockerSave(t *testing.T, out, repoTag string, img v1.Image) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(name string, b []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	cfg, _ := img.RawConfigFile()
	cfgName, _ := img.ConfigName()
	add("blobs/sha256/"+cfgName.Hex, cfg)
	ls, _ := img.Layers()
	var names []string
	for _, l := range ls {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		sum := sha256.Sum256(b)
		n := "blobs/sha256/" + hex.EncodeToString(sum[:])
		add(n, b)
		names = append(names, n)
	}
	m, _ := json.Marshal([]map[string]any{{"Config": "blobs/sha256/" + cfgName.Hex, "RepoTags": []string{repoTag}, "Layers": names}})
	add("manifest.json", m)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// fakeDocker writes a stand-in for the docker CLI that knows one image:
// `image inspect` prints its JSON as Docker does, `image save -o` copies
// the saved tarball; every call is logged. Only the two verbs Pull uses.
func fakeDocker(t *testing.T, ref, inspectJSON, tarPath string) (bin, calls string) {
	t.Helper()
	dir := t.TempDir()
	bin, calls = filepath.Join(dir, "docker"), filepath.Join(dir, "calls")
	js := filepath.Join(dir, "inspect.json")
	if err := os.WriteFile(js, []byte(inspectJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$2 $*" >> %q
[ "$1" = image ] || exit 2
case "$2" in
inspect) [ "$3" = -- ] && [ "$4" = %q ] || { echo "Error: No such image: $4" >&2; exit 1; }; cat %q ;;
save) [ "$3" = -o ] && [ "$5" = -- ] && [ "$6" = %q ] || exit 1; cp %q "$4" ;;
*) exit 2 ;;
esac
`, calls, ref, js, ref, tarPath)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, calls
}

// TestPullLocalDocker takes an image from a local Docker (its CLI's
// inspect and save, played by a script) instead of a registry: the saved
// tarball flattened with its whiteouts, cached by image ID, and the
// registry asked when the local store lacks the image or has it for
// another platform.
func TestPullLocalDocker(t *testing.T) {
	img := image(t, runtime.GOARCH, v1.Config{Env: []string{"FROM=docker"}},
		layer(t, entry{name: "app/", typ: '5'}, entry{name: "app/old", body: "old\n"}, entry{name: "app/main", body: "v1\n"}),
		layer(t, entry{name: "app/.wh.old"}, entry{name: "app/main", body: "built locally\n"}))
	id, _ := img.ConfigName()
	// A registry on loopback where none listens: a pull that goes there
	// fails as unreachable, and nothing leaves this machine.
	closed := registrytest.FreeAddr(t)
	ref := closed + "/team/app:dev"
	tarPath := filepath.Join(t.TempDir(), "saved.tar")
	dockerSave(t, tarPath, ref, img)
	inspect := fmt.Sprintf(`[{"Id":%q,"RepoTags":[%q],"Os":"linux","Architecture":%q,"Size":%d}]`, id.String(), ref, runtime.GOARCH, 4096)
	bin, calls := fakeDocker(t, ref, inspect, tarPath)
	dockerConfig(t, "", "", "")

	s := &Store{Dir: t.TempDir()}
	var last Progress
	got, err := s.Pull(context.Background(), ref, PullOptions{LocalTools: []string{bin}, Progress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatalf("pull %s from the local docker: %v", ref, err)
	}
	if got.Source != "docker" || got.Digest != id.String() || got.Ref != ref || !strings.Contains(strings.Join(got.Config.Env, " "), "FROM=docker") {
		t.Errorf("pulled %+v; want source docker, digest %s", got, id)
	}
	checkExt4(t, got.Path)
	if c := catFile(t, got.Path, "/app/main"); c != "built locally\n" {
		t.Errorf("/app/main holds %q", c)
	}
	if ns := names(t, got.Path, "/app"); len(ns) != 1 {
		t.Errorf("/app holds %q, want only main (old is whited out)", ns)
	}
	if last.LayersDone != 2 || last.LayersTotal != 2 || last.BytesDone != last.BytesTotal {
		t.Errorf("last progress %+v, want 2 of 2 layers, all bytes", last)
	}
	again, err := s.Pull(context.Background(), ref, PullOptions{LocalTools: []string{bin}})
	if err != nil || again.Path != got.Path {
		t.Fatalf("second pull: %+v, %v", again, err)
	}
	log, _ := os.ReadFile(calls)
	if n := strings.Count(string(log), "\nsave "); n != 1 {
		t.Errorf("docker image save ran %d times, want once (the second pull is a cache hit):\n%s", n, log)
	}

	// Not in the local store: the registry is asked.
	_, err = s.Pull(context.Background(), closed+"/team/other:1", PullOptions{LocalTools: []string{bin}})
	wantErr(t, "not local", err, ErrUnreachable, closed)

	// In the local store for another platform: the registry is asked.
	_, err = s.Pull(context.Background(), ref, PullOptions{LocalTools: []string{bin}, Platform: "linux/riscv64"})
	wantErr(t, "local for another platform", err, ErrUnreachable, closed)
	if log, _ := os.ReadFile(calls); strings.Count(string(log), "\nsave ") != 1 {
		t.Errorf("docker image save ran for a miss:\n%s", log)
	}
}

// TestParseInspect reads Docker's and Podman's inspect output.
func TestParseInspect(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, in string
		want     localImage
		bad      bool
	}{
		{"docker", `[{"Id":"sha256:` + hex64 + `","Os":"linux","Architecture":"amd64","Size":123}]`,
			localImage{id: "sha256:" + hex64, plat: v1.Platform{OS: "linux", Architecture: "amd64"}, size: 123}, false},
		{"podman", `[{"Id":"` + hex64 + `","Os":"linux","Architecture":"arm64","Variant":"v8","Size":7}]`,
			localImage{id: "sha256:" + hex64, plat: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, size: 7}, false},
		{"two images", `[{"Id":"` + hex64 + `"},{"Id":"` + hex64 + `"}]`, localImage{}, true},
		{"short id", `[{"Id":"sha256:abc"}]`, localImage{}, true},
		{"not json", `Error: no such image`, localImage{}, true},
	} {
		got, err := parseInspect([]byte(tc.in))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: parsed %+v, want an error", tc.name, got)
			}
			continue
		}
		if err != nil || got.id != tc.want.id || got.size != tc.want.size || got.plat.String() != tc.want.plat.String() {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
