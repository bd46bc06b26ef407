package workspace

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRefusedSaveLeavesNoPack: a save whose pack git accepts but that a
// later check refuses (it names a commit it did not send, or its
// submodule section is bad) leaves nothing in the mirror's object store.
func TestRefusedSaveLeavesNoPack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "q")
	commit := commitT(t, c.dir, "new.txt", "the agent's\n", "agent")
	cmd := exec.Command("git", "-C", c.dir, "pack-objects", "--revs", "--stdout", "-q")
	cmd.Env, cmd.Stdin = gitEnv(), strings.NewReader(commit+"\n^"+c.base+"\n")
	pack, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	before := c.m.packFiles()
	missing := strings.Repeat("ab", 20)
	for _, tc := range []struct{ name, in, want string }{
		{"unsent commit", "sandbar-save 2 " + missing + " " + commit + " " + commit + "\npack\n" + string(pack), "did not send"},
		{"module then bad line", "sandbar-save 2 " + commit + " " + commit + " " + commit + "\nmodule " + commit + " " + strconv.Itoa(len(pack)) + " lib\n" + string(pack) + "oops\n", "malformed section line"},
	} {
		_, err := c.m.ImportSave(ctx, strings.NewReader(tc.in), c.id, 1<<20)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if after := c.m.packFiles(); !slices.Equal(before, after) {
			t.Errorf("%s: objects/pack was %q, is %q", tc.name, before, after)
		}
		if m, _ := filepath.Glob(filepath.Join(c.m.Dir, "objects", "incoming-*")); len(m) > 0 {
			t.Errorf("%s: quarantine left: %q", tc.name, m)
		}
		if c.m.hasCommit(ctx, commit) {
			t.Errorf("%s: the refused commit is in the mirror", tc.name)
		}
	}
	// The same pack, well framed, is taken in.
	info := c.save(t)
	if info.Branch != commit || !c.m.hasCommit(ctx, commit) || len(c.m.packFiles()) != len(before)+2 {
		t.Errorf("a good save: %+v; objects/pack %q", info, c.m.packFiles())
	}
}

// TestPacksConsolidated: every save adds a pack; past maxPacks the mirror
// repacks them, and the saved work stays whole.
func TestPacksConsolidated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "gc")
	most := 0
	var last SaveInfo
	for i := range maxPacks + 5 {
		commitT(t, c.dir, "f.txt", strings.Repeat("x", i+1), "more")
		last = c.save(t)
		most = max(most, countPacks(c.m))
	}
	if most > maxPacks+1 {
		t.Errorf("the mirror held %d packs", most)
	}
	if n := countPacks(c.m); n > maxPacks/2 {
		t.Errorf("after %d saves, %d packs", maxPacks+5, n)
	}
	if s, ok := c.m.Saved(ctx, c.id); !ok || s.Branch != last.Branch {
		t.Errorf("saved = %+v, want %s", s, last.Branch)
	}
	gitT(t, c.m.Dir, "fsck", "--no-progress", "--connectivity-only")
	if err := c.m.Forget(ctx, c.id); err != nil {
		t.Fatal(err)
	}
}

func countPacks(m *Mirror) int {
	n := 0
	for _, f := range m.packFiles() {
		if strings.HasSuffix(f, ".pack") {
			n++
		}
	}
	return n
}
