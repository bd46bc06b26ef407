package workspace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestIsSteering(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		".gitattributes": true, "sub/dir/.gitattributes": true, ".lfsconfig": true, ".gitmodules": true,
		"sub/.gitmodules": false, ".sandbar/network": true, "x/.sandbar/network": false, ".sandbarinclude": true,
		".worktreeinclude": true, ".devcontainer/devcontainer.json": true, ".devcontainer.json": true,
		".envrc": true, "a/b/.envrc": true, ".tool-versions": true, "mise.toml": true, ".mise.toml": true,
		".vscode/settings.json": true, ".idea/workspace.xml": true, ".github/workflows/ci.yml": true,
		".github/CODEOWNERS": false, ".npmrc": true, ".yarnrc.yml": true, ".pre-commit-config.yaml": true,
		".husky/pre-commit": true, ".cargo/config.toml": true, "rust-toolchain.toml": true, "crates/x/rust-toolchain.toml": true,
		"Makefile": false, "package.json": false, "src/main.go": false, "README.md": false, "gitattributes": false,
		".vscode": false, "docs/.vscode/settings.json": false,
		// Names a case-insensitive, normalising file system takes for a
		// steering file's (a hostile review's finding).
		".GitAttributes": true, "sub/.GITATTRIBUTES": true, ".LFSConfig": true, ".HUSKY/pre-commit": true,
		".VSCode/tasks.json": true, ".SANDBAR/network": true, ".git\u200cattributes": true, ".Envrc": true,
		// And the agent's own tools' files.
		".claude/settings.json": true, ".mcp.json": true, ".cursor/mcp.json": true, ".yarn/releases/yarn.cjs": true,
		".mvn/extensions.xml": true, "packages/a/.npmrc": true, ".yarn/cache/x.zip": false,
	} {
		if _, got := IsSteering(p); got != want {
			t.Errorf("IsSteering(%q) = %v, want %v", p, got, want)
		}
	}
	got := SteeringIn([]FileChange{{Path: "a.txt", Status: "renamed", From: ".envrc"}, {Path: "b.txt", Status: "added"}, {Path: ".sandbar/network", Status: "modified"}})
	if len(got) != 2 || got[0].Path != "a.txt" || got[1].Path != ".sandbar/network" || got[0].NeedsTrust || !got[1].NeedsTrust {
		t.Errorf("SteeringIn = %+v, want the rename away from .envrc and .sandbar/network (needing trust)", got)
	}
	if n := SteeringNote(got[1]); !strings.Contains(n, "this changes .sandbar/network, which will need your trust again before Sandbar uses it") {
		t.Errorf("SteeringNote = %q", n)
	}
}

// hostileHome is a person's git set-up as `git lfs install` leaves it,
// plus a custom filter and core.hooksPath, all of which write a marker
// file (or count a request) when anything runs them; and a session whose
// work brings .gitattributes naming them, a .lfsconfig pointing at a
// server on loopback that counts what reaches it, and an LFS pointer.
type hostileHome struct {
	home, cfg, marks string
	requests         *atomic.Int64
	root             string
	c                *vmClone
}

func newHostileHome(t *testing.T, id string) *hostileHome {
	t.Helper()
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Skip("git-lfs is not installed (scripts/install-deps.sh installs it)")
	}
	h := &hostileHome{requests: new(atomic.Int64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		t.Logf("the agent's endpoint got %s %s", r.Method, r.URL.Path)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)

	// The repository and the session's work are made under the package's
	// plain git set-up; the person's comes in only for the merge.
	h.root = newRepo(t, "")
	h.c = sessionT(t, h.root, id)
	writeFile(t, filepath.Join(h.c.dir, ".gitattributes"), "* filter=x\n*.bin filter=lfs diff=lfs merge=lfs -text\n")
	writeFile(t, filepath.Join(h.c.dir, ".lfsconfig"), "[lfs]\n\turl = "+srv.URL+"/agent-chosen-endpoint\n")
	writeFile(t, filepath.Join(h.c.dir, "big.bin"), "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")
	writeFile(t, filepath.Join(h.c.dir, "notes", "plain.txt"), "plain\n")
	gitT(t, h.c.dir, "add", "-A")
	gitT(t, h.c.dir, "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", "session: lfs")
	h.c.save(t)

	h.home = t.TempDir()
	h.marks = t.TempDir()
	h.cfg = filepath.Join(h.home, ".gitconfig")
	writeFile(t, h.cfg, "[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n[user]\n\tname = Person\n\temail = person@example.com\n")
	cmd := exec.Command("git", "lfs", "install", "--skip-repo")
	cmd.Env = append(gitEnv(), "HOME="+h.home, "GIT_CONFIG_GLOBAL="+h.cfg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git lfs install: %v: %s", err, out)
	}
	if cfg := readFile(t, h.cfg); !strings.Contains(cfg, "git-lfs filter-process") {
		t.Fatalf("git lfs install left no filter in %s:\n%s", h.cfg, cfg)
	}
	hooks := filepath.Join(h.home, "hooks")
	for _, name := range []string{"post-checkout", "post-merge", "reference-transaction", "pre-merge-commit", "post-index-change", "post-rewrite"} {
		p := filepath.Join(hooks, name)
		writeFile(t, p, fmt.Sprintf("#!/bin/sh\ntouch '%s/hook-%s'\n", h.marks, name))
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(h.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[filter \"x\"]\n\tclean = touch '%[1]s/filter-x-clean' && cat\n\tsmudge = touch '%[1]s/filter-x-smudge' && cat\n\trequired = true\n[core]\n\thooksPath = %[2]s\n", h.marks, hooks)
	f.Close()
	return h
}

// use makes the person's set-up the one git reads from here on.
func (h *hostileHome) use(t *testing.T) {
	t.Setenv("HOME", h.home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(h.home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", h.cfg)
}

// untouched fails the test if anything of the session's ran or was
// contacted.
func (h *hostileHome) untouched(t *testing.T, when string) {
	t.Helper()
	if n := h.requests.Load(); n != 0 {
		t.Errorf("%s: the agent's LFS endpoint got %d requests", when, n)
	}
	marks, _ := os.ReadDir(h.marks)
	for _, m := range marks {
		t.Errorf("%s: %s ran", when, m.Name())
	}
	if _, err := os.Stat(filepath.Join(h.root, ".git", "lfs")); err == nil {
		t.Errorf("%s: git-lfs ran in the repository (it made .git/lfs)", when)
	}
}

// TestMergeRunsNothingOfTheSession: with git-lfs, a custom filter and
// core.hooksPath in the person's global config, merging a session whose
// work names them (.gitattributes, .lfsconfig with the agent's URL, an
// LFS pointer) contacts nothing and runs nothing: not when the branch is
// created, not when merge --into is refused for its steering files (it
// changes nothing, byte for byte), not when it is accepted and the
// working tree is updated (the pointer is written as stored).
func TestMergeRunsNothingOfTheSession(t *testing.T) {
	h := newHostileHome(t, "lfs1")
	h.use(t)
	ctx := context.Background()
	src := resolveT(t, h.root)
	h.untouched(t, "before merging")

	res, err := Merge(ctx, src, h.c.m, h.c.id, h.c.branch, false)
	if err != nil || !res.Created {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	h.untouched(t, "merge (branch)")

	before := snapshot(t, h.root)
	_, err = MergeInto(ctx, src, h.c.m, h.c.id, h.c.branch, false)
	var se *SteeringError
	if !errors.Is(err, ErrSteering) || !errors.As(err, &se) {
		t.Fatalf("MergeInto without accepting = %v, want a SteeringError", err)
	}
	for _, want := range []string{".gitattributes (added, git filters", ".lfsconfig (added, where git-lfs sends", "--accept-steering", "sandbar diff lfs1 FILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if len(se.Files) != 2 {
		t.Errorf("steering files = %+v, want .gitattributes and .lfsconfig", se.Files)
	}
	sameSnapshot(t, before, snapshot(t, h.root))
	h.untouched(t, "merge --into refused")

	res, err = MergeInto(ctx, src, h.c.m, h.c.id, h.c.branch, true)
	h.untouched(t, "merge --into")
	if err != nil || !res.Updated || len(res.Steering) != 2 {
		t.Fatalf("MergeInto accepting = %+v, %v", res, err)
	}
	if got := readFile(t, filepath.Join(h.root, "big.bin")); !strings.HasPrefix(got, "version https://git-lfs.github.com/spec/v1\n") {
		t.Errorf("big.bin = %q, want the pointer as stored", got)
	}
	if got := readFile(t, filepath.Join(h.root, "notes", "plain.txt")); got != "plain\n" {
		t.Errorf("notes/plain.txt = %q", got)
	}
	neutral, err := neutralArgs(ctx, h.root)
	if err != nil {
		t.Fatal(err)
	}
	if st := gitT(t, h.root, append(neutral, "status", "--porcelain")...); st != "" {
		t.Errorf("status after the merge = %q, want clean", st)
	}
}

// TestMergeIntoFailedChangesNothing: a merge --into that git refuses
// (an untracked file of the person's in the way), under the person's
// hostile set-up, runs nothing and leaves the working tree, index, HEAD
// and refs byte-identical, and says so.
func TestMergeIntoFailedChangesNothing(t *testing.T) {
	h := newHostileHome(t, "lfs2")
	writeFile(t, filepath.Join(h.root, "notes", "plain.txt"), "the person's own, untracked\n")
	h.use(t)
	before := snapshot(t, h.root)
	_, err := MergeInto(context.Background(), resolveT(t, h.root), h.c.m, h.c.id, h.c.branch, true)
	if err == nil || !strings.Contains(err.Error(), "notes/plain.txt") || !strings.Contains(err.Error(), ", and changed nothing") {
		t.Errorf("err = %v, want git's refusal saying it changed nothing", err)
	}
	sameSnapshot(t, before, snapshot(t, h.root))
	h.untouched(t, "a failed merge --into")
}

// TestGuardRestores: what a checkout that failed half way leaves (the
// session's .gitattributes and .lfsconfig untracked, a tracked file
// rewritten, a new folder, a changed index, ORIG_HEAD, a moved branch)
// is found by the guard, put back byte for byte, and the error says it
// changed nothing only after that; what cannot be put back is named.
func TestGuardRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	writeFile(t, filepath.Join(root, "mine.txt"), "untracked, mine\n")
	paths := []string{".gitattributes", ".lfsconfig", "README.md", "deep/new/file.txt", "mine.txt"}
	neutral, err := neutralArgs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	g, err := guardTree(ctx, root, neutral, paths)
	if err != nil {
		t.Fatal(err)
	}
	if b, c := g.branch(); b != "main" || c != gitT(t, root, "rev-parse", "HEAD") || g.busy != "" || len(g.tracked()) != 0 {
		t.Errorf("guard: branch %q at %s, busy %q, tracked changes %v", b, c, g.busy, g.tracked())
	}
	before := snapshot(t, root)
	head := gitT(t, root, "rev-parse", "HEAD")

	writeFile(t, filepath.Join(root, ".gitattributes"), "* filter=lfs\n")
	writeFile(t, filepath.Join(root, ".lfsconfig"), "[lfs]\nurl = http://127.0.0.1:9/x\n")
	writeFile(t, filepath.Join(root, "README.md"), "rewritten\n")
	writeFile(t, filepath.Join(root, "deep", "new", "file.txt"), "new\n")
	if err := os.Chmod(filepath.Join(root, "mine.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "add", "README.md")
	gitT(t, root, "update-ref", "ORIG_HEAD", head)
	gitT(t, root, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--no-verify", "-m", "moved")

	err = g.failed(ctx, "main", "it broke", errors.New("exit 128"))
	if err == nil || !strings.Contains(err.Error(), "git refused to bring the session's work into main (it broke), and changed nothing once Sandbar had put back what it left") {
		t.Errorf("err = %v", err)
	}
	for _, want := range []string{".gitattributes", ".lfsconfig", "README.md", "more"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s", want)
		}
	}
	after := snapshot(t, root)
	// Put back means the same bytes and mode; git's own index and the
	// files Sandbar rewrote get a new mtime, and the branch's reflog
	// says it went back.
	for k, v := range before {
		if a := after[k]; strings.Fields(a)[0] != strings.Fields(v)[0] || (len(strings.Fields(v)) > 2 && strings.Fields(a)[1] != strings.Fields(v)[1]) {
			t.Errorf("%s: %q, was %q", k, a, v)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s was left behind", k)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "deep")); err == nil {
		t.Errorf("the folder deep, made by the failed checkout, is still there")
	}

	// What cannot be put back is named, with where.
	g, err = guardTree(ctx, root, neutral, []string{"x/y.txt"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "x", "y.txt"), "left\n")
	writeFile(t, filepath.Join(root, "x", "other.txt"), "not the merge's\n")
	err = g.failed(ctx, "main", "it broke", errors.New("exit 128"))
	if err == nil || !strings.Contains(err.Error(), "which Sandbar could not put back") || !strings.Contains(err.Error(), filepath.Join(root, "x")) {
		t.Errorf("err = %v, want it to name %s as left", err, filepath.Join(root, "x"))
	}
}

// TestGuardRestoresThroughNoSymlink: a failed checkout left a symlink
// where the person's folder was (dir -> ../victim, as the agent's commit
// said); putting things back removes nothing through the link — the
// victim's file of the same name outside the repository stays — and the
// folder and its file come back (a hostile review's finding).
func TestGuardRestoresThroughNoSymlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	writeFile(t, filepath.Join(root, "dir", "file"), "mine\n")
	gitT(t, root, "add", "dir/file")
	gitT(t, root, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "dir")
	victim := filepath.Join(filepath.Dir(root), "victim")
	writeFile(t, filepath.Join(victim, "file"), "the victim's, outside the repository\n")
	neutral, err := neutralArgs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	g, err := guardTree(ctx, root, neutral, []string{"dir/file"})
	if err != nil {
		t.Fatal(err)
	}
	// What a checkout that failed half-way leaves.
	if err := os.RemoveAll(filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "victim"), filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	g.failed(ctx, "main", "it broke", errors.New("exit 128"))
	if b, err := os.ReadFile(filepath.Join(victim, "file")); err != nil || string(b) != "the victim's, outside the repository\n" {
		t.Errorf("the file outside the repository: %q, %v", b, err)
	}
	fi, err := os.Lstat(filepath.Join(root, "dir"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("dir is not a folder again: %v %v", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "dir", "file")); err != nil || string(b) != "mine\n" {
		t.Errorf("dir/file: %q, %v", b, err)
	}
}
