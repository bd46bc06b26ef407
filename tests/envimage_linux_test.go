package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevcontainerImage: a trusted devcontainer.json that names an image
// in a registry (a real docker-registry on loopback) runs the session on
// that image: pulled on the host with its progress, its root the agent's,
// its config's variables the agent's and the commands', its files there;
// the image has no git, yet the work is saved and merged with Sandbar's
// own. A second session finds the image pulled: the registry serves it
// no blob again.
func TestDevcontainerImage(t *testing.T) {
	reg, ref := serveImage(t, "env/debian:1", debianImage(t))

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

	// The next session finds it pulled: the registry serves its manifest
	// and no blob. (Its boot is the first's on the same image, so it is
	// not waited for: CI time.)
	blobs := reg.BlobGets.Load()
	if blobs == 0 {
		t.Errorf("the registry counted no blob served for the first pull")
	}
	id2 := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	w.waitLog(id2, "environment: image "+ref+" (sha256:", 1)
	if n := reg.BlobGets.Load() - blobs; n != 0 {
		_, log, _ := w.run("", "logs", id2)
		t.Errorf("the second session fetched %d blobs of the image pulled before:\n%s", n, clip(log))
	}
	w.ok("rm", "--force", id2)
}
