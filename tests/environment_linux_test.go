package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// devcontainerLifecycle is a repository's devcontainer.json as a person
// writes one: comments, a trailing comma, each command form, and a field
// Sandbar does not act on.
const devcontainerLifecycle = `{
	// The project's environment.
	"name": "demo",
	"containerEnv": {"GREETING": "hello", "PATH": "${containerEnv:PATH}:/opt/tools/bin"},
	"remoteEnv": {"FROM_REMOTE": "${containerEnv:GREETING}-remote"},
	"workspaceFolder": "/workspaces/demo",
	"mounts": [{"type": "volume", "source": "cache", "target": "/cache"}],
	"onCreateCommand": "echo oncreate >> /cache/markers",
	"updateContentCommand": ["sh", "-c", "echo update >> /cache/markers"],
	"postCreateCommand": {"a": "echo post-a > /cache/a", "b": ["sh", "-c", "echo post-b > /cache/b"]},
	"postStartCommand": "echo start-$GREETING-$(id -un)-$(pwd) >> /cache/markers",
	"runArgs": ["--privileged"],
}
`

// TestDevcontainerLifecycle: a session of a repository whose trusted
// devcontainer.json asks for commands, variables, a volume and a
// workspace folder: a new session boots on the environment prepared by
// onCreate, updateContent and postCreate (its parts together, once),
// then runs postStart, as the agent's
// user in the workspace, before the agent; the agent has the file's
// variables; a restart runs postStart only; a failing command fails the
// session with its name, exit code and output. Untrusted, the file is
// not used at all.
func TestDevcontainerLifecycle(t *testing.T) {
	w := newWorld(t)
	dc := filepath.Join(w.repo, ".devcontainer")
	os.MkdirAll(dc, 0o755)
	if err := os.WriteFile(filepath.Join(dc, "devcontainer.json"), []byte(devcontainerLifecycle), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git("add", ".")
	w.git("commit", "-qm", "devcontainer")
	w.ok("project", "add", w.repo)

	// Untrusted: Sandbar's own environment, and the log says why.
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	if out, _, _ := w.guestSh(id, "ls /cache 2>&1; echo ${GREETING:-unset}"); !strings.Contains(out, "No such file") || !strings.Contains(out, "unset") {
		t.Errorf("an untrusted devcontainer.json was used: %q", out)
	}
	if _, log, _ := w.run("", "logs", id); !strings.Contains(log, ".devcontainer is not trusted yet, so it was not used") {
		t.Errorf("the log does not say the file was left out:\n%s", clip(log))
	}
	w.ok("rm", "--force", id)

	w.ok("project", "trust", "--yes", w.repo)
	id = w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
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
	if got, want := sh("cat /cache/markers"), "oncreate\nupdate\nstart-hello-agent-/workspace\n"; got != want {
		t.Errorf("markers after the first start: %q, want %q", got, want)
	}
	if got := sh("cat /cache/a /cache/b"); got != "post-a\npost-b\n" {
		t.Errorf("postCreateCommand's parts wrote %q", got)
	}
	if got := sh(`echo "$GREETING $FROM_REMOTE"; case $PATH in *:/opt/tools/bin) echo path-ok;; *) echo "$PATH";; esac; readlink /workspaces/demo; stat -c %U /cache`); got != "hello hello-remote\npath-ok\n/workspace\nagent\n" {
		t.Errorf("the agent's environment, link and volume: %q", got)
	}
	_, log, _ := w.run("", "logs", id)
	for _, want := range []string{
		"environment: .devcontainer/devcontainer.json (trusted)",
		"not supported, so not acted on: runArgs",
		"environment: prepared environment",
		"$ postStartCommand: /bin/sh -c echo start-",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, clip(log))
		}
	}
	// The creation commands ran in the prepared environment, before it.
	if envLog := w.ok("env", "logs", w.repo); !strings.Contains(envLog, "postCreateCommand (a) done in") {
		t.Errorf("the preparation's log lacks postCreateCommand (a):\n%s", clip(envLog))
	}

	// A restart is the same machine: postStart only.
	w.ok("stop", id)
	w.ok("restart", id)
	w.waitLog(id, "agent started", 2)
	if got, want := sh("cat /cache/markers"), "oncreate\nupdate\nstart-hello-agent-/workspace\nstart-hello-agent-/workspace\n"; got != want {
		t.Errorf("markers after a restart: %q, want %q", got, want)
	}
	w.ok("rm", "--force", id)

	// A command that fails fails the start, with words.
	broken := strings.Replace(devcontainerLifecycle, `"postStartCommand": "echo start-$GREETING-$(id -un)-$(pwd) >> /cache/markers"`, `"postStartCommand": "echo cannot reach the database >&2; exit 3"`, 1)
	os.WriteFile(filepath.Join(dc, "devcontainer.json"), []byte(broken), 0o644)
	w.git("commit", "-qam", "broken")
	w.ok("project", "trust", "--yes", w.repo)
	id = w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	s := w.waitState(id, "failed")
	if !strings.Contains(s.Reason, "postStartCommand exited 3") || !strings.Contains(s.Reason, "cannot reach the database") {
		t.Errorf("the failed session's reason: %q", s.Reason)
	}
	// And the person can start in Sandbar's own environment all the same.
	id = w.startID("--repo", w.repo, "--env", "default", "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	if out, _, _ := w.guestSh(id, "echo ${GREETING:-unset}"); strings.TrimSpace(out) != "unset" {
		t.Errorf("--env default used the file: %q", out)
	}
}

// waitLog waits until the session's log has n lines containing want
// (the session's state alone says running before its setup has run).
func (w *world) waitLog(id, want string, n int) {
	w.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, log, _ := w.run("", "logs", id)
		if strings.Count(log, want) >= n {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("session %s: not %d × %q in its log after 3 minutes:\n%s", id, n, want, clip(log))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
