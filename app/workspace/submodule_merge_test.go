package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMergeNeverFollowsSymlink: the source's folder for a submodule is a
// symlink to a repository elsewhere, and the agent commits a submodule
// there; merge never writes through the link, and says the commits stay
// in the session.
func TestMergeNeverFollowsSymlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, _, _ := superRepo(t)
	target := canonical(t, filepath.Join(root, "libs", "linked"))
	before := snapshot(t, target)
	beforeGit := filesOf(t, filepath.Join(root, ".git", "modules", "libs", "linked"))
	c := sessionT(t, root, "link")
	sub := filepath.Join(c.dir, "libs", "linked")
	gitT(t, sub, "init", "-q", "-b", "main")
	commitT(t, sub, "planted.txt", "x\n", "planted")
	gitT(t, c.dir, "add", "libs/linked")
	top := commitT(t, c.dir, "bump.txt", "x\n", "bump linked")
	if info := c.save(t); info.Submodules["libs/linked"] == "" {
		t.Fatalf("the planted submodule was not sent: %q", info.Submodules)
	}
	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	wantSkipped(t, res, "libs/linked: "+filepath.Join(root, "libs", "linked")+" is a symlink, and merge never writes through one, so its commits stay in the session")
	if got := gitT(t, root, "rev-parse", "refs/heads/"+c.branch); got != top {
		t.Errorf("%s = %s, want %s", c.branch, got, top)
	}
	sameSnapshot(t, before, snapshot(t, target))
	sameFiles(t, beforeGit, filesOf(t, filepath.Join(root, ".git", "modules", "libs", "linked")))
}

// filesOf is every file under dir, symlinks not followed: its bytes'
// hash and mode, by path.
func filesOf(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := contentHash(p, fi)
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %s", fi.Mode(), h)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) < 2 {
		t.Fatalf("%s holds nothing to compare", dir)
	}
	return m
}

func sameFiles(t testing.TB, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %q -> %q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// wantSkipped checks that a merge brought no submodule commits anywhere
// and skipped exactly the lines given.
func wantSkipped(t testing.TB, res MergeResult, lines ...string) {
	t.Helper()
	if len(res.Submodules) != 0 {
		t.Errorf("commits brought into %q", res.Submodules)
	}
	got, want := slices.Sorted(slices.Values(res.SkippedSubmodules)), slices.Sorted(slices.Values(lines))
	if !slices.Equal(got, want) {
		t.Errorf("SkippedSubmodules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// plant makes rel (in a session's clone) a repository of its own with a
// commit, and records it in the clone as a gitlink, as an agent can.
func plant(t testing.TB, clone, rel string) string {
	t.Helper()
	dir := filepath.Join(clone, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	c := commitT(t, dir, "planted.txt", "planted\n", "planted by the agent")
	gitT(t, clone, "add", "-f", "--", rel)
	return c
}

// TestMergeNestedRepoNotSubmodule: the person's working tree holds an
// ignored clone of some other project and a worktree of the repository
// itself; the agent records gitlinks at both paths, with commits of its
// own. Neither is a submodule of the person's repository, so merge runs
// no git in them and leaves them byte for byte as they were, and says
// the commits stay in the session; the branch itself is merged.
func TestMergeNestedRepoNotSubmodule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	// An ignored clone (out/ is in .gitignore), with refs and a config a
	// fetch would act on.
	vendor := filepath.Join(root, "out", "vendor")
	gitT(t, root, "clone", "-q", "--", newLib(t, "vendor"), vendor)
	gitT(t, vendor, "config", "core.alternateRefsCommand", "touch "+filepath.Join(root, "ran"))
	gitT(t, vendor, "branch", "keep")
	// A worktree of the person's own repository, as agents' tools make.
	wt := filepath.Join(root, ".claude", "worktrees", "x")
	gitT(t, root, "worktree", "add", "-q", "-b", "wt-branch", "--", wt)
	beforeVendor := filesOf(t, filepath.Join(vendor, ".git"))
	beforeGit := filesOf(t, filepath.Join(root, ".git", "worktrees"))

	c := sessionT(t, root, "nested")
	plant(t, c.dir, "out/vendor")
	plant(t, c.dir, ".claude/worktrees/x")
	top := commitT(t, c.dir, "top.txt", "top\n", "agent: gitlinks")
	info := c.save(t)
	if info.Submodules["out/vendor"] == "" || info.Submodules[".claude/worktrees/x"] == "" {
		t.Fatalf("the planted repositories were not sent: %q", info.Submodules)
	}
	before := snapshot(t, root, "refs/heads/"+c.branch)

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	why := " (neither its HEAD nor its index records one there), so its commits stay in the session"
	wantSkipped(t, res, "out/vendor: not a submodule of "+root+why, ".claude/worktrees/x: not a submodule of "+root+why)
	if got := gitT(t, root, "rev-parse", "refs/heads/"+c.branch); got != top {
		t.Errorf("%s = %s, want %s", c.branch, got, top)
	}
	sameFiles(t, beforeVendor, filesOf(t, filepath.Join(vendor, ".git")))
	sameFiles(t, beforeGit, filesOf(t, filepath.Join(root, ".git", "worktrees")))
	sameSnapshot(t, before, snapshot(t, root, "refs/heads/"+c.branch))
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Error("git ran a command configured in the nested clone")
	}

	// Forced: still nothing written there.
	if _, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, true); err != nil {
		t.Fatalf("forced merge: %v", err)
	}
	sameFiles(t, beforeVendor, filesOf(t, filepath.Join(vendor, ".git")))
	sameFiles(t, beforeGit, filesOf(t, filepath.Join(root, ".git", "worktrees")))
}

// TestMergeGitfileElsewhere: a submodule the person does record, whose
// folder's .git points at another repository outside .git/modules (here
// a clone of the same library elsewhere on the host). Merge does not
// write there and says why; that repository is untouched.
func TestMergeGitfileElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lib := newLib(t, "lib")
	root := newRepo(t, "")
	addSubmodule(t, root, lib, "libs/lib")
	other := filepath.Join(t.TempDir(), "other")
	gitT(t, t.TempDir(), "clone", "-q", "--", lib, other)
	gitfile := filepath.Join(root, "libs", "lib", ".git")
	writeFile(t, gitfile, "gitdir: "+filepath.Join(other, ".git")+"\n")
	beforeOther := filesOf(t, filepath.Join(other, ".git"))
	beforeOwn := filesOf(t, filepath.Join(root, ".git", "modules"))

	c := sessionT(t, root, "elsewhere")
	sub := filepath.Join(c.dir, "libs", "lib")
	if _, err := os.Stat(filepath.Join(sub, "lib.txt")); err != nil {
		// Carried from the other clone, which has the recorded commit.
		t.Fatalf("libs/lib not carried into the clone: %v", err)
	}
	commitT(t, sub, "lib.txt", "by the agent\n", "agent: lib")
	gitT(t, c.dir, "add", "libs/lib")
	commitT(t, c.dir, "top.txt", "top\n", "agent: bump lib")
	c.save(t)

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	wantSkipped(t, res, "libs/lib: "+gitfile+" names the git dir "+filepath.Join(other, ".git")+", which is not a submodule "+root+
		" keeps in "+filepath.Join(root, ".git", "modules")+", and merge writes into no repository elsewhere, so its commits stay in the session")
	sameFiles(t, beforeOther, filesOf(t, filepath.Join(other, ".git")))
	sameFiles(t, beforeOwn, filesOf(t, filepath.Join(root, ".git", "modules")))
}

// TestMergeSymlinkOnTheWay: a genuine submodule's git dir, reached
// through a folder on the way that is a symlink: the person moved vend/
// elsewhere and linked it back, with the gitfile naming the git dir in
// .git/modules outright. Merge does not go through the link.
func TestMergeSymlinkOnTheWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lib := newLib(t, "lib")
	root := newRepo(t, "")
	addSubmodule(t, root, lib, "vend/lib")
	moved := filepath.Join(t.TempDir(), "vend")
	if err := os.Rename(filepath.Join(root, "vend"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(root, "vend")); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(root, ".git", "modules", "vend", "lib")
	writeFile(t, filepath.Join(moved, "lib", ".git"), "gitdir: "+gitDir+"\n")
	gitT(t, filepath.Join(moved, "lib"), "config", "core.worktree", filepath.Join(moved, "lib"))
	if got := gitT(t, filepath.Join(moved, "lib"), "rev-parse", "HEAD"); got != gitT(t, root, "rev-parse", "HEAD:vend/lib") {
		t.Fatalf("the moved checkout is at %s", got)
	}
	beforeGit := filesOf(t, gitDir)

	c := sessionT(t, root, "onway")
	plant(t, c.dir, "vend/lib")
	commitT(t, c.dir, "top.txt", "top\n", "agent: replace lib")
	c.save(t)

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	wantSkipped(t, res, "vend/lib: "+filepath.Join(root, "vend")+" is a symlink, and merge never writes through one, so its commits stay in the session")
	sameFiles(t, beforeGit, filesOf(t, gitDir))
}

func TestShowPath(t *testing.T) {
	for in, want := range map[string]string{
		"libs/core ü":  "libs/core ü",
		"out/\x1b[2Jx": `"out/\x1b[2Jx"`,
		"a\nb":         `"a\nb"`,
		"a\u202eb":     `"a\u202eb"`,
	} {
		if got := showPath(in); got != want {
			t.Errorf("showPath(%q) = %s, want %s", in, got, want)
		}
	}
}
