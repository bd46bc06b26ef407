package workspace

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runSync runs a sync script in the clone as the VM would, with stdin,
// and returns its stdout and exit status.
func (c *vmClone) runSync(t *testing.T, script string, stdin []byte, args ...string) ([]byte, int, string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script, "sandbar-sync"}, args...)...)
	cmd.Dir, cmd.Env = c.dir, append(gitEnv(), "GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com")
	cmd.Stdin = bytes.NewReader(stdin)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out, code, errb.String()
}

// syncT brings the person's branch into the clone as SyncRef, as
// session.Manager.Sync does, and returns the commit and the counts.
func (c *vmClone) syncT(t *testing.T, root, branch string) (string, int, int) {
	t.Helper()
	ctx := context.Background()
	commit, err := c.m.Fetch(ctx, resolveT(t, root), "refs/heads/"+branch, nil)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	var bundle bytes.Buffer
	src, write, err := c.m.SyncBundle(ctx, c.id, commit, c.base)
	if err != nil {
		t.Fatalf("SyncBundle: %v", err)
	}
	if (src == "") != (write == nil) {
		t.Fatalf("SyncBundle: ref %q with write %v", src, write != nil)
	}
	if write != nil {
		if err := write(&bundle); err != nil {
			t.Fatalf("write the bundle: %v", err)
		}
	}
	out, code, errs := c.runSync(t, SyncFetchScript, bundle.Bytes(), SyncRef(branch), commit, src)
	if code != 0 {
		t.Fatalf("SyncFetchScript exited %d: %s", code, errs)
	}
	ahead, behind, err := ParseAheadBehind(out)
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if refs := gitT(t, c.m.Dir, "for-each-ref", "refs/sandbar/sessions/"+c.id+"/sync"); refs != "" {
		t.Errorf("the bundle's ref stayed in Sandbar's repository: %s", refs)
	}
	return commit, ahead, behind
}

// TestSyncIntoClone: the person's newer main reaches the clone as
// origin/main through a bundle needing only the base; a merge there
// makes a merge commit; a conflicting change stops the next merge with
// the file named; and a branch the clone has already is set without a
// bundle.
func TestSyncIntoClone(t *testing.T) {
	root := newRepo(t, "")
	c := sessionT(t, root, "sync1")

	// Nothing new: main is the base.
	commit, ahead, behind := c.syncT(t, root, "main")
	if commit != c.base || ahead != 0 || behind != 0 {
		t.Errorf("sync at the base: %s %d/%d, want %s 0/0", commit, ahead, behind, c.base)
	}

	commitT(t, c.dir, "README.md", "# agent\n", "agent's readme")
	mine := commitT(t, root, "person.txt", "person\n", "person's file")
	commit, ahead, behind = c.syncT(t, root, "main")
	if commit != mine || ahead != 1 || behind != 1 {
		t.Errorf("sync: %s %d/%d, want %s 1/1", commit, ahead, behind, mine)
	}
	if got := gitT(t, c.dir, "rev-parse", "origin/main"); got != mine {
		t.Errorf("origin/main in the clone = %s, want %s", got, mine)
	}
	if br := gitT(t, c.dir, "branch", "-a"); !strings.Contains(br, "remotes/origin/main") {
		t.Errorf("git branch -a in the clone:\n%s", br)
	}
	out, code, errs := c.runSync(t, SyncScript, nil, "merge", SyncRef("main"))
	st, err := ParseSyncState(out)
	if code != 0 || err != nil || st.Op != "" || len(st.Conflicts) != 0 {
		t.Fatalf("merge: exit %d, %+v, %v: %s", code, st, err, errs)
	}
	if parents := gitT(t, c.dir, "log", "-1", "--format=%P"); parents != gitT(t, c.dir, "rev-parse", "HEAD^1")+" "+mine {
		t.Errorf("HEAD's parents %q, want the agent's commit and %s", parents, mine)
	}
	if st.Head != gitT(t, c.dir, "rev-parse", "HEAD") {
		t.Errorf("reported HEAD %s", st.Head)
	}

	commitT(t, c.dir, "README.md", "# agent again\n", "agent's readme again")
	commitT(t, root, "README.md", "# person\n", "person's readme")
	c.syncT(t, root, "main")
	out, code, _ = c.runSync(t, SyncScript, nil, "merge", SyncRef("main"))
	st, err = ParseSyncState(out)
	if code == 0 || err != nil || st.Op != "merge" || len(st.Conflicts) != 1 || st.Conflicts[0] != "README.md" {
		t.Fatalf("conflicting merge: exit %d, %+v, %v; want a merge in progress on README.md", code, st, err)
	}
	out, code, _ = c.runSync(t, SyncScript, nil, "status", SyncRef("main"))
	if st2, err := ParseSyncState(out); code != 0 || err != nil || st2.Op != "merge" || len(st2.Conflicts) != 1 {
		t.Errorf("status during the conflict: exit %d, %+v, %v", code, st2, err)
	}
	gitT(t, c.dir, "merge", "--abort")

	// A branch behind the base: the clone has it, no bundle.
	gitT(t, root, "branch", "old", c.base)
	commit, _, _ = c.syncT(t, root, "old")
	if commit != c.base || gitT(t, c.dir, "rev-parse", "origin/old") != c.base {
		t.Errorf("origin/old is not at the base %s", c.base)
	}
}

// TestSyncBundleNeedsOnlyBase: the bundle's only prerequisite is the
// base, which the clone's read-only disk holds.
func TestSyncBundleNeedsOnlyBase(t *testing.T) {
	root := newRepo(t, "")
	c := sessionT(t, root, "sync2")
	commitT(t, root, "a.txt", "a\n", "a")
	mine := commitT(t, root, "b.txt", "b\n", "b")
	ctx := context.Background()
	if _, err := c.m.Fetch(ctx, resolveT(t, root), "refs/heads/main", nil); err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	_, write, err := c.m.SyncBundle(ctx, c.id, mine, c.base)
	if err != nil || write == nil {
		t.Fatalf("SyncBundle: %v (write %v)", err, write != nil)
	}
	if err := write(&bundle); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b.bundle")
	writeFile(t, path, bundle.String())
	heads := gitT(t, c.m.Dir, "bundle", "list-heads", path)
	if !strings.HasPrefix(heads, mine+" ") {
		t.Errorf("bundle heads %q, want %s", heads, mine)
	}
	// A bundle names its prerequisites on lines starting with "-".
	var prereq []string
	for _, l := range strings.Split(bundle.String()[:strings.Index(bundle.String(), "\n\n")], "\n") {
		if strings.HasPrefix(l, "-") {
			prereq = append(prereq, strings.Fields(l[1:])[0])
		}
	}
	if len(prereq) != 1 || prereq[0] != c.base {
		t.Errorf("prerequisites %v, want only the base %s", prereq, c.base)
	}
	if _, _, err := c.m.SyncBundle(ctx, "Bad/ID", mine, c.base); err == nil {
		t.Error("a bad session id was taken")
	}
}

func TestParseSyncStateHostile(t *testing.T) {
	head := strings.Repeat("a", 40)
	for _, c := range []struct {
		name string
		out  string
		ok   bool
		want []string
	}{
		{"plain", "merge\n" + head + "\na.go\x00b c.go\x00", true, []string{"a.go", "b c.go"}},
		{"escape", "merge\n" + head + "\n\x1b]52;c;eA==\x07x\x00", true, []string{`"\x1b]52;c;eA==\ax"`}},
		{"bidi", "rebase\n" + head + "\nabc\u202egp.exe\x00", true, []string{`"abc\u202egp.exe"`}},
		{"newline", "merge\n" + head + "\nx\ny\x00", true, []string{`"x\ny"`}},
		{"bad op", "pwned\n" + head + "\n", false, nil},
		{"bad head", "merge\nnot-a-sha\n", false, nil},
		{"short", "merge", false, nil},
	} {
		st, err := ParseSyncState([]byte(c.out))
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if c.ok && strings.Join(st.Conflicts, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: conflicts %q, want %q", c.name, st.Conflicts, c.want)
		}
	}
	var many strings.Builder
	many.WriteString("merge\n\n")
	for range MaxConflicts + 7 {
		many.WriteString(strings.Repeat("n", 1000) + "\x00")
	}
	st, err := ParseSyncState([]byte(many.String()))
	if err != nil || len(st.Conflicts) != MaxConflicts || st.More != 7 || len([]rune(st.Conflicts[0])) != maxSyncName {
		t.Errorf("many long names: %d kept, %d more, first %d runes, %v", len(st.Conflicts), st.More, len([]rune(st.Conflicts[0])), err)
	}
}

// TestSyncRebase: rebasing onto the person's branch puts the agent's
// commit on top of it, in the clone.
func TestSyncRebase(t *testing.T) {
	root := newRepo(t, "")
	c := sessionT(t, root, "sync3")
	commitT(t, c.dir, "agent.txt", "agent\n", "agent's file")
	mine := commitT(t, root, "person.txt", "person\n", "person's file")
	c.syncT(t, root, "main")
	out, code, errs := c.runSync(t, SyncScript, nil, "rebase", SyncRef("main"))
	st, err := ParseSyncState(out)
	if code != 0 || err != nil || st.Op != "" || len(st.Conflicts) != 0 {
		t.Fatalf("rebase: exit %d, %+v, %v: %s", code, st, err, errs)
	}
	if parent := gitT(t, c.dir, "rev-parse", "HEAD^"); parent != mine {
		t.Errorf("after the rebase HEAD's parent is %s, want the person's %s", parent, mine)
	}
	if got := gitT(t, c.dir, "symbolic-ref", "--short", "HEAD"); got != c.branch {
		t.Errorf("after the rebase HEAD is on %s, want %s", got, c.branch)
	}
}
