package workspace

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirtySource gives the source repository work of its own that a merge
// must not touch: a staged change, an unstaged one and an untracked file.
func dirtySource(t *testing.T, root string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main // staged\n")
	gitT(t, root, "add", "src/main.go")
	writeFile(t, filepath.Join(root, "README.md"), "# modified, not staged\n")
	writeFile(t, filepath.Join(root, "notes ü.txt"), "untracked\n")
	writeFile(t, filepath.Join(root, ".env"), "ignored\n")
}

func TestMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, testRemote)
	dirtySource(t, root)
	const branch = "sandbar/m1"
	const ref = "refs/heads/" + branch
	c := sessionT(t, root, "m1")
	dir := c.dir
	src := resolveT(t, root)
	before := snapshot(t, root, ref)
	merge := func(force bool) (MergeResult, error) {
		c.save(t)
		return Merge(ctx, src, c.m, c.id, branch, force)
	}

	first := commitT(t, dir, "feature/ü new.txt", "session work\n", "session: add a file")
	writeFile(t, filepath.Join(dir, "left over.txt"), "not committed\n")
	writeFile(t, filepath.Join(dir, "src", "main.go"), "changed, not committed\n")

	res, err := merge(false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Updated || res.Commit != first || res.Previous != "" {
		t.Errorf("first merge = %+v, want created at %s", res, first)
	}
	if want := []string{"left over.txt", "src/main.go"}; !slices.Equal(res.Uncommitted, want) {
		t.Errorf("Uncommitted = %q, want %q", res.Uncommitted, want)
	}
	if got := gitT(t, root, "rev-parse", ref); got != first {
		t.Errorf("%s in the source = %s, want %s", branch, got, first)
	}
	if got := gitT(t, root, "show", first+":feature/ü new.txt"); got != "session work" {
		t.Errorf("merged file = %q", got)
	}
	sameSnapshot(t, before, snapshot(t, root, ref))

	// A fast-forward moves it.
	second := commitT(t, dir, "more.txt", "more\n", "session: more")
	res, err = merge(false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || !res.Updated || res.Commit != second || res.Previous != first {
		t.Errorf("second merge = %+v, want updated %s -> %s", res, first, second)
	}
	// Nothing new: nothing done.
	res, err = merge(false)
	if err != nil || res.Created || res.Updated || res.Commit != second {
		t.Errorf("repeat merge = %+v, %v", res, err)
	}

	// Someone commits on the branch in the source (without touching its
	// working tree): the session's branch no longer contains it.
	tree := gitT(t, root, "rev-parse", second+"^{tree}")
	theirs := gitT(t, root, "commit-tree", "-p", second, "-m", "by hand in the source", tree)
	gitT(t, root, "update-ref", ref, theirs)
	third := commitT(t, dir, "third.txt", "3\n", "session: third")

	_, err = merge(false)
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("diverged merge: err = %v, want ErrDiverged", err)
	}
	want := "branch " + branch + " in " + root + " has commits the session does not"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "use --force to overwrite it, or merge it by hand") {
		t.Errorf("diverged message %q lacks %q", err, want)
	}
	if got := gitT(t, root, "rev-parse", ref); got != theirs {
		t.Errorf("a refused merge moved the branch to %s", got)
	}

	res, err = merge(true)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Updated || res.Commit != third || res.Previous != theirs {
		t.Errorf("forced merge = %+v", res)
	}
	if got := gitT(t, root, "rev-parse", ref); got != third {
		t.Errorf("forced merge left %s at %s, want %s", branch, got, third)
	}
	sameSnapshot(t, before, snapshot(t, root, ref))
	if tags := gitT(t, root, "tag"); tags != "" {
		t.Errorf("merge brought tags: %q", tags)
	}
}

func TestMergeRefusesCheckedOutBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	gitT(t, root, "switch", "-q", "-c", "sandbar/co")
	c := sessionT(t, root, "co")
	commitT(t, c.dir, "x.txt", "x\n", "x")
	c.save(t)
	src := resolveT(t, root)
	before := snapshot(t, root)

	for _, force := range []bool{false, true} {
		_, err := Merge(ctx, src, c.m, c.id, "sandbar/co", force)
		if !errors.Is(err, ErrCheckedOut) {
			t.Fatalf("force=%v: err = %v, want ErrCheckedOut", force, err)
		}
		if !strings.Contains(err.Error(), "branch sandbar/co is checked out in "+root) || !strings.Contains(err.Error(), "switch") {
			t.Errorf("message %q does not say what to do", err)
		}
	}
	sameSnapshot(t, before, snapshot(t, root))

	// The same for a branch checked out in a linked worktree.
	gitT(t, root, "switch", "-q", "main")
	wt := filepath.Join(canonical(t, t.TempDir()), "other wörktree")
	gitT(t, root, "worktree", "add", "-q", "-b", "sandbar/wt", wt)
	c2 := sessionT(t, root, "wt")
	commitT(t, c2.dir, "y.txt", "y\n", "y")
	c2.save(t)
	_, err := Merge(ctx, src, c2.m, c2.id, "sandbar/wt", false)
	if !errors.Is(err, ErrCheckedOut) || !strings.Contains(err.Error(), wt) {
		t.Errorf("worktree branch: err = %v", err)
	}
}

func TestMergeBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "x")
	src := resolveT(t, root)
	if _, err := Merge(ctx, src, c.m, c.id, c.branch, false); err == nil || !strings.Contains(err.Error(), "has no saved work") {
		t.Errorf("nothing saved: err = %v", err)
	}
	c.save(t)
	if _, err := Merge(ctx, src, c.m, c.id, "a..b", false); err == nil || !strings.Contains(err.Error(), "not a valid branch name") {
		t.Errorf("bad name: err = %v", err)
	}
	if _, err := Merge(ctx, src, c.m, "other", c.branch, false); err == nil || !strings.Contains(err.Error(), "has no saved work") {
		t.Errorf("another session: err = %v", err)
	}
}

func TestCheckRemovable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	src := resolveT(t, root)
	c := sessionT(t, root, "r")
	dir, branch := c.dir, c.branch
	check := func() error {
		c.save(t)
		return CheckRemovable(ctx, src, c.m, c.id, c.base)
	}
	if err := CheckRemovable(ctx, src, c.m, c.id, c.base); err != nil {
		t.Fatalf("nothing saved yet: %v", err)
	}
	if err := check(); err != nil {
		t.Fatalf("fresh clone: %v", err)
	}
	// Ignored files are not work.
	writeFile(t, filepath.Join(dir, "build.log"), "ignored\n")
	if err := check(); err != nil {
		t.Fatalf("clone with an ignored file: %v", err)
	}

	writeFile(t, filepath.Join(dir, "wip ü.txt"), "work in progress\n")
	var de *DirtyError
	err := check()
	if !errors.As(err, &de) || !slices.Equal(de.Uncommitted, []string{"wip ü.txt"}) || len(de.Unmerged) != 0 {
		t.Fatalf("uncommitted: err = %v", err)
	}
	if !strings.Contains(err.Error(), "wip ü.txt") || !strings.Contains(err.Error(), "use --force to delete anyway") {
		t.Errorf("message %q", err)
	}

	commitT(t, dir, "wip ü.txt", "done\n", "finish the feature ü")
	err = check()
	if !errors.As(err, &de) || len(de.Uncommitted) != 0 || !slices.Equal(de.Unmerged, []string{"finish the feature ü"}) {
		t.Fatalf("unmerged: err = %v", err)
	}
	if !strings.Contains(err.Error(), `"finish the feature ü"`) || !strings.Contains(err.Error(), root) {
		t.Errorf("message %q", err)
	}

	if _, err := Merge(ctx, src, c.m, c.id, branch, false); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Fatalf("after Merge: %v", err)
	}

	// Merged into another branch there, then the session branch deleted:
	// still safe. Deleted outright: the commit is only dangling there.
	gitT(t, root, "branch", "kept", branch)
	gitT(t, root, "branch", "-q", "-D", branch)
	if err := check(); err != nil {
		t.Fatalf("kept on another branch: %v", err)
	}
	gitT(t, root, "branch", "-q", "-D", "kept")
	if err := check(); !errors.As(err, &de) || len(de.Unmerged) != 1 {
		t.Fatalf("after the source dropped it: err = %v", err)
	}

	// Forgotten sessions have nothing to lose.
	if err := c.m.Forget(ctx, c.id); err != nil {
		t.Fatal(err)
	}
	if err := CheckRemovable(ctx, src, c.m, c.id, c.base); err != nil {
		t.Errorf("a forgotten session: %v", err)
	}
}

func TestDirtyErrorMessage(t *testing.T) {
	t.Parallel()
	e := &DirtyError{Repo: "/r", Uncommitted: []string{"a", "b", "c", "d", "e", "f", "g"}, Unmerged: []string{"one"}}
	want := `the session has work that would be lost: 7 files not committed (a, b, c, d, e, and 2 more) and 1 commit not merged into /r ("one"): merge it first, or use --force to delete anyway`
	if e.Error() != want {
		t.Errorf("got  %s\nwant %s", e.Error(), want)
	}
}
