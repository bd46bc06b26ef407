package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// newLib makes a small repository to be used as a submodule, in a folder
// with a space and non-ASCII letters.
func newLib(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "libs", name+" ü")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "init", "-q", "-b", "main")
	gitT(t, root, "config", "user.name", "Lib Person")
	gitT(t, root, "config", "user.email", "lib@example.com")
	writeFile(t, filepath.Join(root, name+".txt"), name+"\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", name)
	return canonical(t, root)
}

// addSubmodule adds url as a submodule at path of the repository root and
// commits it.
func addSubmodule(t *testing.T, root, url, path string) {
	t.Helper()
	gitT(t, root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "--", url, path)
	gitT(t, root, "commit", "-q", "-m", "add "+path)
}

// superRepo is a repository with submodules as people have them:
//
//	libs/core ü   checked out, with its own submodule "deep" checked out
//	libs/off      recorded, not checked out in the source (deinit)
//	libs/ghost    checked out, but recording a commit the source's copy lacks
func superRepo(t *testing.T) (root, core, deep string) {
	t.Helper()
	deep = newLib(t, "deep")
	core = newLib(t, "core")
	addSubmodule(t, core, deep, "deep")
	off := newLib(t, "off")
	ghost := newLib(t, "ghost")

	root = newRepo(t, "https://example.com/me/super.git")
	addSubmodule(t, root, core, "libs/core ü")
	gitT(t, filepath.Join(root, "libs", "core ü"), "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
	// People mark submodules they update by hand so; a new clone still
	// needs the files.
	gitT(t, root, "config", "-f", ".gitmodules", "submodule.libs/core ü.update", "none")
	gitT(t, root, "commit", "-q", "-am", "update by hand")
	addSubmodule(t, root, off, "libs/off")
	gitT(t, root, "submodule", "deinit", "-q", "-f", "--", "libs/off")
	addSubmodule(t, root, ghost, "libs/ghost")
	gitT(t, root, "update-index", "--cacheinfo", "160000,1234567890123456789012345678901234567890,libs/ghost")
	gitT(t, root, "commit", "-q", "-m", "ghost commit")
	return root, core, deep
}

func TestCloneSubmodules(t *testing.T) {
	t.Parallel()
	root, core, _ := superRepo(t)
	before := snapshot(t, root)
	coreSrc := filepath.Join(root, "libs", "core ü")
	coreBefore := snapshot(t, coreSrc)

	dest := filepath.Join(t.TempDir(), "sessions", "s 1", "workspace")
	var phases []string
	info, err := Clone(context.Background(), CloneOptions{
		Source: resolveT(t, root), Dest: dest, Branch: "sandbar/sub",
		Progress: func(p Progress) { phases = append(phases, p.Phase) },
	})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	if want := []string{"libs/core ü", "libs/core ü/deep"}; !slices.Equal(info.Submodules, want) {
		t.Errorf("Submodules = %q, want %q", info.Submodules, want)
	}
	if !slices.Contains(phases, PhaseSubmodules) {
		t.Errorf("progress phases %q lack %q", phases, PhaseSubmodules)
	}
	if len(info.SkippedSubmodules) != 2 {
		t.Fatalf("SkippedSubmodules = %q, want libs/off and libs/ghost", info.SkippedSubmodules)
	}
	off, ghost := info.SkippedSubmodules[0], info.SkippedSubmodules[1]
	if !strings.HasPrefix(off, "libs/off: not checked out in ") || !strings.Contains(off, "git submodule update --init") {
		t.Errorf("libs/off skipped as %q", off)
	}
	if !strings.HasPrefix(ghost, "libs/ghost: commit 123456789012 is not in ") || !strings.Contains(ghost, "fetch") {
		t.Errorf("libs/ghost skipped as %q", ghost)
	}

	// The files are there, at the recorded commits, and the clone is clean.
	if got := readFile(t, filepath.Join(dest, "libs", "core ü", "core.txt")); got != "core\n" {
		t.Errorf("core.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(dest, "libs", "core ü", "deep", "deep.txt")); got != "deep\n" {
		t.Errorf("deep.txt = %q", got)
	}
	if st := gitT(t, dest, "status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("clone not clean after checkout:\n%s", st)
	}
	for _, line := range strings.Split(gitT(t, dest, "submodule", "status", "--recursive"), "\n") {
		switch {
		case strings.Contains(line, "libs/off") || strings.Contains(line, "libs/ghost"):
			if !strings.HasPrefix(line, "-") {
				t.Errorf("skipped submodule not left uninitialised: %q", line)
			}
		case !strings.HasPrefix(line, " "):
			t.Errorf("submodule not at its recorded commit: %q", line)
		}
	}
	for _, p := range []string{"libs/off", "libs/ghost"} {
		ents, err := os.ReadDir(filepath.Join(dest, p))
		if err != nil || len(ents) != 0 {
			t.Errorf("%s: want an empty folder, got %v (%v)", p, ents, err)
		}
		if out, _ := git(context.Background(), dest, "config", "--get-regexp", `^submodule\.`+strings.ReplaceAll(p, "/", `\/`)+`\.`); out != "" {
			t.Errorf("%s left configuration in the clone: %q", p, out)
		}
	}

	// Each submodule points at its real URL, with the source's copy as
	// "source"; its objects came from that copy, not a network.
	sub := filepath.Join(dest, "libs", "core ü")
	if got := gitT(t, dest, "config", "submodule.libs/core ü.url"); got != core {
		t.Errorf("clone's submodule url = %q, want %q", got, core)
	}
	if got := gitT(t, sub, "remote", "get-url", "origin"); got != core {
		t.Errorf("submodule origin = %q, want %q", got, core)
	}
	if got := gitT(t, sub, "remote", "get-url", "source"); got != coreSrc {
		t.Errorf("submodule source = %q, want %q", got, coreSrc)
	}
	// The submodule's git dir lives inside the clone's, with relative
	// links, so the folder works wherever the VM mounts it.
	if gf := readFile(t, filepath.Join(sub, ".git")); !strings.HasPrefix(gf, "gitdir: ../../.git/modules/") {
		t.Errorf("submodule .git file = %q, want a relative gitdir inside the clone", gf)
	}

	sameSnapshot(t, before, snapshot(t, root))
	sameSnapshot(t, coreBefore, snapshot(t, coreSrc))
}

func TestCloneWithoutSubmodules(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	var phases []string
	info, err := Clone(context.Background(), CloneOptions{
		Source: resolveT(t, root), Dest: filepath.Join(t.TempDir(), "ws"), Branch: "sandbar/plain",
		Progress: func(p Progress) { phases = append(phases, p.Phase) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if info.Submodules != nil || info.SkippedSubmodules != nil || slices.Contains(phases, PhaseSubmodules) {
		t.Errorf("a repository without submodules got %q, %q, phases %q", info.Submodules, info.SkippedSubmodules, phases)
	}
}

func TestMergeBringsSubmoduleCommits(t *testing.T) {
	t.Parallel()
	root, _, _ := superRepo(t)
	dest, _ := cloneT(t, root, "sandbar/m")
	sub := filepath.Join(dest, "libs", "core ü")
	deep := filepath.Join(sub, "deep")

	// The agent commits in the nested submodule, then in the submodule,
	// then in the clone, leaving the submodules on no branch as git does.
	deepCommit := commitT(t, deep, "fix.txt", "fixed\n", "deep fix")
	gitT(t, sub, "add", "deep")
	subCommit := commitT(t, sub, "core.txt", "core 2\n", "core change")
	gitT(t, dest, "add", "libs/core ü")
	top := commitT(t, dest, "NOTES.md", "notes\n", "bump core")

	coreSrc := filepath.Join(root, "libs", "core ü")
	deepSrc := filepath.Join(coreSrc, "deep")
	for _, c := range []struct{ dir, commit string }{{coreSrc, subCommit}, {deepSrc, deepCommit}} {
		if _, err := git(context.Background(), c.dir, "cat-file", "-e", c.commit); err == nil {
			t.Fatalf("%s already has %s before the merge", c.dir, short(c.commit))
		}
	}
	coreHead := gitT(t, coreSrc, "rev-parse", "HEAD")

	res, err := Merge(context.Background(), resolveT(t, root), dest, "sandbar/m", false)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if want := []string{"libs/core ü", "libs/core ü/deep"}; !slices.Equal(res.Submodules, want) {
		t.Errorf("Submodules = %q, want %q", res.Submodules, want)
	}
	if got := gitT(t, root, "rev-parse", "sandbar/m"); got != top {
		t.Errorf("branch in source = %s, want %s", got, top)
	}
	if got := gitT(t, coreSrc, "rev-parse", "sandbar/m"); got != subCommit {
		t.Errorf("submodule branch in source = %s, want %s", got, subCommit)
	}
	if got := gitT(t, deepSrc, "rev-parse", "sandbar/m"); got != deepCommit {
		t.Errorf("nested submodule branch in source = %s, want %s", got, deepCommit)
	}
	// The source's submodule checkout is where it was, and the clone's
	// temporary ref is gone.
	if got := gitT(t, coreSrc, "rev-parse", "HEAD"); got != coreHead {
		t.Errorf("source submodule HEAD moved: %s, was %s", got, coreHead)
	}
	if out := gitT(t, sub, "for-each-ref", "refs/sandbar/"); out != "" {
		t.Errorf("clone's submodule kept %q", out)
	}

	// Merging again changes nothing: the commits are there now.
	res, err = Merge(context.Background(), resolveT(t, root), dest, "sandbar/m", false)
	if err != nil || len(res.Submodules) != 0 {
		t.Errorf("second Merge = %+v, %v; want nothing brought", res, err)
	}
}

func TestMergeSubmoduleNotCheckedOutInSource(t *testing.T) {
	t.Parallel()
	root, _, _ := superRepo(t)
	dest, _ := cloneT(t, root, "sandbar/n")
	sub := filepath.Join(dest, "libs", "core ü")
	commitT(t, sub, "core.txt", "core 3\n", "core change")
	gitT(t, dest, "add", "libs/core ü")
	commitT(t, dest, "NOTES.md", "notes\n", "bump core")
	gitT(t, root, "submodule", "deinit", "-q", "-f", "--", "libs/core ü")
	before := snapshot(t, root)

	_, err := Merge(context.Background(), resolveT(t, root), dest, "sandbar/n", false)
	if err == nil || !strings.Contains(err.Error(), "libs/core ü is not checked out in") || !strings.Contains(err.Error(), "git submodule update --init") {
		t.Fatalf("Merge = %v, want a refusal naming the submodule and the fix", err)
	}
	sameSnapshot(t, before, snapshot(t, root))
}
