//go:build linux

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandbar/tests/keyringtest"
)

// The end-to-end tests drive the real sandbar binary: real QEMU VMs, the
// real git CLI, a real SQLite file and a real gnome-keyring daemon (the
// package runs inside keyringtest's private D-Bus session).

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// sandbarBin builds the binary once per run.
func sandbarBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandbar-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "sandbar")
		out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build sandbar: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// world is one user's machine: a data directory, a repository, a keyring.
type world struct {
	t    *testing.T
	bin  string
	home string
	repo string
	env  []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	guestImage(t) // skips without an image
	if ok, why := keyringtest.Available(); !ok {
		t.Skip(why)
	}
	bin := sandbarBin(t)
	root := t.TempDir()
	w := &world{t: t, bin: bin, home: filepath.Join(root, "data home"), repo: filepath.Join(root, "projets", "dépôt à l'essai")}
	gitconfig := filepath.Join(root, "gitconfig")
	os.WriteFile(gitconfig, []byte("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n"), 0o644)
	w.env = append(os.Environ(),
		"SANDBAR_HOME="+w.home,
		"GIT_CONFIG_GLOBAL="+gitconfig,
		"GIT_CONFIG_NOSYSTEM=1",
	)
	os.MkdirAll(w.repo, 0o755)
	w.git("init", "-q")
	os.WriteFile(filepath.Join(w.repo, "README.md"), []byte("# test\n"), 0o644)
	w.git("add", ".")
	w.git("commit", "-qm", "first")
	t.Cleanup(w.stopEngine)
	return w
}

func (w *world) git(args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", w.repo}, args...)...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// run runs sandbar and returns stdout, stderr and the exit code.
func (w *world) run(stdin string, args ...string) (string, string, int) {
	w.t.Helper()
	return w.runWithin(5*time.Minute, stdin, args...)
}

// runWithin is run with its own bound: for a step that downloads and
// installs under emulation on a loaded machine (exit -1 is the bound).
func (w *world) runWithin(d time.Duration, stdin string, args ...string) (string, string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Env = w.env
	cmd.Dir = w.repo
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("sandbar %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// ok runs sandbar and fails the test unless it exits 0.
func (w *world) ok(args ...string) string {
	w.t.Helper()
	out, errOut, code := w.run("", args...)
	if code != 0 {
		w.t.Fatalf("sandbar %q exited %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

type lsEntry struct {
	ID       string `json:"id"`
	Project  string `json:"project"`
	Repo     string `json:"repo"`
	Branch   string `json:"branch"`
	State    string `json:"state"`
	Activity string `json:"activity"`
	Reason   string `json:"reason"`
	ExitCode *int   `json:"exit_code"`
}

func (w *world) ls() []lsEntry {
	w.t.Helper()
	var out []lsEntry
	if err := json.Unmarshal([]byte(w.ok("ls", "--json")), &out); err != nil {
		w.t.Fatal(err)
	}
	return out
}

func (w *world) session(id string) lsEntry {
	w.t.Helper()
	for _, s := range w.ls() {
		if s.ID == id {
			return s
		}
	}
	w.t.Fatalf("no session %s", id)
	return lsEntry{}
}

// waitState polls until the session reaches state (and activity, if
// given).
func (w *world) waitState(id, state string) lsEntry {
	w.t.Helper()
	var s lsEntry
	if !waitUntil(3*time.Minute, 200*time.Millisecond, func() bool {
		s = w.session(id)
		return s.State == state
	}) {
		w.t.Fatalf("session %s is %s (%s), want %s", id, s.State, s.Reason, state)
	}
	return s
}

// startID starts a session and returns its id.
func (w *world) startID(args ...string) string {
	w.t.Helper()
	out := w.ok(append([]string{"start"}, args...)...)
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "session" {
		w.t.Fatalf("start printed %q", out)
	}
	return f[1]
}

func (w *world) enginePID() int {
	b, err := os.ReadFile(filepath.Join(w.home, "engine.lock"))
	if err != nil {
		return 0
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

func (w *world) stopEngine() {
	if pid := w.enginePID(); running(pid) {
		syscall.Kill(pid, syscall.SIGTERM)
		// A cleanup, best effort: an engine still running after 30 s is
		// left for the test's own checks to find.
		waitUntil(30*time.Second, 100*time.Millisecond, func() bool { return !running(pid) })
	}
}

// running reports whether pid is a live process. An engine that a CLI
// command started (detached, in a session of its own) is adopted by
// keyringtest's subreaper, which reaps only when every test is done: once
// it exits it is a zombie until then, which kill(pid, 0) still finds.
func running(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil && !isZombie(pid)
}

const (
	apiKey   = "sk-ant-e2e-9f8e7d6c5b4a"
	npmToken = "npm_e2e_Zq8x\"quoted\\and-escaped\"_1f2e"
)

func TestSessionLifecycle(t *testing.T) {
	w := newWorld(t)
	if _, errOut, code := w.run(apiKey+"\n", "secrets", "set", "ANTHROPIC_API_KEY"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	if _, errOut, code := w.run(npmToken+"\n", "secrets", "set", "NPM_TOKEN"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	if got := w.ok("secrets", "ls"); got != "ANTHROPIC_API_KEY\tbrokered to the model API\nNPM_TOKEN\n" {
		t.Errorf("secrets ls = %q", got)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "NPM_TOKEN")
	before := treeState(t, w)

	// A scripted agent: prints its secrets, edits, commits. The model
	// API's key is brokered, so the VM holds a stand-in; the project's
	// plain secret is in the environment, and redacted in what it prints.
	agent := `echo "the key is $ANTHROPIC_API_KEY"; printf "the token is %s\\n" "$NPM_TOKEN"; echo "from the agent" > agent.txt; git add agent.txt; git commit -qm "agent work"; echo finished`
	out, errOut, code := w.run("", "start", "--repo", w.repo, "--agent", agent, "--cpus", "1", "--memory", "768", "--disk", "1", "--wait")
	if code != 0 {
		t.Fatalf("start --wait exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "the key is sandbar-brokered-") || !strings.Contains(out, "the token is [redacted:NPM_TOKEN]") || !strings.Contains(out, "finished") {
		t.Errorf("start --wait output:\n%s", out)
	}
	ss := w.ls()
	if len(ss) != 1 {
		t.Fatalf("ls: %+v", ss)
	}
	s := ss[0]
	if s.State != "stopped" || s.ExitCode == nil || *s.ExitCode != 0 || s.Branch != "sandbar/"+s.ID || s.Repo != w.repo {
		t.Errorf("session: %+v", s)
	}
	logs := w.ok("logs", s.ID[:6])
	agentLog, _ := os.ReadFile(filepath.Join(w.home, "sessions", s.ID, "agent.log"))
	db, _ := os.ReadFile(filepath.Join(w.home, "sandbar.db"))
	wal, _ := os.ReadFile(filepath.Join(w.home, "sandbar.db-wal"))
	for name, text := range map[string]string{"start output": out + errOut, "logs": logs, "agent.log": string(agentLog), "database": string(db) + string(wal)} {
		if strings.Contains(text, apiKey) || strings.Contains(text, npmToken) {
			t.Errorf("a secret appears in the %s", name)
		}
	}
	if !strings.Contains(logs, "[redacted:NPM_TOKEN]") {
		t.Errorf("logs:\n%s", logs)
	}

	// Removing refuses unmerged work; merge brings the branch home.
	if _, errOut, code := w.run("", "rm", s.ID); code == 0 || !strings.Contains(errOut, "--force") {
		t.Errorf("rm of unmerged work: code %d: %s", code, errOut)
	}
	if out := w.ok("merge", s.ID); !strings.Contains(out, "branch "+s.Branch+" created at ") || !strings.Contains(out, " in "+w.repo+" (your working tree is untouched)") {
		t.Errorf("merge says %q: want the branch, created, in %s", out, w.repo)
	}
	if got := w.git("log", "-1", "--format=%s", s.Branch); got != "agent work" {
		t.Errorf("branch %s head = %q", s.Branch, got)
	}
	if after := treeState(t, w); after != before {
		t.Errorf("the repository's working tree or HEAD changed:\nbefore %s\nafter  %s", before, after)
	}
	w.ok("rm", s.ID)
	if len(w.ls()) != 0 {
		t.Error("session still listed after rm")
	}
}

// TestSessionWithSubmodule: a repository with a submodule gets it checked
// out in the session's clone, the agent commits in it inside the VM, and
// merge brings both commits home.
func TestSessionWithSubmodule(t *testing.T) {
	w := newWorld(t)
	lib := filepath.Join(filepath.Dir(w.repo), "bibliothèque partagée")
	os.MkdirAll(lib, 0o755)
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "lib start"}} {
		cmd := exec.Command("git", append([]string{"-C", lib}, args...)...)
		cmd.Env = w.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, lib, err, out)
		}
	}
	w.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "libs/lib")
	w.git("commit", "-qm", "add lib")
	before := treeState(t, w)

	agent := `cd libs/lib && echo "from the agent" > lib.txt && git add lib.txt && git commit -qm "lib work" && cd ../.. && git add libs/lib && git commit -qm "bump lib" && git submodule status && echo finished`
	out, errOut, code := w.run("", "start", "--repo", w.repo, "--agent", agent, "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network", "--wait")
	if code != 0 || !strings.Contains(out, "finished") {
		t.Fatalf("start --wait exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	s := w.ls()[0]
	// System lines go to stderr.
	if _, sys, _ := w.run("", "logs", s.ID); !strings.Contains(sys, "[system] carried submodules in from the repository's copies: libs/lib") {
		t.Errorf("the log does not say the submodule was checked out:\n%s", sys)
	}
	merged, mergeErr, code := w.run("", "merge", s.ID)
	if code != 0 {
		_, sys, _ := w.run("", "logs", s.ID)
		t.Fatalf("merge exited %d: %s\nthe session's log:\n%s", code, mergeErr, sys)
	}
	if !strings.Contains(merged, "submodules under the same branch: libs/lib") {
		t.Errorf("merge output: %s", merged)
	}
	if got := w.git("log", "-1", "--format=%s", s.Branch); got != "bump lib" {
		t.Errorf("branch %s head = %q", s.Branch, got)
	}
	recorded := w.git("rev-parse", s.Branch+":libs/lib")
	sub := exec.Command("git", "-C", filepath.Join(w.repo, "libs", "lib"), "log", "-1", "--format=%H %s", s.Branch)
	sub.Env = w.env
	if got, err := sub.Output(); err != nil || strings.TrimSpace(string(got)) != recorded+" lib work" {
		t.Errorf("the repository's submodule: branch %s = %q (%v), want %s lib work", s.Branch, got, err, recorded)
	}
	if after := treeState(t, w); after != before {
		t.Errorf("the repository's working tree or HEAD changed:\nbefore %s\nafter  %s", before, after)
	}
}

// treeState is the repository's files, HEAD and index, for comparison.
func treeState(t *testing.T, w *world) string {
	var b strings.Builder
	filepath.Walk(w.repo, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() && fi.Name() == ".git" {
			return filepath.SkipDir
		}
		if !fi.IsDir() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s:%x ", strings.TrimPrefix(p, w.repo), data)
		}
		return nil
	})
	fmt.Fprintf(&b, "HEAD=%s %s status=%q", w.git("rev-parse", "HEAD"), w.git("symbolic-ref", "HEAD"), w.git("status", "--porcelain"))
	return b.String()
}

func TestStopChatExecAndThreeAtOnce(t *testing.T) {
	w := newWorld(t)
	w.run("k\n", "secrets", "set", "OTHER_TOKEN")
	echo := `trap 'exit 143' TERM; while read -r line; do echo "heard: $line"; done`
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, w.startID("--repo", w.repo, "--agent", echo, "--cpus", "1", "--memory", "512", "--disk", "1", "--no-network"))
	}
	for _, id := range ids {
		w.waitState(id, "running")
	}
	id := ids[0]
	w.ok("chat", id, "hello", "there")
	waitLog(t, w, id, "heard: hello there")
	if got := w.ok("exec", id, "--", "cat", "README.md"); got != "# test\n" {
		t.Errorf("exec saw %q", got)
	}
	if _, _, code := w.run("", "exec", id, "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exec exit code %d, want 7", code)
	}
	for _, id := range ids {
		w.ok("stop", id)
		s := w.session(id)
		if s.State != "stopped" || s.ExitCode == nil || *s.ExitCode != 143 {
			t.Errorf("after stop: %+v", s)
		}
	}
	if n := qemuUnder(w.home); n != 0 {
		t.Errorf("%d qemu processes left", n)
	}
}

func waitLog(t *testing.T, w *world, id, text string) {
	t.Helper()
	if waitUntil(time.Minute, 200*time.Millisecond, func() bool { return strings.Contains(w.ok("logs", id), text) }) {
		return
	}
	t.Fatalf("no %q in the logs of %s:\n%s", text, id, w.ok("logs", id))
}

// TestEngineKilled: kill -9 of the Sandbar process that runs a session
// leaves no QEMU; the next Sandbar marks the session interrupted, its
// workspace intact, and restart brings it back.
func TestEngineKilled(t *testing.T) {
	w := newWorld(t)
	id := w.startID("--repo", w.repo, "--agent", "echo work >> w.txt; sync; echo started; sleep 600", "--cpus", "1", "--memory", "512", "--disk", "1")
	w.waitState(id, "running")
	waitLog(t, w, id, "started")
	pid := w.enginePID()
	if pid == 0 {
		t.Fatal("no engine pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The engine's end is seen through what it leaves: its QEMU must go
	// too, within the same 5 s.
	waitUntil(5*time.Second, 50*time.Millisecond, func() bool { return syscall.Kill(pid, 0) != nil })
	if !waitUntil(5*time.Second, 50*time.Millisecond, func() bool { return qemuUnder(w.home) == 0 }) {
		t.Fatal("qemu outlived the engine's kill -9")
	}
	// Any command that needs the engine starts a new one, which recovers.
	w.ok("project", "ls")
	w.run("", "stop", id) // starts the engine; the session is not running
	s := w.session(id)
	if s.State != "interrupted" || !strings.Contains(s.Reason, "restart") {
		t.Fatalf("after the crash: %+v", s)
	}
	// The clone lives in the VM's disk, which outlived the crash: the
	// restarted agent appends to the first one's file.
	w.ok("restart", id)
	w.waitState(id, "running")
	// The restarted agent appends its line at once; wait for it in the VM.
	if out := w.ok("exec", id, "--", "sh", "-c", "i=0; while [ $(wc -l < w.txt) -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; cat w.txt"); out != "work\nwork\n" {
		t.Errorf("the workspace after the crash and a restart: w.txt is %q, want two lines", out)
	}
	w.ok("stop", id)
}

func TestBadInputs(t *testing.T) {
	w := newWorld(t)
	notRepo := t.TempDir()
	bare := filepath.Join(t.TempDir(), "bare.git")
	exec.Command("git", "init", "-q", "--bare", bare).Run()
	w.run("k\n", "secrets", "set", "ANTHROPIC_API_KEY")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"not a repo", []string{"start", "--repo", notRepo}, "not in a git repository"},
		{"bare repo", []string{"start", "--repo", bare}, "bare"},
		{"unknown id", []string{"stop", "zzzzzz"}, "no session"},
		{"memory above the budget", []string{"start", "--repo", w.repo, "--memory", "1000000"}, "memory"},
		{"secret as an argument", []string{"secrets", "set", "A", "value"}, "never an argument"},
	}
	for _, c := range cases {
		out, errOut, code := w.run("", c.args...)
		line := strings.TrimSpace(errOut)
		if code == 0 || !strings.Contains(strings.ToLower(line), c.want) || strings.Count(line, "\n") > 0 {
			t.Errorf("%s: code %d, stderr %q (want one line mentioning %q), stdout %q", c.name, code, line, c.want, out)
		}
	}
	if len(w.ls()) != 0 {
		t.Error("a refused start left a session")
	}
	// A locked keyring: a clear line, nothing changed.
	if err := keyringtest.Lock(); err != nil {
		t.Fatalf("lock the keyring: %v", err)
	}
	defer keyringtest.Unlock()
	_, errOut, code := w.run("v\n", "secrets", "set", "NEW_ONE")
	if code == 0 || !strings.Contains(errOut, "locked") {
		t.Errorf("locked keyring: code %d, %q", code, errOut)
	}
	_, errOut, code = w.run("", "start", "--repo", w.repo, "--agent", "true")
	if code == 0 || !strings.Contains(errOut, "locked") {
		t.Errorf("start with a locked keyring: code %d, %q", code, errOut)
	}
	if len(w.ls()) != 0 {
		t.Error("a start refused for the keyring left a session")
	}
}
