package workspace

import (
	"path/filepath"
	"testing"
)

// TestSaveBeforeTheBranchExists saves a session whose branch the guest
// has not made yet (a save asked for while the agent starts): the work is
// saved on the commit the clone sits on. git rev-parse prints an argument
// it cannot resolve where its id would be, and that once reached the
// host as the branch, which refused the save as a malformed header.
func TestSaveBeforeTheBranchExists(t *testing.T) {
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "early")
	c.branch = "sandbar/not-made-yet"
	writeFile(t, filepath.Join(c.dir, "wip.txt"), "not committed\n")
	info := c.save(t)
	head := gitT(t, c.dir, "rev-parse", "HEAD")
	if info.Branch != head || info.Head != head {
		t.Errorf("saved branch %s and head %s, want both at the clone's HEAD %s", info.Branch, info.Head, head)
	}
	if info.Snapshot == head {
		t.Fatal("the snapshot is HEAD: the uncommitted file was not saved")
	}
	if got := gitT(t, c.m.Dir, "show", info.Snapshot+":wip.txt"); got != "not committed" {
		t.Errorf("the snapshot's wip.txt is %q", got)
	}
}
