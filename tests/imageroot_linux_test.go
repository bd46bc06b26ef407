package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
	"sandbar/guest/image"
	"sandbar/guest/supervisor"
)

// imageRoots are the roots the image-root tests boot: a Debian image
// without git, with a user node of uid 1000 and sudo (as Node's images
// have), and a musl one (musl's loader and a static busybox, as Alpine's
// images are).
type imageRoots struct {
	glibc, musl string
}

// buildImageRoots writes both roots from Debian's packages (the download
// cache has most of them from the guest image's build).
func buildImageRoots(t *testing.T) imageRoots {
	t.Helper()
	dir := t.TempDir()
	r := imageRoots{glibc: filepath.Join(dir, "debian-node.ext4"), musl: filepath.Join(dir, "musl.ext4")}
	// Each reads the Debian index (tens of MB) and writes tens of MB of
	// ext4, out of this -race process (buildRoot).
	users := []image.RootFile{
		{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nnode:x:1000:1000::/home/node:/bin/bash\n")},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\nnode:x:1000:\n")},
		{Name: "etc/shadow", Mode: 0o640, Data: []byte("root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\nnode:*:19000:0:99999:7:::\n")},
	}
	began := time.Now()
	buildRoot(t, image.RootOptions{Essential: true, Packages: []string{"sudo"}, Without: []string{"git"}, Files: users}, r.glibc)
	buildRoot(t, image.RootOptions{Packages: []string{"musl", "busybox-static"}, Links: map[string]string{"usr/bin/sh": "busybox"}}, r.musl)
	t.Logf("the Debian and musl roots made in %s", time.Since(began).Round(100*time.Millisecond))
	return r
}

// realManager is a session manager over a store in a temp dir, booting
// img on hv.
func realManager(t *testing.T, img *image.Image) *session.Manager {
	t.Helper()
	root := t.TempDir()
	paths := config.Paths{Home: filepath.Join(root, "home"), Images: filepath.Dir(img.Dir), Downloads: filepath.Join(root, "dl")}
	os.MkdirAll(paths.Home, 0o700)
	st, err := store.Open(paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	m, err := session.New(context.Background(), session.Config{Paths: paths, Store: st, Secrets: noSecrets{}, Hypervisor: hypervisor(t, img),
		Image: func(context.Context) (*image.Image, error) { return img, nil }})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Close(ctx)
		st.Close()
	})
	return m
}

// TestImageRoot: a session whose root is a Debian image without git
// runs a shell agent as the image's user node, with the image's PATH
// before Sandbar's and its sudo; its changes, diff, save and merge work
// with Sandbar's own git, and a git the agent then plants in the image
// never runs for them; a musl image is refused with words before the
// agent starts.
func TestImageRoot(t *testing.T) {
	img := guestImage(t)
	roots := buildImageRoots(t)
	m := realManager(t, img)
	repo := testRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	agent := `set -e; echo "written on the image" > made.txt; mkdir -p sub; echo two > sub/two.txt; echo "changed on the image" >> README.md; echo ready; exec sleep 3600`
	// With Sandbar's network, as sessions have it.
	s, err := m.Start(ctx, session.Options{Repo: repo, MemoryMiB: 1024, DiskGiB: 2,
		Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", agent}},
		Root: &session.RootImage{Path: roots.glibc, Name: "test/debian-node", Digest: "sha256:0123", User: "node", WorkingDir: "/app",
			Env: []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "GOFLAGS=-mod=vendor", "HOME=/root"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitLogLine(t, m, s.ID, "ready")
	sh := func(script string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		res, err := m.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"sh", "-c", script}}, &out, &errb)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return out.String() + errb.String(), res.Code
	}
	if out, code := sh("command -v git"); code == 0 {
		t.Fatalf("the image has git (%s): the test needs one without", out)
	}
	if out, _ := sh(`id -un; id -u; echo "$HOME"; echo "$PATH"; echo "$GOFLAGS"`); out != "node\n1000\n/home/node\n/opt/agent/bin:/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin\n-mod=vendor\n" {
		t.Errorf("the agent's user and environment:\n%s", out)
	}
	if out, code := sh("sudo -n id -u"); code != 0 || out != "0\n" {
		t.Errorf("the image's sudo: %q (exit %d)", out, code)
	}
	if out, code := sh("test -x " + supervisor.ToolRoot + "/usr/bin/git && ls /lib/ld-musl* 2>/dev/null; ls /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1 2>/dev/null"); code == 0 && out == "" {
		t.Errorf("no glibc loader in the image's root: %q", out)
	}

	// A git the agent plants in the image (it has sudo) is never what
	// Sandbar's saves and views run.
	plant := `sudo mkdir -p /usr/local/bin && printf '#!/bin/sh\ntouch /tmp/image-git-ran\necho not git\n' | sudo tee /usr/local/bin/git /usr/bin/git >/dev/null && sudo chmod 755 /usr/local/bin/git /usr/bin/git && git --version`
	if out, code := sh(plant); code != 0 || out != "not git\n" {
		t.Fatalf("plant a git in the image: %q (exit %d)", out, code)
	}
	sh("rm -f /tmp/image-git-ran")
	ch, err := m.Changes(ctx, s.ID)
	if err != nil {
		t.Fatalf("changes on an image without git: %v", err)
	}
	got := map[string]string{}
	for _, f := range ch.Files {
		got[f.Path] = f.Status
	}
	for p, want := range map[string]string{"made.txt": "untracked", "sub/two.txt": "untracked", "README.md": "modified"} {
		if got[p] != want {
			t.Errorf("changes: %s is %q, want %q (all: %v)", p, got[p], want, got)
		}
	}
	diff, err := m.FileDiff(ctx, s.ID, workspace.FileChange{Path: "README.md", Status: "modified"})
	if err != nil || !strings.Contains(diff, "+changed on the image") {
		t.Errorf("diff of README.md: %v\n%s", err, diff)
	}

	if out, code := sh("ls /tmp/image-git-ran"); code == 0 {
		t.Errorf("the image's git ran for Sandbar's changes or diff: %s", out)
	}
	if _, err := m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	done, err := m.Wait(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Merge(ctx, s.ID, session.MergeOptions{}); err != nil {
		t.Fatalf("merge the work of an image without git (session %s, %s): %v", s.ID, done.Reason, err)
	}
	if got := gitOut(t, repo, "show", done.Branch+":made.txt"); got != "written on the image" {
		t.Errorf("made.txt on %s = %q", done.Branch, got)
	}
	if got := gitOut(t, repo, "show", done.Branch+":sub/two.txt"); got != "two" {
		t.Errorf("sub/two.txt on %s = %q", done.Branch, got)
	}
	logs := logText(t, m, s.ID)
	for _, want := range []string{
		"environment: the agent's root is the image test/debian-node (sha256:0123)",
		"the agent runs as the image's user node (uid 1000)",
		"the image's working directory /app is not used",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the session's log lacks %q:\n%s", want, logs)
		}
	}

	// musl: refused before the agent starts, with words.
	s2, err := m.Start(ctx, session.Options{Repo: repo, MemoryMiB: 1024, DiskGiB: 2, NoNetwork: true,
		Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", "echo the agent ran; sleep 3600"}},
		Root:  &session.RootImage{Path: roots.musl, Name: "test/musl"}})
	if err != nil {
		t.Fatal(err)
	}
	end, err := m.Wait(ctx, s2.ID)
	if err != nil {
		t.Fatal(err)
	}
	logs = logText(t, m, s2.ID)
	if end.State != session.StateFailed || !strings.Contains(end.Reason+logs, supervisor.MuslMessage) {
		t.Errorf("a musl image's session ended %s (%q), want failed saying %q:\n%s", end.State, end.Reason, supervisor.MuslMessage, logs)
	}
	if strings.Contains(logs, "agent started") || strings.Contains(logs, "the agent ran") {
		t.Errorf("the agent started on a musl image:\n%s", logs)
	}
}

// testRepo is a git repository with one commit of README.md.
func testRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# test\n"), 0o644)
	gitOut(t, repo, "init", "-q", "-b", "main")
	gitOut(t, repo, "add", ".")
	gitOut(t, repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "first")
	return repo
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// logText is session id's log, one line per line.
func logText(t *testing.T, m *session.Manager, id string) string {
	t.Helper()
	lines, err := m.Logs(context.Background(), id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

// waitLogLine waits until session id's log holds text, failing t with
// the log and the session's state after two minutes.
func waitLogLine(t *testing.T, m *session.Manager, id, text string) {
	t.Helper()
	if !waitUntil(2*time.Minute, 100*time.Millisecond, func() bool { return strings.Contains(logText(t, m, id), text) }) {
		s, _ := m.Get(context.Background(), id)
		t.Fatalf("session %s (%s: %s) never logged %q:\n%s", id, s.State, s.Reason, text, logText(t, m, id))
	}
}
