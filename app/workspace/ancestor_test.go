package workspace

import (
	"context"
	"path/filepath"
	"testing"
)

// TestMirrorIsAncestor: which prepared environment may serve a commit
// (session.chooseEnv) asks the project's repository whether the
// environment's commit is in the commit's history: a side branch's is
// not, nor a commit the repository lacks, nor something that is no
// commit id.
func TestMirrorIsAncestor(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, "")
	first := gitT(t, root, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(root, "a.txt"), "a\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "second")
	second := gitT(t, root, "rev-parse", "HEAD")
	gitT(t, root, "switch", "-q", "-c", "side", first)
	writeFile(t, filepath.Join(root, "b.txt"), "b\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "side")
	side := gitT(t, root, "rev-parse", "HEAD")
	gitT(t, root, "switch", "-q", "main")

	m, err := OpenMirror(ctx, filepath.Join(t.TempDir(), "repo.git"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fetch(ctx, resolveT(t, root), "", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{first, second, true},
		{second, second, true},
		{second, first, false},
		{side, second, false},
		{"0123456789012345678901234567890123456789", second, false},
		{"HEAD", second, false},
		{"--all", second, false},
	} {
		got, err := m.IsAncestor(ctx, tc.a, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("IsAncestor(%.12s, %.12s) = %v, %v; want %v", tc.a, tc.b, got, err, tc.want)
		}
	}
}
