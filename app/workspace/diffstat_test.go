package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSavedDiffStat sums real commits with real git: text lines added
// and deleted, a binary file (counted as a file, no lines), a rename
// with an edit (one file, its edit's lines), a deletion, and a path with
// a tab and a newline in it.
func TestSavedDiffStat(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, "")
	writeFile(t, filepath.Join(root, "old name.txt"), strings.Repeat("keep this line\n", 20))
	writeFile(t, filepath.Join(root, "gone.txt"), "one\ntwo\nthree\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-qm", "more")
	base := gitT(t, root, "rev-parse", "HEAD")

	writeFile(t, filepath.Join(root, "README.md"), "# hello\n\nmore words\nand more\n") // +3 −0
	if err := os.WriteFile(filepath.Join(root, "logo.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "mv", "old name.txt", "new name.txt")
	writeFile(t, filepath.Join(root, "new name.txt"), strings.Repeat("keep this line\n", 19)+"changed\n") // +1 −1
	gitT(t, root, "rm", "-q", "gone.txt")                                                                 // −3
	writeFile(t, filepath.Join(root, "odd\tname\nhere.txt"), "a\nb\n")                                    // +2
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-qm", "work")
	head := gitT(t, root, "rev-parse", "HEAD")

	m := &Mirror{Dir: root}
	got, err := m.SavedDiffStat(ctx, base, head, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := DiffStat{Files: 5, Added: 6, Deleted: 4, Binary: 1}
	if got != want {
		t.Errorf("SavedDiffStat = %+v, want %+v", got, want)
	}
	if got, err := m.SavedDiffStat(ctx, head, head, 0); err != nil || !got.IsZero() {
		t.Errorf("no change: SavedDiffStat = %+v, %v; want zero", got, err)
	}
	if _, err := m.SavedDiffStat(ctx, base, strings.Repeat("0", 40), 0); err == nil {
		t.Error("a commit the repository lacks gave no error")
	}
}

// TestSavedDiffStatHugeDiff: a diff whose line count takes git seconds
// (a million-line file with every other line changed) is cut at the
// budget, and the files are still counted.
func TestSavedDiffStatHugeDiff(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a million-line file")
	}
	ctx := context.Background()
	root := newRepo(t, "")
	var a, b strings.Builder
	for i := range 1_000_000 {
		fmt.Fprintf(&a, "%d\n", i)
		if i%2 == 1 {
			fmt.Fprintf(&b, "x%d\n", i)
		} else {
			fmt.Fprintf(&b, "%d\n", i)
		}
	}
	writeFile(t, filepath.Join(root, "big.txt"), a.String())
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-qm", "big")
	base := gitT(t, root, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(root, "big.txt"), b.String())
	writeFile(t, filepath.Join(root, "small.txt"), "s\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-qm", "rewrite")
	head := gitT(t, root, "rev-parse", "HEAD")

	m := &Mirror{Dir: root}
	// git needs about a second of CPU for this line count on a fast
	// machine; the budget is a tenth of that.
	got, err := m.SavedDiffStat(ctx, base, head, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if want := (DiffStat{Files: 2, FilesOnly: true}); got != want {
		t.Errorf("SavedDiffStat past its budget = %+v, want %+v", got, want)
	}
	// With time enough, the lines are counted.
	got, err = m.SavedDiffStat(ctx, base, head, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := (DiffStat{Files: 2, Added: 500_001, Deleted: 500_000}); got != want {
		t.Errorf("SavedDiffStat = %+v, want %+v", got, want)
	}
}

func TestParseStatSummary(t *testing.T) {
	for _, c := range []struct {
		in   string
		want DiffStat
		bad  bool
	}{
		{"", DiffStat{}, false},
		{" a.go | 3 ++-\n 1 file changed, 2 insertions(+), 1 deletion(-)\n", DiffStat{Files: 1, Added: 2, Deleted: 1}, false},
		{" 3 files changed, 120 insertions(+)\n", DiffStat{Files: 3, Added: 120}, false},
		{" 2 files changed, 14 deletions(-)", DiffStat{Files: 2, Deleted: 14}, false},
		{" logo.png | Bin 0 -> 10 bytes\n 1 file changed, 0 insertions(+), 0 deletions(-)\n", DiffStat{Files: 1}, false},
		// What an agent could print in a file name is no summary.
		{" 3 files changed, 120 insertions(+) and more\n", DiffStat{}, true},
		{"nonsense", DiffStat{}, true},
	} {
		got, err := ParseStatSummary(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseStatSummary(%q) = %+v, %v; want %+v (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}
