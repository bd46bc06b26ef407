package workspace

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// mergeIntoT saves the session's clone and merges it into root's current
// branch.
func mergeIntoT(t *testing.T, c *vmClone, root string) (MergeResult, error) {
	t.Helper()
	c.save(t)
	return MergeInto(context.Background(), resolveT(t, root), c.m, c.id, c.branch, false)
}

func TestMergeIntoFastForward(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	c := sessionT(t, root, "ff1")
	// Untracked and ignored files of the person's stay as they are.
	writeFile(t, filepath.Join(root, "notes.txt"), "mine\n")
	writeFile(t, filepath.Join(root, ".env"), "ignored\n")
	before := gitT(t, root, "rev-parse", "HEAD")
	work := commitT(t, c.dir, "feature/ü new.txt", "session work\n", "session: add a file")

	res, err := mergeIntoT(t, c, root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Into != "main" || !res.FastForward || !res.Updated || res.Commit != work || res.Previous != before {
		t.Errorf("MergeInto = %+v, want main fast-forwarded %s -> %s", res, before, work)
	}
	if got := gitT(t, root, "rev-parse", "main"); got != work {
		t.Errorf("main = %s, want %s", got, work)
	}
	if got := readFile(t, filepath.Join(root, "feature", "ü new.txt")); got != "session work\n" {
		t.Errorf("the working tree has %q", got)
	}
	if st := gitT(t, root, "status", "--porcelain"); st != "?? notes.txt" {
		t.Errorf("status after the merge = %q, want only the untracked notes.txt", st)
	}
	if got := readFile(t, filepath.Join(root, ".env")); got != "ignored\n" {
		t.Errorf(".env = %q", got)
	}
	if b := gitT(t, root, "branch", "--list", c.branch); b != "" {
		t.Errorf("merging into main created %q", b)
	}

	// Again: nothing to merge, and nothing changes.
	snap := snapshot(t, root)
	_, err = mergeIntoT(t, c, root)
	if !errors.Is(err, ErrNothingToMerge) || !strings.Contains(err.Error(), "main in "+root+" already has the session's work") {
		t.Errorf("second merge: err = %v, want ErrNothingToMerge saying main has the work", err)
	}
	sameSnapshot(t, snap, snapshot(t, root))
}

func TestMergeIntoTrueMerge(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	c := sessionT(t, root, "tm1")
	mine := commitT(t, root, "mine.txt", "the person's\n", "person: a file")
	work := commitT(t, c.dir, "theirs.txt", "the session's\n", "session: a file")

	res, err := mergeIntoT(t, c, root)
	if err != nil {
		t.Fatal(err)
	}
	if res.FastForward || res.Previous != mine || res.Commit == work || res.Into != "main" {
		t.Errorf("MergeInto = %+v, want a merge commit on top of %s", res, mine)
	}
	if got := gitT(t, root, "rev-parse", "HEAD^1", "HEAD^2"); got != mine+"\n"+work {
		t.Errorf("the merge's parents = %q, want %s and %s", got, mine, work)
	}
	if got := gitT(t, root, "log", "-1", "--format=%an <%ae>|%s"); got != "Test Person <test@example.com>|Merge branch '"+c.branch+"' into main" {
		t.Errorf("merge commit = %q", got)
	}
	for f, want := range map[string]string{"mine.txt": "the person's\n", "theirs.txt": "the session's\n"} {
		if got := readFile(t, filepath.Join(root, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if st := gitT(t, root, "status", "--porcelain"); st != "" {
		t.Errorf("status after the merge = %q, want clean", st)
	}
}

// TestMergeIntoRefuses: each refusal says why and leaves the person's
// repository as it was, byte for byte (files, mtimes, index, HEAD, refs).
func TestMergeIntoRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T, root string, c *vmClone)
		is      error
		message string
	}{
		{"dirty tree", func(t *testing.T, root string, c *vmClone) {
			commitT(t, c.dir, "new.txt", "x\n", "session: new")
			writeFile(t, filepath.Join(root, "README.md"), "# changed\n")
			writeFile(t, filepath.Join(root, "src", "main.go"), "package main // staged\n")
			gitT(t, root, "add", "src/main.go")
			writeFile(t, filepath.Join(root, "dir with space", "ünïcode file.txt"), "changed\n")
		}, ErrDirtyTree, "your working tree has uncommitted changes in 3 files (README.md, dir with space/ünïcode file.txt, src/main.go): commit or stash them first"},
		{"conflict", func(t *testing.T, root string, c *vmClone) {
			commitT(t, root, "README.md", "# mine\n", "person: readme")
			commitT(t, root, "src/main.go", "package main // mine\n", "person: main")
			commitT(t, c.dir, "README.md", "# theirs\n", "session: readme")
			commitT(t, c.dir, "src/main.go", "package main // theirs\n", "session: main")
			commitT(t, c.dir, "other.txt", "fine\n", "session: other")
		}, ErrConflict, "the merge conflicts in README.md, src/main.go: create the branch instead and merge it yourself"},
		{"nothing to merge", func(t *testing.T, root string, c *vmClone) {}, ErrNothingToMerge, "nothing to merge"},
		{"detached", func(t *testing.T, root string, c *vmClone) {
			commitT(t, c.dir, "new.txt", "x\n", "session: new")
			gitT(t, root, "checkout", "-q", "--detach")
		}, ErrNoBranch, "is not on a branch (HEAD is detached)"},
		{"half-done merge", func(t *testing.T, root string, c *vmClone) {
			commitT(t, c.dir, "new.txt", "x\n", "session: new")
			p := gitT(t, root, "rev-parse", "--git-path", "MERGE_HEAD")
			writeFile(t, filepath.Join(root, p), gitT(t, root, "rev-parse", "HEAD")+"\n")
		}, ErrDirtyTree, "is in the middle of a merge: finish or abort it first"},
		{"untracked file in the way", func(t *testing.T, root string, c *vmClone) {
			commitT(t, c.dir, "new.txt", "the session's\n", "session: new")
			writeFile(t, filepath.Join(root, "new.txt"), "the person's own, untracked\n")
		}, nil, "git refused to bring the session's work into main"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t, "")
			cl := sessionT(t, root, "r1")
			c.setup(t, root, cl)
			before := snapshot(t, root)
			_, err := mergeIntoT(t, cl, root)
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.message) {
				t.Errorf("err = %v, want %v saying %q", err, c.is, c.message)
			}
			sameSnapshot(t, before, snapshot(t, root))
		})
	}
}

func TestCommitSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "ac1")
	committed := commitT(t, c.dir, "done.txt", "done\n", "session: done")
	writeFile(t, filepath.Join(c.dir, "left over.txt"), "not committed\n")
	writeFile(t, filepath.Join(c.dir, "README.md"), "# changed, not committed\n")
	info := c.save(t)
	if info.Snapshot == info.Head {
		t.Fatal("the save holds no uncommitted work")
	}

	const msg = "Fix the parser\n\nIt failed on empty input.\n"
	commit, made, err := c.m.CommitSnapshot(ctx, c.id, msg)
	if err != nil || !made {
		t.Fatalf("CommitSnapshot = %s, %v, %v", commit, made, err)
	}
	if got := gitT(t, c.m.Dir, "log", "-1", "--format=%P|%an|%B", commit); got != committed+"|Sandbar|"+strings.TrimSpace(msg) {
		t.Errorf("the commit = %q", got)
	}
	if a, b := gitT(t, c.m.Dir, "rev-parse", commit+"^{tree}"), gitT(t, c.m.Dir, "rev-parse", info.Snapshot+"^{tree}"); a != b {
		t.Errorf("the commit's tree %s is not the snapshot's %s", a, b)
	}
	s, _ := c.m.Saved(ctx, c.id)
	if s.Branch != commit || s.Head != commit || s.Snapshot != commit || s.AutoCommit != commit {
		t.Errorf("Saved = %+v, want every ref at %s", s, commit)
	}
	if unc, _ := c.m.uncommittedSaved(ctx, s); len(unc) != 0 {
		t.Errorf("still uncommitted: %q", unc)
	}
	// Nothing more to commit: nothing made.
	if again, made, err := c.m.CommitSnapshot(ctx, c.id, msg); err != nil || made || again != commit {
		t.Errorf("second CommitSnapshot = %s, %v, %v", again, made, err)
	}

	// The commit merges like any other.
	res, err := MergeInto(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil || res.Commit != commit {
		t.Fatalf("MergeInto = %+v, %v", res, err)
	}
	for f, want := range map[string]string{"left over.txt": "not committed\n", "README.md": "# changed, not committed\n", "done.txt": "done\n"} {
		if got := readFile(t, filepath.Join(root, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}

	// A later save (the session restarted) that is not the commit: the
	// branch is the clone's again, and no longer marked as Sandbar's.
	c.save(t)
	if s, _ := c.m.Saved(ctx, c.id); s.AutoCommit != "" || s.Branch != committed {
		t.Errorf("after a new save: %+v", s)
	}
}
