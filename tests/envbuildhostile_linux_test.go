package tests

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// escapeSource is the hostile RUN step: root in the builder's chroot (as
// buildah's chroot isolation leaves it, with CAP_SYS_CHROOT), it leaves
// the chroot the classic way (a chroot below its working directory, then
// up past the old root), and in the build VM's own root puts a buildah in
// front of the real one whose push writes the planted archive where the
// host reads the built image. The host must take it as the hostile data
// it is.
const escapeSource = `package main

import (
	"fmt"
	"os"
	"syscall"
)

const wrapper = "#!/bin/sh\n" +
	"# planted by a RUN step: push hands back the planted archive\n" +
	"case \" $* \" in *\" push \"*) for a; do out=$a; done; cat /var/tmp/sandbar-planted.tar > \"${out#oci-archive:}\"; exit $?;; esac\n" +
	"exec /usr/bin/buildah.real \"$@\"\n"

func must(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "escape: %s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	planted, err := os.ReadFile(os.Args[1])
	must("read the planted archive", err)
	must("mkdir", os.MkdirAll("/escape-jail", 0o700))
	must("chroot below", syscall.Chroot("/escape-jail"))
	for i := 0; i < 64; i++ {
		must("chdir ..", syscall.Chdir(".."))
	}
	must("chroot out", syscall.Chroot("."))
	if _, err := os.Stat("/usr/bin/buildah"); err != nil {
		must("find the build VM's buildah (still in the chroot?)", err)
	}
	must("plant", os.WriteFile("/var/tmp/sandbar-planted.tar", planted, 0o644))
	must("move buildah", os.Rename("/usr/bin/buildah", "/usr/bin/buildah.real"))
	must("wrap buildah", os.WriteFile("/usr/bin/buildah", []byte(wrapper), 0o755))
	fmt.Println("escaped the builder's chroot: the push will hand back the planted archive")
}
`

// TestDockerfileHostileArchive: a Dockerfile's RUN step, root in the
// build VM, leaves the builder's chroot and swaps the OCI archive the
// build pushes back to the host for a planted one: one whose entry's path
// climbs out of the layout to a file under /tmp, then one whose blob is a
// symbolic link out to /tmp with a file written after it through the
// link. The host refuses each in words (the session fails, saying what
// the archive holds and how to go on), imports nothing, and writes
// nothing outside its own folders, which it leaves clean.
func TestDockerfileHostileArchive(t *testing.T) {
	_, ref := serveImage(t, "env/slim:1", slimDebianImage(t))
	w := newWorld(t)
	unique := fmt.Sprintf("sandbar-planted-%d-%d", os.Getpid(), time.Now().UnixNano())
	outside := filepath.Join("/tmp", unique)
	t.Cleanup(func() { os.Remove(outside) })

	dc := filepath.Join(w.repo, ".devcontainer")
	hostile := filepath.Join(dc, "hostile")
	os.MkdirAll(hostile, 0o755)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "main.go"), []byte(escapeSource), 0o644)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(hostile, "escape"), "main.go")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the RUN step's program: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dc, "devcontainer.json"), []byte(fmt.Sprintf(`{
		"build": {"dockerfile": "Dockerfile", "context": "..", "args": {"BASE": %q}},
	}`, ref)), 0o644)
	os.WriteFile(filepath.Join(dc, "Dockerfile"), []byte(`ARG BASE=none
FROM ${BASE}
COPY .devcontainer/hostile/ /hostile/
RUN /hostile/escape /hostile/planted.tar
`), 0o644)

	w.ok("project", "add", w.repo)
	envDir := filepath.Join(w.home, "environments")
	blob := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name    string
		entries []plantedEntry
		want    string
	}{
		{"traversal", []plantedEntry{
			{name: "oci-layout", data: `{"imageLayoutVersion":"1.0.0"}`},
			{name: "blobs/sha256/../../../../../../../../../../../.." + outside, data: "planted by the RUN step\n"},
		}, `the built image's archive holds the path "blobs/sha256/../../`},
		{"symlink out", []plantedEntry{
			{name: "oci-layout", data: `{"imageLayoutVersion":"1.0.0"}`},
			{name: "blobs/sha256/" + blob, link: outside},
			{name: "blobs/sha256/" + blob, data: "written through the link\n"},
		}, `the built image's archive holds "blobs/sha256/` + blob + `" as a symbolic link, not a file`},
	} {
		os.WriteFile(filepath.Join(hostile, "planted.tar"), plantedArchive(t, c.entries), 0o644)
		w.git("add", ".")
		w.git("commit", "-qm", "a hostile build: "+c.name)
		w.ok("project", "trust", "--yes", w.repo)
		began := time.Now()
		id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
		var s lsEntry
		var log string
		if !waitUntil(10*time.Minute, time.Second, func() bool {
			s = w.session(id)
			_, log, _ = w.run("", "logs", id)
			return s.State == "failed" || strings.Contains(log, "agent started")
		}) || s.State != "failed" {
			t.Fatalf("%s: the session on the planted archive is %s (%s), want failed; its log:\n%s", c.name, s.State, s.Reason, clip(log))
		}
		t.Logf("%s: refused in %s", c.name, time.Since(began).Round(time.Second))
		// The step did escape and plant: the refusal is of its archive,
		// not of a build that went wrong some other way.
		for _, want := range []string{"escaped the builder's chroot", "writing the built image out of the build VM"} {
			if !strings.Contains(log, want) {
				t.Errorf("%s: the log lacks %q:\n%s", c.name, want, clip(log))
			}
		}
		for _, want := range []string{c.want, "not an OCI image archive", "--env default"} {
			if !strings.Contains(s.Reason, want) && !strings.Contains(log, want) {
				t.Errorf("%s: the refusal does not say %q:\nreason: %s\nlog:\n%s", c.name, want, s.Reason, clip(log))
			}
		}
		if _, err := os.Lstat(outside); err == nil {
			t.Fatalf("%s: %s exists: the planted archive wrote outside its folder", c.name, outside)
		}
		assertNothingImported(t, c.name, envDir)
	}
}

// plantedEntry is one entry of a planted archive: a file, or with link a
// symbolic link.
type plantedEntry struct {
	name, data, link string
}

func plantedArchive(t *testing.T, entries []plantedEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
		if e.link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.link == "" {
			tw.Write([]byte(e.data))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// assertNothingImported: no built image in the environments' store, and
// nothing left in the build's scratch folders (the archive's copy, the
// build VM's folder).
func assertNothingImported(t *testing.T, what, envDir string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(envDir, "images"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "image.json" {
			return nil
		}
		b, _ := os.ReadFile(p)
		var img struct{ Source, Ref string }
		json.Unmarshal(b, &img)
		if img.Source == "built" {
			t.Errorf("%s: the store holds a built image (%s): %s", what, img.Ref, filepath.Dir(p))
		}
		return nil
	})
	for _, d := range []string{"builds/tmp", "builds/vm", "images/tmp"} {
		ents, _ := os.ReadDir(filepath.Join(envDir, d))
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".lock") {
				t.Errorf("%s: %s left in %s", what, e.Name(), filepath.Join(envDir, d))
			}
		}
	}
}
