package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plainSession is a session's clone without a base disk: a clone of root
// on sandbar/<id>, and Sandbar's repository holding root's history.
func plainSession(t *testing.T, root, id string) *vmClone {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	m, err := OpenMirror(ctx, filepath.Join(data, "projects", "1", "repo.git"))
	if err != nil {
		t.Fatal(err)
	}
	commit, err := m.Fetch(ctx, resolveT(t, root), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(data, "clone")
	gitT(t, root, "clone", "-q", "--no-local", root, dir)
	branch := "sandbar/" + id
	gitT(t, dir, "checkout", "-q", "-b", branch)
	return &vmClone{dir: dir, id: id, branch: branch, base: commit, m: m}
}

func TestExport(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, "")
	c := plainSession(t, root, "exp1")
	odd := "odd \"name\" \\ with\nnewline é.txt"
	commitT(t, c.dir, "src/new.go", "package src\n", "agent work")
	writeFile(t, filepath.Join(c.dir, odd), "odd\n")
	writeFile(t, filepath.Join(c.dir, "-rf"), "dash\n")
	writeFile(t, filepath.Join(c.dir, "untracked.txt"), "not committed\n")
	for name, target := range map[string]string{
		"inside":          "src/main.go",
		"src/up":          "../README.md",
		"abs":             "/etc/passwd",
		"climb":           "../../../../etc/passwd",
		"dot":             ".",
		"through-dot":     "dot/..",
		"loop":            "loop",
		"deep/via-inside": "../inside",
	} {
		p := filepath.Join(c.dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	s1 := c.save(t)
	dest := filepath.Join(t.TempDir(), "sessions", "exp1", "export")
	info, err := c.m.Export(ctx, c.id, dest)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if info.Commit != s1.Snapshot || info.Reused || info.Dir != dest {
		t.Errorf("Export = %+v, want the snapshot %s written to %s", info, s1.Snapshot, dest)
	}
	for name, want := range map[string]string{
		"README.md":     "# hello\n",
		"src/new.go":    "package src\n",
		odd:             "odd\n",
		"-rf":           "dash\n",
		"untracked.txt": "not committed\n",
	} {
		if got := readFile(t, filepath.Join(dest, filepath.FromSlash(name))); got != want {
			t.Errorf("%q holds %q, want %q", name, got, want)
		}
	}
	// Symlinks: those that resolve inside are there, as symlinks; the
	// rest are left out and said so.
	for name, want := range map[string]string{"inside": "src/main.go", "src/up": "../README.md", "dot": ".", "deep/via-inside": "../inside"} {
		if got, err := os.Readlink(filepath.Join(dest, filepath.FromSlash(name))); err != nil || got != want {
			t.Errorf("symlink %s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"abs", "climb", "through-dot", "loop"} {
		if _, err := os.Lstat(filepath.Join(dest, name)); !os.IsNotExist(err) {
			t.Errorf("symlink %s leads out of the export but was written (%v)", name, err)
		}
		found := false
		for _, s := range info.Skipped {
			found = found || strings.HasPrefix(s, `"`+name+`"`)
		}
		if !found {
			t.Errorf("%s is not among the skipped: %q", name, info.Skipped)
		}
	}
	if _, err := os.Lstat(filepath.Join(dest, ".git")); !os.IsNotExist(err) {
		t.Errorf("the export has a .git: %v", err)
	}
	// Read-only: files 0444, folders 0555.
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		switch {
		case d.IsDir() && fi.Mode().Perm() != 0o555:
			t.Errorf("folder %s is %v, want 0555", p, fi.Mode().Perm())
		case fi.Mode().IsRegular() && fi.Mode().Perm() != 0o444:
			t.Errorf("file %s is %v, want 0444", p, fi.Mode().Perm())
		}
		return nil
	})
	if os.Geteuid() != 0 {
		if err := os.WriteFile(filepath.Join(dest, "README.md"), []byte("x"), 0o644); err == nil {
			t.Error("a file of the export could be written")
		}
		if err := os.WriteFile(filepath.Join(dest, "new"), []byte("x"), 0o644); err == nil {
			t.Error("a file could be added to the export")
		}
	}

	// Nothing new: the export is kept.
	again, err := c.m.Export(ctx, c.id, dest)
	if err != nil || !again.Reused {
		t.Errorf("a second Export of the same snapshot = %+v, %v; want it reused", again, err)
	}

	// The session moves on: the export is replaced whole.
	gitT(t, c.dir, "rm", "-q", "src/new.go")
	gitT(t, c.dir, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "drop")
	writeFile(t, filepath.Join(c.dir, "README.md"), "# moved on\n")
	s2 := c.save(t)
	next, err := c.m.Export(ctx, c.id, dest)
	if err != nil || next.Reused || next.Commit != s2.Snapshot {
		t.Fatalf("Export after the session moved on = %+v, %v; want a new export of %s", next, err, s2.Snapshot)
	}
	if got := readFile(t, filepath.Join(dest, "README.md")); got != "# moved on\n" {
		t.Errorf("README.md in the new export: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dest, "src", "new.go")); !os.IsNotExist(err) {
		t.Errorf("a file deleted in the session is still in the export: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".export-*"))
	if len(left) > 0 {
		t.Errorf("temporary folders left beside the export: %q", left)
	}

	if err := RemoveExport(dest); err != nil {
		t.Fatalf("RemoveExport: %v", err)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Errorf("the export is still there after RemoveExport: %v", err)
	}
}

func TestExportRefuses(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, "")
	c := plainSession(t, root, "exp2")
	dest := filepath.Join(t.TempDir(), "export")
	if _, err := c.m.Export(ctx, c.id, dest); err == nil || !strings.Contains(err.Error(), "no saved work") {
		t.Errorf("Export before any save: %v; want it to say there is no saved work", err)
	}
	if _, err := c.m.Export(ctx, "../x", dest); err == nil {
		t.Error("Export took a session id with a path in it")
	}
}

func TestExportTreeJudges(t *testing.T) {
	links := map[string]string{"s": ".", "a/l": "../b", "b": "c/d", "up": "..", "x/y": "../../z", "S": "a/b/c"}
	for _, tt := range []struct {
		name, target string
		want         bool
	}{
		{"f", "a/b", true},
		{"a/f", "../b", true},
		{"a/f", "../../b", false},
		{"f", "/etc", false},
		{"f", "s/..", false}, // s is the root: .. leaves it
		{"f", "b/..", true},  // b leads to c/d: .. is c
		{"f", "b/../../..", false},
		{"f", "a/l/../..", true},  // a/l -> b -> c/d; up twice: the root
		{"f", "up", true},         // up leads out, so is not written: f finds nothing
		{"f", "S/../../..", true}, // S is not s here: a/b/c, then up three times
		{"f", "x/y", true},        // likewise
		{"f", "up/../..", false},
		{"f", "missing/../..", false}, // fails on the host, and a tidied path leaves
		{"f", "f", false},             // a loop
	} {
		tree := newExportTree(newExportNames(false))
		for k, v := range links {
			tree.add(k, v)
		}
		if got := tree.inside(tree.add(tt.name, tt.target)); got != tt.want {
			t.Errorf("%q -> %q: inside = %v, want %v", tt.name, tt.target, got, tt.want)
		}
	}
}
