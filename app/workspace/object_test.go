package workspace

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestObjectAt(t *testing.T) {
	root := newRepo(t, "")
	ctx := context.Background()
	m, err := OpenMirror(ctx, filepath.Join(t.TempDir(), "repo.git"))
	if err != nil {
		t.Fatal(err)
	}
	commit, err := m.Fetch(ctx, resolveT(t, root), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := m.ObjectAt(ctx, commit, "src/main.go", 1<<10)
	if err != nil || o.Type != "blob" || string(o.Data) != "package main\n\nfunc main() {}\n" || len(o.ID) != 40 {
		t.Errorf("a file: %+v, %v", o, err)
	}
	if o, err := m.ObjectAt(ctx, commit, "src/main.go", 0); err != nil || o.Data != nil {
		t.Errorf("a file, no content asked: %+v, %v", o, err)
	}
	want := strings.TrimSpace(gitT(t, root, "rev-parse", "HEAD:dir with space"))
	if o, err := m.ObjectAt(ctx, commit, "dir with space/", 0); err != nil || o.Type != "tree" || o.ID != want {
		t.Errorf("a folder: %+v, %v, want %s", o, err, want)
	}
	rootTree := strings.TrimSpace(gitT(t, root, "rev-parse", "HEAD^{tree}"))
	for _, p := range []string{"", ".", "/"} {
		if o, err := m.ObjectAt(ctx, commit, p, 0); err != nil || o.ID != rootTree {
			t.Errorf("the root as %q: %+v, %v", p, o, err)
		}
	}
	if _, err := m.ObjectAt(ctx, commit, "README.md", 3); err == nil || !strings.Contains(err.Error(), "over the 3") {
		t.Errorf("a file over the limit: %v", err)
	}
	if _, err := m.ObjectAt(ctx, commit, "no/such", 10); err == nil || !strings.Contains(err.Error(), "has no no/such") {
		t.Errorf("a missing path: %v", err)
	}
	if _, err := m.ObjectAt(ctx, commit, "a\nb", 10); err == nil {
		t.Error("a path with a newline was looked up")
	}
}
