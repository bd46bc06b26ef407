package workspace

import (
	"context"
	"errors"
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
	c := sessionT(t, root, "s")
	dir, base := c.dir, c.base

	ch, err := Status(ctx, c.guest, base)
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

	ch, err = Status(ctx, c.guest, base)
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
	ch, err = Status(ctx, c.guest, "")
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
	c := sessionT(t, root, "s")
	if _, err := Status(ctx, c.guest, "0123456789abcdef0123456789abcdef01234567"); err == nil || !strings.Contains(err.Error(), "is not a commit in the session's clone") {
		t.Errorf("unknown base: %v", err)
	}
	other := &vmClone{dir: t.TempDir()}
	if _, err := Status(ctx, other.guest, ""); err == nil {
		t.Errorf("not a clone: no error")
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

// TestHostileSaveRunsNothing: the agent controls its clone's .git/config
// and the attributes in its commits; what comes back is data, and
// Sandbar's git on the host (import, status, diff, merge, removal check)
// runs no filter, textconv, diff driver or hook that the agent names.
func TestHostileSaveRunsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "evil")
	pwned := filepath.Join(t.TempDir(), "pwned")
	evil := "sh -c 'touch " + pwned + "; cat'"
	writeFile(t, filepath.Join(c.dir, ".gitattributes"), "* filter=x=y diff=evil\n*.md filter=evil\n")
	for _, kv := range [][2]string{
		{"filter.x=y.clean", evil}, {"filter.x=y.smudge", evil}, {"filter.evil.process", evil},
		{"diff.evil.textconv", evil}, {"diff.evil.command", evil}, {"core.fsmonitor", evil},
		{"log.showSignature", "true"}, {"gpg.program", evil}, {"core.hooksPath", "hooks"},
	} {
		gitT(t, c.dir, "config", kv[0], kv[1])
	}
	commitT(t, c.dir, "a.md", "one\n", "evil attributes")
	writeFile(t, filepath.Join(c.dir, "README.md"), "changed, not committed\n")
	c.save(t)
	if _, err := os.Stat(pwned); err == nil {
		os.Remove(pwned) // the agent's own git ran its own filter, in its VM: allowed
	}

	src := resolveT(t, root)
	before := snapshot(t, root, "refs/heads/"+c.branch)
	ch, err := c.m.SavedStatus(ctx, c.id, c.base)
	if err != nil || len(ch.Files) == 0 || ch.Ahead != 1 {
		t.Fatalf("SavedStatus = %+v, %v", ch, err)
	}
	if d, err := c.m.SavedDiff(ctx, c.id, c.base, "a.md", 1<<20); err != nil || !strings.Contains(d, "+one") {
		t.Errorf("SavedDiff = %q, %v", d, err)
	}
	if err := CheckRemovable(ctx, src, c.m, c.id, c.base); err == nil {
		t.Error("CheckRemovable: unmerged work not seen")
	}
	if _, err := Merge(ctx, src, c.m, c.id, c.branch, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a command the agent named ran on the host")
	}
	sameSnapshot(t, before, snapshot(t, root, "refs/heads/"+c.branch))
	if out := gitT(t, root, "fsck", "--full", "--no-progress"); strings.Contains(out, "error") {
		t.Errorf("git fsck in the source: %s", out)
	}
}

// TestImportSaveRefusesBadInput: what the VM sends back is hostile.
func TestImportSaveRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "bad")
	zero := strings.Repeat("0", 40)
	hdr := "sandbar-save 2 " + c.base + " " + c.base + " " + c.base + "\n"
	for _, tc := range []struct{ name, in, want string }{
		{"nothing", "", "sent nothing back"},
		{"no header", "PACK garbage", "malformed header"},
		{"bad ids", "sandbar-save 2 a b c\n", "malformed header"},
		{"old version", "sandbar-save 1 " + c.base + " " + c.base + " " + c.base + "\n", "malformed header"},
		{"huge header", strings.Repeat("x", 100_000), "malformed header"},
		{"no pack line", hdr, "malformed section line"},
		{"garbage pack", hdr + "pack\nPACK\x00\x00\x00\x02garbage", "did not pass git's checks"},
		{"unknown commit", "sandbar-save 2 " + zero + " " + c.base + " " + c.base + "\npack\n", "did not pass git's checks"},
		{"unknown section", hdr + "modules x\n", "malformed section line"},
		{"huge section line", hdr + "module " + strings.Repeat("x", 100_000), "malformed section line"},
		{"module path escapes", hdr + "module " + c.base + " 10 ../../etc\n", "bad path"},
		{"module path absolute", hdr + "module " + c.base + " 10 /etc\n", "bad path"},
		{"module path .git", hdr + "module " + c.base + " 10 a/.GIT/x\n", "bad path"},
		{"module path control", hdr + "module " + c.base + " 10 a\rb\n", "bad path"},
		{"module size", hdr + "module " + c.base + " -5 a\n", "bad size"},
		{"module size huge", hdr + "module " + c.base + " 99999999999 a\n", "bad size"},
		{"module no commit", hdr + "module xyz 10 a\n", "names no commit"},
		{"module claims more", hdr + "module " + c.base + " 500 a\nPACK\x00\x00\x00\x02", "ended inside the pack of submodule"},
		{"module garbage", hdr + "module " + c.base + " 12 a\nPACK\x00\x00\x00\x02abcd" + "pack\n", "did not pass git's checks"},
	} {
		_, err := c.m.ImportSave(ctx, strings.NewReader(tc.in), c.id, 1<<20)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, ok := c.m.Saved(ctx, c.id); ok {
		t.Error("a refused save moved the session's refs")
	}
	if _, err := c.m.ImportSave(ctx, strings.NewReader(""), "../x", 1<<20); err == nil {
		t.Error("a bad session id was accepted")
	}
	// A save bigger than the limit is refused, and says so.
	writeFile(t, filepath.Join(c.dir, "big.bin"), strings.Repeat("random-ish ", 1<<16)+zero)
	if _, err := c.trySave(1 << 10); !errors.Is(err, ErrSaveTooLarge) {
		t.Errorf("too large: err = %v", err)
	}
	info := c.save(t)
	if info.Snapshot == info.Head || info.Branch != c.base {
		t.Errorf("save = %+v, want a snapshot on the base", info)
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
	c := sessionT(t, root, "i")
	dir, base := c.dir, c.base
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

	ch, err := Status(ctx, c.guest, base)
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

// FuzzGuestGitOutput: what git prints inside the VM is the agent's to
// choose (it is root there and may replace git); parsing it never panics.
func FuzzGuestGitOutput(f *testing.F) {
	for _, seed := range []string{"", "?\x00", "!\x00", "1\x00", "2 R. N...\x00", "u\x00", "? a\x00", "R087\x00old\x00", "M\x00", "C\x00x\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, z string) {
		parsePorcelain(z)
		parseNameStatus(z)
	})
}
