package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/session/sessiontest"
	"sandbar/app/workspace"
)

func TestLineDiffIsAnEditScript(t *testing.T) {
	cases := []struct {
		a, b  string
		edits int
	}{
		{"", "", 0},
		{"a b c", "a b c", 0},
		{"", "a b", 2},
		{"a b", "", 2},
		{"a b c d e", "a x c d e", 2},
		{"a b c a b b a", "c b a b a c", 5}, // Myers's paper
		{"1 2 3 4 5 6 7 8 9", "0 1 2 4 5 6 7 9 10", 4},
	}
	for _, c := range cases {
		a, b := strings.Fields(c.a), strings.Fields(c.b)
		ops := lineDiff(a, b, diffMaxEdits)
		var gotA, gotB []string
		edits := 0
		for _, op := range ops {
			if op.kind != '+' {
				gotA = append(gotA, op.line)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.line)
			}
			if op.kind != ' ' {
				edits++
			}
		}
		if strings.Join(gotA, " ") != c.a || strings.Join(gotB, " ") != c.b {
			t.Errorf("%q → %q: script gives %q → %q", c.a, c.b, gotA, gotB)
		}
		if edits != c.edits {
			t.Errorf("%q → %q: %d edits, want %d", c.a, c.b, edits, c.edits)
		}
	}
	// Past the bound the middle is replaced whole, still a valid script.
	var a, b []string
	for i := 0; i < 300; i++ {
		a = append(a, "a"+string(rune('0'+i%10)))
		b = append(b, "b"+string(rune('0'+i%10)))
	}
	ops := lineDiff(a, b, 10)
	if len(ops) != 600 {
		t.Errorf("bounded diff has %d ops", len(ops))
	}
}

// TestUnifiedDiffMatchesGit compares hunks with git diff --no-index.
func TestUnifiedDiffMatchesGit(t *testing.T) {
	dir := t.TempDir()
	var ten []string
	for i := 1; i <= 20; i++ {
		ten = append(ten, "line "+string(rune('a'+i)))
	}
	base := strings.Join(ten, "\n") + "\n"
	cases := []struct{ name, old, new string }{
		{"one line changed", base, strings.Replace(base, "line k", "line K", 1)},
		{"two hunks", base, strings.Replace(strings.Replace(base, "line c", "line C", 1), "line s", "", 1)},
		{"appended", base, base + "more\n"},
		{"no newline at end", "a\nb\n", "a\nb"},
		{"insert at top", base, "new\n" + base},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			os.WriteFile(a, []byte(c.old), 0o644)
			os.WriteFile(b, []byte(c.new), 0o644)
			out, _ := exec.Command("git", "diff", "--no-index", "--no-color", "--", a, b).Output()
			want := string(out)
			want = want[strings.Index(want, "@@"):]
			got := unifiedDiff(splitLines([]byte(c.old)), splitLines([]byte(c.new)))
			if normalizeHunks(got) != normalizeHunks(want) {
				t.Errorf("diff:\n%s\ngit:\n%s", got, want)
			}
		})
	}
}

// normalizeHunks writes "@@ -1 +1 @@" the way this file does ("-1,1")
// and drops git's function context after the second "@@".
func normalizeHunks(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "@@ ") {
			f := strings.Fields(l)
			for i := 1; i <= 2; i++ {
				if !strings.Contains(f[i], ",") {
					f[i] += ",1"
				}
			}
			l = strings.Join(f[:4], " ")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestFileDiffRunsNothingTheCloneNames: the agent controls the clone's
// .git/config and .gitattributes; showing a diff must not run the filter
// they name (git diff would, on the host).
func TestFileDiffRunsNothingTheCloneNames(t *testing.T) {
	sessiontest.New(t) // git identity in a temp HOME
	ws := t.TempDir()
	sessiontest.Git(t, ws, "init", "-q")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	sessiontest.Git(t, ws, "add", ".")
	sessiontest.Git(t, ws, "commit", "-qm", "base")
	marker := filepath.Join(t.TempDir(), "ran")
	sessiontest.Git(t, ws, "config", "filter.evil.clean", "touch "+marker+"; cat")
	sessiontest.Git(t, ws, "config", "diff.evil.textconv", "touch "+marker+"; cat")
	sessiontest.Git(t, ws, "config", "core.fsmonitor", "touch "+marker)
	os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("* filter=evil diff=evil\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\n"), 0o644)

	d, err := fileDiff(context.Background(), ws, "HEAD", workspace.FileChange{Path: "a.txt", Status: "modified"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "+two") {
		t.Errorf("diff:\n%s", d)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("showing a diff ran a command the clone's config names")
	}
}

func TestFileDiffStaysInTheWorkspace(t *testing.T) {
	sessiontest.New(t)
	ws := t.TempDir()
	sessiontest.Git(t, ws, "init", "-q")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	sessiontest.Git(t, ws, "add", ".")
	sessiontest.Git(t, ws, "commit", "-qm", "base")
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret\n"), 0o600)
	os.Symlink(secret, filepath.Join(ws, "link"))
	os.Symlink(filepath.Dir(secret), filepath.Join(ws, "dir"))

	d, err := fileDiff(context.Background(), ws, "HEAD", workspace.FileChange{Path: "link", Status: "untracked"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d, "host secret") || !strings.Contains(d, "+"+secret) {
		t.Errorf("a link shows as its target, not what it points at:\n%s", d)
	}
	if d, err := fileDiff(context.Background(), ws, "HEAD", workspace.FileChange{Path: "dir/secret", Status: "untracked"}); err == nil {
		t.Errorf("read through a link out of the workspace:\n%s", d)
	}
	d, err = fileDiff(context.Background(), ws, "HEAD", workspace.FileChange{Path: "a.txt", Status: "deleted"})
	if err != nil || !strings.Contains(d, "-one") || !strings.Contains(d, "+++ /dev/null") {
		t.Errorf("deleted file: %v\n%s", err, d)
	}
}
