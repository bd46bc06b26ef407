package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stashList is `git stash list` of root as one commit per line.
func stashList(t *testing.T, root string) string {
	t.Helper()
	return gitT(t, root, "stash", "list", "--format=%H")
}

// TestMergeIntoStashing: a merge into a tree with changes the session's
// work does not touch is refused, offering the stash; with it, the
// changes are stashed, the work merged, and the changes put back as they
// were (staged ones staged), the person's own stash entries untouched.
func TestMergeIntoStashing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "st1")
	// An entry of the person's own, already in the stash list.
	writeFile(t, filepath.Join(root, "README.md"), "# older stash\n")
	gitT(t, root, "stash", "push", "-q", "-m", "mine")
	theirs := stashList(t, root)
	work := commitT(t, c.dir, "feature.txt", "session work\n", "session: a feature")
	writeFile(t, filepath.Join(root, "README.md"), "# my edit, not staged\n")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main // staged\n")
	gitT(t, root, "add", "src/main.go")
	writeFile(t, filepath.Join(root, "notes.txt"), "untracked\n")

	before := snapshot(t, root)
	_, err := mergeIntoT(t, c, root)
	if !errors.Is(err, ErrDirtyTree) || !errors.Is(err, ErrStashable) || !strings.Contains(err.Error(), "sandbar merge --into --stash st1") || !strings.Contains(err.Error(), "README.md, src/main.go") {
		t.Fatalf("MergeInto a dirty tree = %v, want ErrDirtyTree and ErrStashable naming the files and --stash", err)
	}
	sameSnapshot(t, before, snapshot(t, root))

	res, err := MergeIntoStashing(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Updated || res.Commit != work || res.StashKept != "" || strings.Join(res.Stashed, ",") != "README.md,src/main.go" {
		t.Errorf("MergeIntoStashing = %+v, want main at %s with README.md, src/main.go put back", res, work)
	}
	if got := gitT(t, root, "rev-parse", "HEAD"); got != work {
		t.Errorf("HEAD = %s, want %s", got, work)
	}
	for f, want := range map[string]string{"README.md": "# my edit, not staged\n", "src/main.go": "package main // staged\n", "notes.txt": "untracked\n", "feature.txt": "session work\n"} {
		if got := readFile(t, filepath.Join(root, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if st := gitT(t, root, "status", "--porcelain"); st != " M README.md\nM  src/main.go\n?? notes.txt" {
		t.Errorf("status after = %q, want README.md changed, src/main.go staged, notes.txt untracked", st)
	}
	if got := stashList(t, root); got != theirs {
		t.Errorf("stash list = %q, want only the person's own %q", got, theirs)
	}
}

// TestMergeIntoStashingOverlap: changes in a file the session's work
// also changes are refused, naming it, without the stash offer, and
// nothing is stashed or changed.
func TestMergeIntoStashingOverlap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "st2")
	commitT(t, c.dir, "src/main.go", "package main // theirs\n", "session: main")
	commitT(t, c.dir, "other.txt", "fine\n", "session: other")
	c.save(t)
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main // mine\n")
	writeFile(t, filepath.Join(root, "README.md"), "# mine too\n")
	before := snapshot(t, root)
	_, err := MergeIntoStashing(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if !errors.Is(err, ErrDirtyTree) || errors.Is(err, ErrStashable) || !strings.Contains(err.Error(), "the session's work changes src/main.go too, so Sandbar will not stash them for you") {
		t.Fatalf("MergeIntoStashing with an overlap = %v, want ErrDirtyTree naming src/main.go", err)
	}
	sameSnapshot(t, before, snapshot(t, root))
	if got := stashList(t, root); got != "" {
		t.Errorf("stash list = %q, want empty", got)
	}
}

// TestMergeIntoStashingFailedCheckout: when git refuses the checkout
// after the stash (an untracked file of the person's where the work adds
// one), the tree is as it was and the changes are back.
func TestMergeIntoStashingFailedCheckout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "st3")
	commitT(t, c.dir, "new.txt", "the session's\n", "session: new")
	c.save(t)
	writeFile(t, filepath.Join(root, "new.txt"), "the person's own, untracked\n")
	writeFile(t, filepath.Join(root, "README.md"), "# mine\n")
	head := gitT(t, root, "rev-parse", "HEAD")
	_, err := MergeIntoStashing(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err == nil || !strings.Contains(err.Error(), "git refused to bring the session's work into main") {
		t.Fatalf("err = %v, want git's refusal", err)
	}
	if got := gitT(t, root, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	if readFile(t, filepath.Join(root, "README.md")) != "# mine\n" || readFile(t, filepath.Join(root, "new.txt")) != "the person's own, untracked\n" {
		t.Error("the person's files were not put back")
	}
	if got := stashList(t, root); got != "" {
		t.Errorf("stash list = %q, want empty", got)
	}
}

// TestStashPopConflictKeepsStash: changes that can no longer go back
// cleanly (the same file changed under them) are not applied; the stash
// stays, and the message says how to get them back.
func TestStashPopConflictKeepsStash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	base := gitT(t, root, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(root, "README.md"), "# my edit\n")
	neutral, err := neutralArgs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stashPush(ctx, root, neutral, []string{"README.md"}, "st4abcdef", base)
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(root, "README.md")) == "# my edit\n" {
		t.Fatal("the change was not stashed")
	}
	commitT(t, root, "README.md", "# changed meanwhile\n", "person: readme")
	kept := st.pop(ctx)
	for _, want := range []string{"were not put back (they would conflict with what is now in README.md)", "git stash apply " + short(st.commit), "sandbar: your uncommitted changes, stashed to merge session st4abc", "git stash list"} {
		if !strings.Contains(kept, want) {
			t.Errorf("pop = %q, want it to say %q", kept, want)
		}
	}
	if got := stashList(t, root); got != st.commit {
		t.Errorf("stash list = %q, want the stash %s kept", got, st.commit)
	}
	if got := readFile(t, filepath.Join(root, "README.md")); got != "# changed meanwhile\n" {
		t.Errorf("README.md = %q: the stash was applied over the newer commit", got)
	}
	if got := gitT(t, root, "show", st.commit+":README.md"); got != "# my edit" {
		t.Errorf("the stash holds %q", got)
	}

	// The result carries it too, for the caller to show.
	res, err := st.restore(ctx, MergeResult{Updated: true}, nil)
	if err != nil || res.StashKept == "" || res.Stashed != nil {
		t.Errorf("restore = %+v, %v, want StashKept", res, err)
	}
	_, err = st.restore(ctx, MergeResult{}, ErrConflict)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "git stash apply") {
		t.Errorf("restore after a failed merge = %v, want the failure and the stash", err)
	}
}

// TestMergeIntoStashingFiltersOff: the stash and its unstash run with
// every filter driver blank, as the checkout does: a .gitattributes the
// session brings (accepted) naming a driver the person's config defines
// runs nothing when the person's changes go back.
func TestMergeIntoStashingFiltersOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	marker := filepath.Join(t.TempDir(), "ran")
	gitT(t, root, "config", "filter.evil.smudge", "touch "+marker+"; cat")
	gitT(t, root, "config", "filter.evil.clean", "touch "+marker+"; cat")
	c := sessionT(t, root, "st5")
	commitT(t, c.dir, ".gitattributes", "* filter=evil\n", "session: attributes")
	c.save(t)
	writeFile(t, filepath.Join(root, "README.md"), "# mine\n")
	res, err := MergeIntoStashing(ctx, resolveT(t, root), c.m, c.id, c.branch, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stashed) != 1 || readFile(t, filepath.Join(root, "README.md")) != "# mine\n" {
		t.Errorf("res = %+v, README.md = %q", res, readFile(t, filepath.Join(root, "README.md")))
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Error("the filter driver ran during the stash, merge or unstash")
	}
}
