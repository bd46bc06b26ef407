package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/guest/protocol"
)

// TestCaptureAPreparedEnvironment: a machine changes its root (a file
// added, one removed, a folder replaced, a setuid program) and powers
// off; a capture machine copies those changes onto a new disk; two new
// machines boot on it, each under its own layer, and find the changes,
// and what one writes the other never sees.
func TestCaptureAPreparedEnvironment(t *testing.T) {
	img := guestImage(t)
	h := hypervisor(t, img)
	ctx := context.Background()
	prepDir := t.TempDir()
	sb, err := sandbox.Boot(ctx, h, img, sandbox.Options{Dir: prepDir, ScratchSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	run(t, sb, protocol.UserRoot, "sh", "-c", `set -e
mkdir -p /opt/prepared && echo ready > /opt/prepared/marker
rm /etc/issue
rm -rf /usr/share/doc && mkdir /usr/share/doc && echo only > /usr/share/doc/only
mkdir -p /usr/local/bin && cp /bin/true /usr/local/bin/suid-true && chmod 4755 /usr/local/bin/suid-true
mkdir -p /.sandbar-prepare`)
	if err := sb.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "env.img")
	c, err := sandbox.Capture(ctx, h, img, sandbox.CaptureOptions{Dir: t.TempDir(), Scratch: filepath.Join(prepDir, sandbox.ScratchFile), Out: out, Size: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d files, %d bytes in %s", c.Files, c.Bytes, c.Took)
	if c.Files < 5 {
		t.Errorf("captured %d files, want at least the 5 made", c.Files)
	}

	var sbs []*sandbox.Sandbox
	for range 2 {
		sbs = append(sbs, boot(t, sandbox.Options{Dir: t.TempDir(), ScratchSize: 1 << 30, Env: out}))
	}
	for i, sb := range sbs {
		got := run(t, sb, "", "sh", "-c", `cat /opt/prepared/marker; test -e /etc/issue && echo issue; ls /usr/share/doc; stat -c %a /usr/local/bin/suid-true; test -e /.sandbar-prepare && echo prepdir; true`)
		if want := "ready\nonly\n4755\n"; got != want {
			t.Errorf("machine %d on the prepared disk: %q, want %q", i, got, want)
		}
	}
	run(t, sbs[0], protocol.UserRoot, "sh", "-c", "echo mine > /opt/prepared/marker")
	if got := run(t, sbs[1], "", "cat", "/opt/prepared/marker"); got != "ready\n" {
		t.Errorf("one machine's write reached the other: %q", got)
	}
	if fi, err := os.Stat(out); err != nil || !strings.HasSuffix(out, ".img") || fi.Size() != 1<<30 {
		t.Errorf("the prepared disk: %v, %v", fi, err)
	}
}

// preparedDevcontainer's commands each leave a marker in the agent's
// home (the root's layer) and a dependency in an ignored folder of the
// workspace; postCreateCommand runs a script of the repository's, so a
// commit can break it without changing the file.
const preparedDevcontainer = `{
	"onCreateCommand": "echo oncreate >> $HOME/markers; mkdir -p node_modules/dep && echo dep > node_modules/dep/index.js",
	"updateContentCommand": "echo update-$(git rev-parse --short HEAD) >> $HOME/markers",
	"postCreateCommand": "sh scripts/post.sh",
	"postStartCommand": "echo start >> $HOME/markers",
}
`

// TestPreparedEnvironment: a project's environment is prepared once, in
// a VM of its own (`sandbar env build`), and two sessions boot on it:
// onCreate and postCreate ran once, in the environment, the ignored
// files they left are in each workspace, updateContentCommand runs again
// in a session on a new commit, postStartCommand once per session. A
// preparation that fails (a commit breaks postCreateCommand's script)
// fails env build with the command, its exit code and its log's tail,
// and the good environment still serves the next session, with a
// warning in its log.
func TestPreparedEnvironment(t *testing.T) {
	w := newWorld(t)
	os.MkdirAll(filepath.Join(w.repo, ".devcontainer"), 0o755)
	os.MkdirAll(filepath.Join(w.repo, "scripts"), 0o755)
	os.WriteFile(filepath.Join(w.repo, ".devcontainer", "devcontainer.json"), []byte(preparedDevcontainer), 0o644)
	os.WriteFile(filepath.Join(w.repo, "scripts", "post.sh"), []byte("echo postcreate >> $HOME/markers\n"), 0o644)
	os.WriteFile(filepath.Join(w.repo, ".gitignore"), []byte("node_modules/\n"), 0o644)
	w.git("add", ".")
	w.git("commit", "-qm", "environment")
	c1 := w.git("rev-parse", "--short", "HEAD")
	w.ok("project", "add", w.repo)
	w.ok("project", "trust", "--yes", w.repo)

	out, errOut, code := w.runWithin(8*time.Minute, "", "env", "build", w.repo)
	if code != 0 || !strings.Contains(out, "ready") || !strings.Contains(out, "postCreateCommand") {
		t.Fatalf("env build exited %d:\n%s\n%s", code, out, errOut)
	}
	t.Logf("env build:\n%s", clip(out))
	if out := w.ok("env", w.repo); !strings.Contains(out, "prepared: ready, made") {
		t.Errorf("sandbar env after the build:\n%s", out)
	}

	sh := func(id, script string) string {
		t.Helper()
		out, errOut, code := w.guestSh(id, script)
		if code != 0 {
			_, log, _ := w.run("", "logs", id)
			t.Fatalf("%s: exit %d: %s %s\nlog:\n%s", script, code, out, errOut, clip(log))
		}
		return out
	}
	start := func() string {
		t.Helper()
		id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
		w.waitLog(id, "agent started", 1)
		return id
	}

	// Two sessions on the one environment: its markers once each.
	a := start()
	if got, want := sh(a, "cat $HOME/markers; cat node_modules/dep/index.js"), "oncreate\nupdate-"+c1+"\npostcreate\nstart\ndep\n"; got != want {
		t.Errorf("session on the prepared environment: %q, want %q", got, want)
	}
	_, log, _ := w.run("", "logs", a)
	for _, want := range []string{"environment: prepared environment", "this session runs postStartCommand only", "$ postStartCommand"} {
		if !strings.Contains(log, want) {
			t.Errorf("the session's log lacks %q:\n%s", want, clip(log))
		}
	}
	if strings.Contains(log, "$ onCreateCommand") || strings.Contains(log, "$ postCreateCommand") {
		t.Errorf("a session on the prepared environment ran creation commands:\n%s", clip(log))
	}
	w.ok("rm", "--force", a)

	// A commit breaks postCreateCommand's script: the build fails, with
	// words, and keeps the good environment.
	os.WriteFile(filepath.Join(w.repo, "scripts", "post.sh"), []byte("echo cannot reach the database >&2\nexit 7\n"), 0o644)
	w.git("commit", "-qam", "break post.sh")
	c2 := w.git("rev-parse", "--short", "HEAD")
	out, errOut, code = w.runWithin(8*time.Minute, "", "env", "build", w.repo)
	if code == 0 || !strings.Contains(errOut, "postCreateCommand exited 7") || !strings.Contains(errOut, "cannot reach the database") {
		t.Errorf("a failing env build: exit %d\nstdout: %s\nstderr: %s", code, clip(out), errOut)
	}
	if out := w.ok("env", w.repo); !strings.Contains(out, "prepared: FAILED") || !strings.Contains(out, "prepared: ready, made") {
		t.Errorf("sandbar env after the failed build:\n%s", out)
	}
	if out := w.ok("env", "logs", w.repo); !strings.Contains(out, "cannot reach the database") {
		t.Errorf("sandbar env logs after the failed build:\n%s", clip(out))
	}

	// The next session, on the new commit, runs on the good one with a
	// warning, updateContentCommand again, and its own postStart.
	b := start()
	if got, want := sh(b, "cat $HOME/markers"), "oncreate\nupdate-"+c1+"\npostcreate\nupdate-"+c2+"\nstart\n"; got != want {
		t.Errorf("session on a new commit: %q, want %q", got, want)
	}
	_, log, _ = w.run("", "logs", b)
	for _, want := range []string{"WARNING: preparing the environment on", "exited 7", "runs updateContentCommand", "$ updateContentCommand"} {
		if !strings.Contains(log, want) {
			t.Errorf("the session's log lacks %q:\n%s", want, clip(log))
		}
	}
}
