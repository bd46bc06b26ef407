package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestIncludePatterns(t *testing.T) {
	t.Parallel()
	ps := parseInclude(`# comment
.env
/root.only
config/*.local
secrets/
!secrets/keep.out
docs/**/*.pdf
\#literal
data/
`)
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".env", true},
		{"a/b/.env", true},
		{".envrc", false},
		{"root.only", true},
		{"sub/root.only", false},
		{"config/app.local", true},
		{"config/deep/app.local", false},
		{"x/config/app.local", false},
		{"secrets/a", true},
		{"secrets/deep/b c", true},
		{"x/secrets/a", true}, // no slash but the trailing one: any depth
		{"secrets", false},    // a file named like the folder pattern
		{"secrets/keep.out", false},
		{"docs/a.pdf", true},
		{"docs/x/y/a.pdf", true},
		{"docs/a.txt", false},
		{"#literal", true},
		{"comment", false},
		{"data/ü ñ.bin", true},
	} {
		if got := includes(ps, tc.path); got != tc.want {
			t.Errorf("includes(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	for _, tc := range []struct {
		dir  string
		want bool
	}{
		{"config", true},
		{"other", true}, // .env may be anywhere
		{"node_modules", false},
		{"a/node_modules", false},
		{"secrets", true},
	} {
		if got := mayInclude(ps, tc.dir); got != tc.want {
			t.Errorf("mayInclude(%q) = %v, want %v", tc.dir, got, tc.want)
		}
	}
	anchored := parseInclude("config/*.local\nnode_modules/.cache/x\n")
	for _, tc := range []struct {
		dir  string
		want bool
	}{
		{"config", true},
		{"other", false},
		{"config/deep", false},
		{"node_modules", true}, // named explicitly
	} {
		if got := mayInclude(anchored, tc.dir); got != tc.want {
			t.Errorf("anchored: mayInclude(%q) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

func TestEscapeIgnore(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a b/ü.txt":     "a b/ü.txt",
		"we*ird?[1].md": `we\*ird\?\[1\].md`,
		`back\slash`:    `back\\slash`,
		"trailing  ":    `trailing\ \ `,
		"#hash/!bang":   "#hash/!bang",
	} {
		if got := escapeIgnore(in); got != want {
			t.Errorf("escapeIgnore(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIncludeListsBounded: the include lists come with the repository,
// maybe from a hostile upstream. A list that is a link to /dev/zero or a
// FIFO is not read (it would never end, or block), and a FIFO matching a
// pattern is never read; nothing blocks.
func TestIncludeListsBounded(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	if err := os.Symlink("/dev/zero", filepath.Join(root, ".sandbarinclude")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, ".worktreeinclude"), 0o644); err != nil {
		t.Fatal(err)
	}
	lists := func() RepoSettings {
		t.Helper()
		all, err := ReadRepoSettings(root)
		if err != nil {
			t.Fatal(err)
		}
		return all[1]
	}
	done := make(chan error, 1)
	go func() {
		inc := lists()
		if len(inc.Files) != 2 || inc.Files[0].Problem == "" || inc.Files[1].Problem == "" {
			done <- fmt.Errorf("hostile lists read as %+v", inc.Files)
			return
		}
		s, err := readIncluded(context.Background(), root, inc.IncludeText())
		if err == nil && len(s.files) != 0 {
			err = fmt.Errorf("read %d files from hostile lists", len(s.files))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reading the include lists blocked")
	}

	// A real list selecting a FIFO and a regular file.
	os.Remove(filepath.Join(root, ".sandbarinclude"))
	os.Remove(filepath.Join(root, ".worktreeinclude"))
	writeFile(t, filepath.Join(root, ".gitignore"), "*.secret\n")
	writeFile(t, filepath.Join(root, ".sandbarinclude"), "*.secret\n")
	writeFile(t, filepath.Join(root, "a.secret"), "key\n")
	if err := syscall.Mkfifo(filepath.Join(root, "b.secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readIncluded(context.Background(), root, lists().IncludeText())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.files) != 1 || s.files[0].rel != "a.secret" || string(s.files[0].data) != "key\n" {
		t.Errorf("files %+v", s.files)
	}
	for _, sk := range s.skipped {
		if !strings.Contains(sk, "b.secret") {
			t.Errorf("skipped %q", sk)
		}
	}
	// Without lists (none trusted), nothing is included.
	if s, err := readIncluded(context.Background(), root, nil); err != nil || len(s.files) != 0 {
		t.Errorf("no lists: %+v, %v", s.files, err)
	}
}
