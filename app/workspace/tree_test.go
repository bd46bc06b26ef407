package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// treeBomb writes into repo a commit on parent whose tree holds
// 200 × 200 × 200 files (8 million) in a few KiB of objects: each level
// reuses one subtree 200 times.
func treeBomb(t *testing.T, repo, parent string) string {
	t.Helper()
	cmd := exec.Command("git", "-C", repo, "hash-object", "-w", "--stdin")
	cmd.Env, cmd.Stdin = gitEnv(), strings.NewReader("boom\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	obj, mode, kind := strings.TrimSpace(string(out)), "100644", "blob"
	for range 3 {
		var b strings.Builder
		for i := range 200 {
			fmt.Fprintf(&b, "%s %s %s\tentry-with-a-longish-name-%03d\n", mode, kind, obj, i)
		}
		cmd := exec.Command("git", "-C", repo, "mktree")
		cmd.Env, cmd.Stdin = gitEnv(), strings.NewReader(b.String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		obj, mode, kind = strings.TrimSpace(string(out)), "040000", "tree"
	}
	return gitT(t, repo, "-c", "user.name=A", "-c", "user.email=a@b", "commit-tree", "-p", parent, "-m", "bomb", obj)
}

// TestTreeBomb: a saved snapshot whose tree lists as 8 million files (a
// few KiB in a pack, some 600 MB as `ls-tree -r` prints it): status,
// uncommitted files and export refuse it with a message that says what to
// do, reading little of it, and a diff of one file still works. Not
// parallel: it measures what the process allocates.
func TestTreeBomb(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "tree")
	bomb := treeBomb(t, c.m.Dir, c.base)
	gitT(t, c.m.Dir, "update-ref", sessionRef(c.id, "branch"), c.base)
	gitT(t, c.m.Dir, "update-ref", sessionRef(c.id, "head"), c.base)
	gitT(t, c.m.Dir, "update-ref", sessionRef(c.id, "snapshot"), bomb)

	measure := func(name string, f func() error) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := f()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooManyFiles) || !strings.Contains(err.Error(), "sandbar shell") {
			t.Errorf("%s: err = %v, want ErrTooManyFiles saying what to do", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
			t.Errorf("%s allocated %d MiB", name, got>>20)
		}
	}
	measure("status", func() error { _, err := c.m.SavedStatus(ctx, c.id, c.base); return err })
	measure("uncommitted", func() error {
		s, _ := c.m.Saved(ctx, c.id)
		_, err := c.m.uncommittedSaved(ctx, s)
		return err
	})
	measure("export", func() error {
		_, err := c.m.Export(ctx, c.id, filepath.Join(t.TempDir(), "export"))
		return err
	})
	if d, err := c.m.SavedDiff(ctx, c.id, c.base, "README.md", 1<<20); err != nil || !strings.Contains(d, "-") {
		t.Errorf("diff of one file = %q, %v", d, err)
	}
}

// TestGitOutputBounded: a git command that prints past its bound is
// killed, its error wraps ErrOutputTooLarge, and a diff past its max
// comes back cut.
func TestGitOutputBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "out")
	bomb := treeBomb(t, c.m.Dir, c.base)
	out, err := gitMax(ctx, c.m.Dir, nil, nil, 1<<20, "ls-tree", "-r", bomb)
	if !errors.Is(err, ErrOutputTooLarge) || !strings.Contains(err.Error(), "more than 1 MiB") || len(out) != 1<<20 {
		t.Errorf("ls-tree -r of 8 million files: %d bytes, err = %v", len(out), err)
	}
	if _, err := c.m.listTree(ctx, bomb, 1000); !errors.Is(err, ErrTooManyFiles) {
		t.Errorf("listTree past its bound: err = %v", err)
	}
	es, err := c.m.listTree(ctx, c.base, 1000)
	if err != nil || len(es) == 0 {
		t.Errorf("listTree of the base = %d entries, %v", len(es), err)
	}

	writeFile(t, filepath.Join(c.dir, "long.txt"), strings.Repeat("a line of text\n", 1<<16))
	c.save(t)
	d, err := c.m.SavedDiff(ctx, c.id, c.base, "long.txt", 4096)
	if err != nil || len(d) > 4096+len("…") || !strings.Contains(d, "+a line of text") {
		t.Errorf("a diff past its max: %d bytes, %v", len(d), err)
	}
}
