package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	dir, base := cloneT(t, root, "sandbar/s")

	ch, err := Status(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Porcelain != "" || ch.DiffStat != "" || len(ch.Files) != 0 || ch.Ahead != 0 {
		t.Fatalf("fresh clone: %+v", ch)
	}

	commitT(t, dir, "committed ü.txt", "committed\n", "add a file")
	writeFile(t, filepath.Join(dir, "src", "main.go"), "package main\n\nfunc main() { println() }\n")
	if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "new dir", "ñew.txt"), "new\n")
	writeFile(t, filepath.Join(dir, "tab\tand \"quote\".txt"), "odd name\n")
	writeFile(t, filepath.Join(dir, "staged.txt"), "staged\n")
	writeFile(t, filepath.Join(dir, "ignored.log"), "ignored\n")
	gitT(t, dir, "add", "staged.txt")
	gitT(t, dir, "mv", "dir with space/ünïcode file.txt", "renamed ü.txt")

	ch, err = Status(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "README.md", Status: "deleted"},
		{Path: "committed ü.txt", Status: "added"},
		{Path: "new dir/ñew.txt", Status: "untracked"},
		{Path: "renamed ü.txt", Status: "renamed", From: "dir with space/ünïcode file.txt"},
		{Path: "src/main.go", Status: "modified"},
		{Path: "staged.txt", Status: "added"},
		{Path: "tab\tand \"quote\".txt", Status: "untracked"},
	}
	if !slices.Equal(ch.Files, want) {
		t.Errorf("Files\n got %q\nwant %q", ch.Files, want)
	}
	if ch.Ahead != 1 {
		t.Errorf("Ahead = %d, want 1", ch.Ahead)
	}
	for _, s := range []string{"src/main.go", "committed ü.txt", "README.md", "files changed"} {
		if !strings.Contains(ch.DiffStat, s) {
			t.Errorf("DiffStat lacks %q:\n%s", s, ch.DiffStat)
		}
	}
	// Porcelain reads as git's own text output would.
	if real := gitT(t, dir, "status", "--porcelain=v2", "--untracked-files=all") + "\n"; ch.Porcelain != real {
		t.Errorf("Porcelain\n%s\nwant\n%s", ch.Porcelain, real)
	}
	if strings.Contains(ch.Porcelain, "ignored.log") {
		t.Error("ignored file in Porcelain")
	}

	// "" means HEAD: only what is not committed.
	ch, err = Status(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Ahead != 0 || slices.ContainsFunc(ch.Files, func(f FileChange) bool { return f.Path == "committed ü.txt" }) {
		t.Errorf("Status against HEAD: %+v", ch)
	}
}

func TestStatusErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	dir, _ := cloneT(t, root, "sandbar/s")
	if _, err := Status(ctx, dir, "0123456789abcdef0123456789abcdef01234567"); err == nil || !strings.Contains(err.Error(), "is not a commit in") {
		t.Errorf("unknown base: %v", err)
	}
	if _, err := Status(ctx, t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "is not a git clone") {
		t.Errorf("not a clone: %v", err)
	}
}

func TestParseNameStatus(t *testing.T) {
	t.Parallel()
	got := parseNameStatus("M\x00a b\x00R087\x00old\x00new\x00C100\x00x\x00y\x00D\x00gone\x00A\x00ü\x00T\x00link\x00U\x00both\x00")
	want := []FileChange{
		{Path: "a b", Status: "modified"},
		{Path: "new", Status: "renamed", From: "old"},
		{Path: "y", Status: "added", From: "x"},
		{Path: "gone", Status: "deleted"},
		{Path: "ü", Status: "added"},
		{Path: "link", Status: "modified"},
		{Path: "both", Status: "unmerged"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestUntrustedCloneRunsNothing: the agent controls the clone's
// .git/config and .gitattributes; Sandbar's own git commands on the host
// must not run a filter, hook or fsmonitor it names.
func TestUntrustedCloneRunsNothing(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	gitT(t, dir, "add", ".")
	gitT(t, dir, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "base")
	base := gitT(t, dir, "rev-parse", "HEAD")
	pwned := filepath.Join(t.TempDir(), "pwned")
	os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.txt filter=evil\n*.md filter=evil.two\n"), 0o644)
	gitT(t, dir, "config", "filter.evil.clean", "sh -c 'touch "+pwned+"; cat'")
	gitT(t, dir, "config", "filter.evil.two.process", "sh -c 'touch "+pwned+"'")
	gitT(t, dir, "config", "core.fsmonitor", "sh -c 'touch "+pwned+"'")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("x\n"), 0o644)
	ch, err := Status(context.Background(), dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) == 0 {
		t.Error("no changes seen")
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a command named by the clone's config ran on the host")
	}
}

// TestStatusLeavesIndexAlone: files touched but not changed (stat-dirty)
// are not changes, and reading them never rewrites the clone's index: git
// diff refreshes the index it reads under index.lock, which made an
// agent's commit fail with "index.lock: File exists" while Sandbar read
// the clone.
func TestStatusLeavesIndexAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	dir, base := cloneT(t, root, "sandbar/i")
	index := filepath.Join(dir, ".git", "index")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(index, past, past); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, index)
	later := time.Now().Add(time.Minute)
	for _, f := range []string{"README.md", "src/main.go"} {
		if err := os.Chtimes(filepath.Join(dir, f), later, later); err != nil {
			t.Fatal(err)
		}
	}

	ch, err := Status(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) != 0 || ch.DiffStat != "" || ch.Porcelain != "" {
		t.Errorf("touched, unchanged files reported as changes: %+v", ch)
	}
	fi, err := os.Stat(index)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(past) || readFile(t, index) != before {
		t.Errorf("Status rewrote the clone's index (mtime %s, was %s)", fi.ModTime(), past)
	}
	if _, err := os.Stat(index + ".lock"); err == nil {
		t.Error("Status left index.lock behind")
	}
}
