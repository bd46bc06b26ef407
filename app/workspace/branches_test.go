package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestListBranches: the local branches of a person's repository, the
// checked-out one named, and nothing the repository configures runs.
func TestListBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	gitT(t, root, "branch", "feature/ünïcode-name")
	gitT(t, root, "branch", "older")
	gitT(t, root, "tag", "v1")
	gitT(t, root, "switch", "-q", "older")
	pwned := filepath.Join(t.TempDir(), "pwned")
	gitT(t, root, "config", "core.fsmonitor", "sh -c 'touch "+pwned+"'")
	gitT(t, root, "config", "core.hooksPath", "hooks")

	b, err := ListBranches(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(b.Names)
	if want := []string{"feature/ünïcode-name", "main", "older"}; !slices.Equal(b.Names, want) || b.Current != "older" {
		t.Errorf("ListBranches = %+v, want %q with older current", b, want)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("the repository's fsmonitor ran")
	}

	gitT(t, root, "switch", "-q", "--detach", "main")
	if b, err := ListBranches(ctx, root); err != nil || b.Current != "" || len(b.Names) != 3 {
		t.Errorf("detached: %+v, %v; want three branches and none current", b, err)
	}
	if _, err := ListBranches(ctx, t.TempDir()); err == nil {
		t.Error("a folder that is no repository listed branches")
	}
}
