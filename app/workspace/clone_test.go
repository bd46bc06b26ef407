package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCloneFromCurrentBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, testRemote)
	// Uncommitted work in the source stays there and out of the clone.
	writeFile(t, filepath.Join(root, "README.md"), "# edited, not committed\n")
	before := snapshot(t, root)
	src := resolveT(t, root)

	dest := filepath.Join(t.TempDir(), "sessions", "ab c", "work späce")
	info, err := Clone(ctx, CloneOptions{Source: src, Dest: dest, Branch: "sandbar/abc"})
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseCommit != src.Head {
		t.Errorf("BaseCommit = %s, want source HEAD %s", info.BaseCommit, src.Head)
	}
	if info.Took <= 0 {
		t.Errorf("Took = %v", info.Took)
	}
	if got := gitT(t, dest, "symbolic-ref", "--short", "HEAD"); got != "sandbar/abc" {
		t.Errorf("clone is on %q, want sandbar/abc", got)
	}
	if got := gitT(t, dest, "rev-parse", "HEAD"); got != src.Head {
		t.Errorf("clone HEAD = %s, want %s", got, src.Head)
	}
	if got := readFile(t, filepath.Join(dest, "dir with space", "ünïcode file.txt")); got != "ünïcode\n" {
		t.Errorf("ünïcode file = %q", got)
	}
	if got := readFile(t, filepath.Join(dest, "README.md")); got != "# hello\n" {
		t.Errorf("README.md = %q, want the committed text", got)
	}
	if got := gitT(t, dest, "status", "--porcelain"); got != "" {
		t.Errorf("fresh clone is not clean:\n%s", got)
	}
	if got := gitT(t, dest, "remote", "get-url", "origin"); got != testRemote {
		t.Errorf("origin = %q, want %q", got, testRemote)
	}
	if got := gitT(t, dest, "remote", "get-url", "source"); got != root {
		t.Errorf("source = %q, want %q", got, root)
	}
	if got := gitT(t, dest, "config", "--default", "", "--get", "branch.sandbar/abc.remote"); got != "" {
		t.Errorf("session branch tracks %q, want nothing", got)
	}
	sameSnapshot(t, before, snapshot(t, root))
	assertHardlinked(t, root, dest)
}

// assertHardlinked checks the clone shares object files with the source.
func assertHardlinked(t *testing.T, root, dest string) {
	t.Helper()
	linked := 0
	_ = filepath.WalkDir(filepath.Join(dest, ".git", "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dest, p)
		a, err1 := os.Stat(p)
		b, err2 := os.Stat(filepath.Join(root, rel))
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			linked++
		}
		return nil
	})
	if linked == 0 {
		t.Error("no object file of the clone is a hardlink to the source's")
	}
}

func TestCloneFromBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	first := gitT(t, root, "rev-parse", "HEAD")
	gitT(t, root, "tag", "v1")
	gitT(t, root, "tag", "-a", "-m", "annotated", "v1-annotated")
	gitT(t, root, "switch", "-q", "-c", "feature")
	feature := commitT(t, root, "feature.txt", "feature\n", "feature work")
	gitT(t, root, "switch", "-q", "main")
	second := commitT(t, root, "second.txt", "second\n", "second")
	src := resolveT(t, root)

	for _, tc := range []struct{ base, want string }{
		{"", second},
		{"main", second},
		{"v1", first},
		{"v1-annotated", first},
		{"feature", feature},
		{first, first},
		{first[:10], first},
		{"main~1", first},
	} {
		t.Run(fmt.Sprintf("base %q", tc.base), func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "ws")
			info, err := Clone(ctx, CloneOptions{Source: src, Dest: dest, Branch: "sandbar/b", Base: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			if info.BaseCommit != tc.want {
				t.Errorf("BaseCommit = %s, want %s", info.BaseCommit, tc.want)
			}
			if got := gitT(t, dest, "rev-parse", "sandbar/b"); got != tc.want {
				t.Errorf("sandbar/b = %s, want %s", got, tc.want)
			}
			_, err = os.Stat(filepath.Join(dest, "feature.txt"))
			if (tc.want == feature) != (err == nil) {
				t.Errorf("feature.txt present = %v, want %v", err == nil, tc.want == feature)
			}
		})
	}
}

func TestCloneDetachedSource(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	commitT(t, root, "later.txt", "later\n", "later")
	gitT(t, root, "checkout", "-q", "--detach", "HEAD~1")
	src := resolveT(t, root)
	if src.Branch != "" {
		t.Fatalf("Branch = %q for a detached HEAD", src.Branch)
	}
	dest := filepath.Join(t.TempDir(), "ws")
	info, err := Clone(context.Background(), CloneOptions{Source: src, Dest: dest, Branch: "sandbar/d"})
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseCommit != src.Head {
		t.Errorf("BaseCommit = %s, want the detached commit %s", info.BaseCommit, src.Head)
	}
	if _, err := os.Stat(filepath.Join(dest, "later.txt")); err == nil {
		t.Error("later.txt is in a clone based on the commit before it")
	}
}

func TestCloneWithoutRemote(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	dest, _ := cloneT(t, root, "sandbar/n")
	for _, r := range []string{"origin", "source"} {
		if got := gitT(t, dest, "remote", "get-url", r); got != root {
			t.Errorf("%s = %q, want the source folder %q", r, got, root)
		}
	}
}

func TestCloneCopiesIncludedFiles(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	outside := filepath.Join(filepath.Dir(root), "outside.txt")
	writeFile(t, outside, "not yours\n")
	writeFile(t, filepath.Join(root, ".sandbarinclude"), strings.Join([]string{
		"# local settings the agent needs",
		".env",
		"config/*.local",
		"secrets/",
		"!secrets/skip.me",
		"README.md",
		"",
	}, "\n"))
	writeFile(t, filepath.Join(root, ".worktreeinclude"), "tools/run.sh\n/only-root.key\n")
	writeFile(t, filepath.Join(root, ".gitignore"), ".env\n*.log\nsecrets/\nout/\n*.key\n")
	gitT(t, root, "add", ".sandbarinclude", ".gitignore")
	gitT(t, root, "commit", "-q", "-m", "include lists")

	files := map[string]string{
		".env":                     "API_KEY=1\n",
		"réglages/.env":            "NESTED=1\n",
		"config/app.local":         "local=1\n",
		"config/app.shared":        "not listed\n",
		"secrets/a.txt":            "a\n",
		"secrets/deep/b c.txt":     "b\n",
		"secrets/skip.me":          "taken back by !\n",
		"debug.log":                "ignored but not listed\n",
		"node_modules/pkg/.env":    "heavy folder: not searched\n",
		"only-root.key":            "root key\n",
		"sub/only-root.key":        "anchored pattern: not this one\n",
		"dir with space/notes.txt": "untracked, not listed\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(root, filepath.FromSlash(name)), content)
	}
	writeFile(t, filepath.Join(root, "tools", "run.sh"), "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(root, "tools", "run.sh"), 0o751); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, ".env"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"secrets/in-link":  "a.txt",
		"secrets/abs-link": outside,
		"secrets/up-link":  "../../outside.txt",
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, root)

	dest := filepath.Join(t.TempDir(), "ws")
	info, err := Clone(context.Background(), CloneOptions{Source: resolveT(t, root), Dest: dest, Branch: "sandbar/i"})
	if err != nil {
		t.Fatal(err)
	}
	wantCopied := []string{
		".env", "config/app.local", "only-root.key", "réglages/.env",
		"secrets/a.txt", "secrets/deep/b c.txt", "secrets/in-link", "tools/run.sh",
	}
	if !slices.Equal(info.Copied, wantCopied) {
		t.Errorf("Copied = %q\nwant     %q", info.Copied, wantCopied)
	}
	if len(info.Skipped) != 2 || !strings.HasPrefix(info.Skipped[0], "secrets/abs-link: symlink to an absolute path") ||
		!strings.HasPrefix(info.Skipped[1], "secrets/up-link: symlink out of the repository") {
		t.Errorf("Skipped = %q", info.Skipped)
	}
	for _, name := range wantCopied {
		if name == "secrets/in-link" || name == "tools/run.sh" {
			continue
		}
		if got := readFile(t, filepath.Join(dest, filepath.FromSlash(name))); got != files[name] {
			t.Errorf("%s = %q, want %q", name, got, files[name])
		}
	}
	for name, want := range map[string]fs.FileMode{"tools/run.sh": 0o751, ".env": 0o600} {
		fi, err := os.Stat(filepath.Join(dest, filepath.FromSlash(name)))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	if got, err := os.Readlink(filepath.Join(dest, "secrets", "in-link")); err != nil || got != "a.txt" {
		t.Errorf("secrets/in-link -> %q (%v), want a.txt", got, err)
	}
	for _, name := range []string{"debug.log", "config/app.shared", "secrets/skip.me", "node_modules", "sub/only-root.key", "dir with space/notes.txt", "secrets/abs-link", "secrets/up-link"} {
		if _, err := os.Lstat(filepath.Join(dest, filepath.FromSlash(name))); err == nil {
			t.Errorf("%s was copied", name)
		}
	}
	// Copied files are the person's, not the session's work.
	if got := gitT(t, dest, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("clone shows copied files as changes:\n%s", got)
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestCloneRefusesNonEmptyDest(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	dest := filepath.Join(t.TempDir(), "busy")
	writeFile(t, filepath.Join(dest, "keep.txt"), "mine\n")
	_, err := Clone(context.Background(), CloneOptions{Source: resolveT(t, root), Dest: dest, Branch: "sandbar/x"})
	if err == nil || !strings.Contains(err.Error(), "already exists and is not empty") {
		t.Fatalf("err = %v, want a refusal of the non-empty folder", err)
	}
	ents, _ := os.ReadDir(dest)
	if len(ents) != 1 || readFile(t, filepath.Join(dest, "keep.txt")) != "mine\n" {
		t.Errorf("dest was touched: %v", ents)
	}

	file := filepath.Join(t.TempDir(), "a file")
	writeFile(t, file, "x")
	if _, err := Clone(context.Background(), CloneOptions{Source: resolveT(t, root), Dest: file, Branch: "sandbar/x"}); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("clone onto a file: %v", err)
	}
}

func TestCloneBadInput(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	src := resolveT(t, root)
	for _, tc := range []struct {
		name, branch, base, msg string
	}{
		{"unknown base", "sandbar/x", "no-such-thing", "base no-such-thing is not a branch, tag or commit in " + root},
		{"option as base", "sandbar/x", "--all", "base --all is not a branch, tag or commit in " + root},
		{"bad branch", "bad..name", "", `"bad..name" is not a valid branch name`},
		{"no branch", "", "", "no branch name given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Both a folder Clone would make and an empty one that exists.
			parent := t.TempDir()
			made := filepath.Join(parent, "new", "ws")
			existing := filepath.Join(parent, "empty")
			if err := os.Mkdir(existing, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, dest := range []string{made, existing} {
				_, err := Clone(context.Background(), CloneOptions{Source: src, Dest: dest, Branch: tc.branch, Base: tc.base})
				if err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("err = %v, want %q", err, tc.msg)
				}
			}
			if _, err := os.Stat(filepath.Join(parent, "new")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed clone left %s behind", filepath.Join(parent, "new"))
			}
			if ents, err := os.ReadDir(existing); err != nil || len(ents) != 0 {
				t.Errorf("the empty dest is now %v, %v", ents, err)
			}
		})
	}
}

// TestCloneCleansUpAfterFailure fails a clone after git has cloned (the
// context is cancelled as checkout starts) and checks that only what
// Clone made is gone.
func TestCloneCleansUpAfterFailure(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	src := resolveT(t, root)
	parent := t.TempDir()
	existing := filepath.Join(parent, "empty")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{filepath.Join(parent, "a", "b", "ws"), existing} {
		ctx, cancel := context.WithCancel(context.Background())
		var phases []string
		_, err := Clone(ctx, CloneOptions{Source: src, Dest: dest, Branch: "sandbar/x", Progress: func(p Progress) {
			phases = append(phases, p.Phase)
			if p.Phase == PhaseCheckingOut {
				if _, err := os.Stat(filepath.Join(dest, ".git")); err != nil {
					t.Errorf("no clone yet when checkout starts: %v", err)
				}
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if !slices.Contains(phases, PhaseCheckingOut) {
			t.Errorf("phases %q never reached checkout", phases)
		}
	}
	if _, err := os.Stat(filepath.Join(parent, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folders the clone made are still there")
	}
	if ents, err := os.ReadDir(existing); err != nil || len(ents) != 0 {
		t.Errorf("the existing dest is now %v, %v; want it empty", ents, err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("parent holds %v", ents)
	}
}

func TestCloneProgress(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	for i := range 300 {
		writeFile(t, filepath.Join(root, "many", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%03d.txt", i)), strings.Repeat(fmt.Sprintf("line %d\n", i), 50))
	}
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "many files")

	var got []Progress
	_, err := Clone(context.Background(), CloneOptions{
		Source: resolveT(t, root), Dest: filepath.Join(t.TempDir(), "ws"), Branch: "sandbar/p",
		Progress: func(p Progress) { got = append(got, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0] != (Progress{PhaseCloning, 0}) || got[len(got)-1] != (Progress{PhaseDone, 100}) {
		t.Fatalf("progress = %v, want Cloning 0 first and Done 100 last", got)
	}
	for _, p := range got {
		if p.Phase == "" || p.Percent < 0 || p.Percent > 100 {
			t.Errorf("bad progress %+v", p)
		}
	}
	t.Logf("progress: %v", got)
}

// TestScanProgressRealGit feeds the parser what git really prints: the
// stderr of a clone that transfers objects (a --local clone links them
// and prints no meter).
func TestScanProgressRealGit(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	for i := range 200 {
		writeFile(t, filepath.Join(root, "f", fmt.Sprintf("%03d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "files")

	cmd := exec.Command("git", "clone", "--progress", "--no-local", root, filepath.Join(t.TempDir(), "c"))
	cmd.Env = gitEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, stderr.String())
	}
	raw := stderr.String()
	if !strings.Contains(raw, "%") {
		t.Skipf("this git printed no progress meter:\n%s", raw)
	}
	final := map[string]int{}
	msgs := scanProgress(strings.NewReader(raw), func(p Progress) { final[p.Phase] = p.Percent })
	if len(final) == 0 {
		t.Fatalf("no progress parsed from %q", raw)
	}
	for _, phase := range []string{"Receiving objects", "Resolving deltas"} {
		if strings.Contains(raw, phase+": ") && final[phase] != 100 {
			t.Errorf("%s ended at %d%%, want 100 (parsed %v)", phase, final[phase], final)
		}
	}
	if !strings.Contains(msgs, "Cloning into") {
		t.Errorf("git's messages lost: %q", msgs)
	}
	t.Logf("phases: %v", final)
}

func TestScanProgress(t *testing.T) {
	t.Parallel()
	in := "Cloning into 'x'...\nremote: Counting objects:  50% (1/2)\rremote: Counting objects: 100% (2/2), done.\n" +
		"Receiving objects:  45% (450/1000)\rReceiving objects:  45% (451/1000)\rReceiving objects: 100% (1000/1000), 1.2 MiB | 3 MiB/s, done.\n" +
		"Updating files:  80% (8/10)\rUpdating files: 100% (10/10), done.\nfatal: something\n"
	var got []Progress
	msgs := scanProgress(strings.NewReader(in), func(p Progress) { got = append(got, p) })
	want := []Progress{
		{"Counting objects", 50}, {"Counting objects", 100},
		{"Receiving objects", 45}, {"Receiving objects", 100},
		{"Updating files", 80}, {"Updating files", 100},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if msgs != "Cloning into 'x'...\nfatal: something" {
		t.Errorf("messages = %q", msgs)
	}
}

// TestCloneGCLeavesSourceIntact: the clone shares object files with the
// source, and git only ever adds or unlinks them, never rewrites one in
// place; so a gc in the clone (an agent may run one) leaves the source whole.
func TestCloneGCLeavesSourceIntact(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	dest, _ := cloneT(t, root, "sandbar/h")
	commitT(t, dest, "x.txt", "x\n", "x")
	gitT(t, dest, "gc", "-q", "--prune=now")
	if got := gitT(t, root, "fsck", "--no-progress", "--no-dangling"); got != "" {
		t.Errorf("source fsck after the clone's gc: %s", got)
	}
}

// TestLinkedWorktreeSource: a person may drop a linked worktree (its .git
// is a file); cloning from it and merging back work as from the main one.
func TestLinkedWorktreeSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, testRemote)
	wt := filepath.Join(canonical(t, t.TempDir()), "linked wörktree")
	gitT(t, root, "worktree", "add", "-q", "-b", "feature", wt)
	feature := commitT(t, wt, "feature.txt", "f\n", "feature")

	src := resolveT(t, wt)
	if src.Root != wt || src.Branch != "feature" || src.Head != feature || src.Remote != testRemote {
		t.Fatalf("Resolve(worktree) = %+v", src)
	}
	dest := filepath.Join(t.TempDir(), "ws")
	info, err := Clone(ctx, CloneOptions{Source: src, Dest: dest, Branch: "sandbar/lw"})
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseCommit != feature {
		t.Errorf("BaseCommit = %s, want %s", info.BaseCommit, feature)
	}
	work := commitT(t, dest, "work.txt", "w\n", "work")
	before := snapshot(t, wt, "refs/heads/sandbar/lw")
	if _, err := Merge(ctx, src, dest, "sandbar/lw", false); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, root, "rev-parse", "sandbar/lw"); got != work {
		t.Errorf("sandbar/lw in the main worktree = %s, want %s", got, work)
	}
	sameSnapshot(t, before, snapshot(t, wt, "refs/heads/sandbar/lw"))
}
