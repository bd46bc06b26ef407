package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSaveSnapshotIsGitAddAll checks that the save's snapshot, made by
// update-index from one listing of the changes (no process per file),
// holds exactly the tree `git add -A` makes of the same working tree: new,
// modified, deleted and renamed files, a file become a folder and a
// folder become a file, symlinks, names with spaces, newlines, leading
// dashes and quotes, an untracked repository inside the clone, ignored
// files, and a file over 64 MiB that stays out (as a sparse file).
func TestSaveSnapshotIsGitAddAll(t *testing.T) {
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "addall")
	d := c.dir
	for _, f := range []string{"keep.txt", "gone.txt", "todir", "sub/inner.txt", "sub/x.txt", "mode.sh", "link-to-be"} {
		writeFile(t, filepath.Join(d, f), "v1 "+f+"\n")
	}
	writeFile(t, filepath.Join(d, ".gitignore"), "*.log\nbuild/\n")
	gitT(t, d, "add", "-A")
	gitT(t, d, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "files")

	writeFile(t, filepath.Join(d, "keep.txt"), "v2\n")
	os.Remove(filepath.Join(d, "gone.txt"))
	os.Remove(filepath.Join(d, "todir"))
	writeFile(t, filepath.Join(d, "todir", "now-inside.txt"), "inside\n")
	os.RemoveAll(filepath.Join(d, "sub"))
	writeFile(t, filepath.Join(d, "sub"), "a file where a folder was\n")
	os.Chmod(filepath.Join(d, "mode.sh"), 0o755)
	os.Remove(filepath.Join(d, "link-to-be"))
	if err := os.Symlink("keep.txt", filepath.Join(d, "link-to-be")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/nowhere", filepath.Join(d, "dangling"))
	for _, name := range []string{"new file.txt", "-n", "--add", "quote\"d", "new\nline", "ü.txt", "dir/deep/er/f.txt"} {
		writeFile(t, filepath.Join(d, name), "new "+name+"\n")
	}
	writeFile(t, filepath.Join(d, "empty"), "")
	writeFile(t, filepath.Join(d, "debug.log"), "ignored\n")
	writeFile(t, filepath.Join(d, "build", "out.o"), "ignored\n")
	nested := filepath.Join(d, "nested")
	os.MkdirAll(nested, 0o755)
	gitT(t, nested, "init", "-q")
	writeFile(t, filepath.Join(nested, "n.txt"), "n\n")
	gitT(t, nested, "add", "-A")
	gitT(t, nested, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "nested")
	big, err := os.Create(filepath.Join(d, "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(64<<20 + 1)
	big.Close()
	exact, _ := os.Create(filepath.Join(d, "exactly64.bin"))
	exact.Truncate(64 << 20)
	exact.Close()

	info := c.save(t)
	if strings.Contains(c.stderr, "update-index failed") {
		t.Fatalf("the save fell back to git add -A:\n%s", c.stderr)
	}
	got := gitT(t, c.m.Dir, "ls-tree", "-r", "--full-tree", "-z", info.Snapshot)

	// The clone keeps every object of the snapshot, odd names, symlinks
	// and the 64 MiB file included: Sandbar's commit of the work becomes
	// its history (AdoptScript). (Before git add -A below writes them there.)
	objs := gitT(t, d, "rev-list", "--objects", "--no-object-names", info.Snapshot)
	check := gitCmd(d, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	check.Stdin = strings.NewReader(objs + "\n")
	if out, err := check.Output(); err != nil || strings.Contains(string(out), "missing") {
		t.Errorf("the clone lacks objects of the snapshot: %v\n%s", err, out)
	}

	// The same tree by git add -A, in a private index, excluding the
	// file over 64 MiB as the save does.
	idx := filepath.Join(t.TempDir(), "index")
	cp(t, filepath.Join(d, ".git", "index"), idx)
	add := gitCmd(d, "add", "-A", "--", ".", ":(exclude)disk.img")
	add.Env = append(add.Env, "GIT_INDEX_FILE="+idx)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("git add -A: %v\n%s", err, out)
	}
	wt := gitCmd(d, "write-tree")
	wt.Env = append(wt.Env, "GIT_INDEX_FILE="+idx)
	tree, err := wt.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := gitT(t, d, "ls-tree", "-r", "--full-tree", "-z", strings.TrimSpace(string(tree)))
	if got != want {
		t.Errorf("the snapshot's tree differs from git add -A's:\nsave:\n%s\ngit add -A:\n%s", strings.ReplaceAll(got, "\x00", "\n"), strings.ReplaceAll(want, "\x00", "\n"))
	}
	for _, name := range []string{"disk.img"} {
		if strings.Contains(got, "\t"+name+"\x00") {
			t.Errorf("%s (over 64 MiB) is in the snapshot", name)
		}
	}
	if !strings.Contains(got, "\texactly64.bin\x00") {
		t.Error("exactly64.bin (64 MiB, not over) is not in the snapshot")
	}
}

// TestSaveManyFilesNoProcessPerFile saves 3,000 new files and counts the
// processes the script started: a handful, whatever the number of files.
func TestSaveManyFilesNoProcessPerFile(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 3,000 files")
	}
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "many")
	for i := range 3000 {
		writeFile(t, filepath.Join(c.dir, fmt.Sprintf("d%02d", i%30), fmt.Sprintf("f%04d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	// A stat, sh or find on PATH that counts itself, before the real one.
	bin := t.TempDir()
	count := filepath.Join(t.TempDir(), "count")
	for _, name := range []string{"stat", "find", "sh", "git", "awk", "sed", "cat", "tr", "wc", "cp"} {
		real, err := lookPath(name)
		if err != nil {
			continue
		}
		script := fmt.Sprintf("#!/bin/sh\necho %s >> %q\nexec %q \"$@\"\n", name, count, real)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	packs := func() []string {
		p, _ := filepath.Glob(filepath.Join(c.dir, ".git", "objects", "pack", "pack-*.pack"))
		return p
	}
	before := len(packs())
	info := c.save(t)
	if info.Snapshot == info.Head {
		t.Fatal("nothing was saved")
	}
	// The two batches' packs are one in the clone (a pack per batch would
	// start the agent's auto gc at 50), and it holds the snapshot.
	if got := len(packs()); got != before+1 {
		t.Errorf("the save left %d packs in the clone, want one more than the %d before", got, before)
	}
	if err := gitCmd(c.dir, "cat-file", "-e", info.Snapshot+":d07/f0007.txt").Run(); err != nil {
		t.Errorf("the clone lacks the snapshot's objects: %v", err)
	}
	n := gitT(t, c.m.Dir, "ls-tree", "-r", "--name-only", info.Snapshot)
	if files := strings.Count(n, "\n") + 1; files < 3000 {
		t.Errorf("the snapshot has %d files, want at least 3000", files)
	}
	data, _ := os.ReadFile(count)
	if runs := strings.Count(string(data), "\n"); runs > 60 {
		t.Errorf("the save started %d processes for 3,000 files (want a fixed few):\n%s", runs, tally(string(data)))
	}
}

func tally(s string) string {
	m := map[string]int{}
	for _, l := range strings.Fields(s) {
		m[l]++
	}
	return fmt.Sprint(m)
}

// gitCmd is git in dir in the package's scrubbed environment.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv()
	return cmd
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

func cp(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSaveKeepsEarlierSaves: a session's clone starts again from the base
// (its disk was lost) and saves other work: the earlier saved commits
// stay reachable in Sandbar's repository (git fsck finds no unreachable
// commit, and gc keeps them), under saves/1; a save that only adds to the
// last one keeps nothing more.
func TestSaveKeepsEarlierSaves(t *testing.T) {
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "again")
	first := commitT(t, c.dir, "first.txt", "first\n", "first work")
	if one := c.save(t); one.Branch != first {
		t.Fatalf("first save's branch %s, want %s", one.Branch, first)
	}
	// A later save on top of the first keeps no extra ref.
	commitT(t, c.dir, "second.txt", "second\n", "more")
	writeFile(t, filepath.Join(c.dir, "wip.txt"), "uncommitted\n")
	last := c.save(t)
	if last.Snapshot == last.Branch {
		t.Fatal("the uncommitted file made no snapshot")
	}
	if refs := gitT(t, c.m.Dir, "for-each-ref", "--format=%(refname)", "refs/sandbar/sessions/again/saves/"); refs != "" {
		t.Errorf("a save that reaches the last one kept %s", refs)
	}

	// The clone starts again from the base and saves other work.
	gitT(t, c.dir, "reset", "-q", "--hard", c.base)
	os.Remove(filepath.Join(c.dir, "wip.txt"))
	other := commitT(t, c.dir, "other.txt", "other\n", "other work")
	two := c.save(t)
	if two.Branch != other {
		t.Fatalf("second save's branch %s, want %s", two.Branch, other)
	}
	for name, want := range map[string]string{"branch": last.Branch, "snapshot": last.Snapshot} {
		if got := gitT(t, c.m.Dir, "rev-parse", "refs/sandbar/sessions/again/saves/1/"+name); got != want {
			t.Errorf("saves/1/%s = %s, want the earlier save's %s", name, got, want)
		}
	}
	gitT(t, c.m.Dir, "gc", "-q", "--prune=now")
	if out := gitT(t, c.m.Dir, "fsck", "--unreachable", "--no-reflogs"); strings.Contains(out, "commit") {
		t.Errorf("saved commits became unreachable:\n%s", out)
	}
	if got := gitT(t, c.m.Dir, "cat-file", "-t", first); got != "commit" {
		t.Errorf("the first saved commit is %q after gc", got)
	}
}

// TestSaveKeepsTheClonesIndexAndRefs saves 4,500 new files (three
// batches, made side by side) twice over: outside objects/, the clone's
// .git (index, refs, config: every file's name and bytes) is as it was
// before and nothing of the save's own is left there; the snapshot's
// objects are in the clone (Sandbar's commit of the work is adopted there),
// at most once more for the second save. Both saves make the
// same tree, which holds every new file beside the committed ones and a
// tracked file changed within the second of its commit (git's
// racy-clean check needs the index's own mtime).
func TestSaveKeepsTheClonesIndexAndRefs(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 4,500 files")
	}
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "untouched")
	commitT(t, c.dir, "tracked.txt", "v1\n", "tracked")
	writeFile(t, filepath.Join(c.dir, "tracked.txt"), "v2\n")
	for i := range 4500 {
		writeFile(t, filepath.Join(c.dir, fmt.Sprintf("d%02d", i%45), fmt.Sprintf("f%04d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	objects := filepath.Join(c.dir, ".git", "objects")
	gitDir := func() map[string]string {
		m := map[string]string{}
		filepath.WalkDir(filepath.Join(c.dir, ".git"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasPrefix(p, objects+string(filepath.Separator)) {
				data, _ := os.ReadFile(p)
				m[p] = string(data)
			}
			return nil
		})
		return m
	}
	inPack := func() int {
		n := 0
		for _, l := range strings.Split(gitT(t, c.dir, "count-objects", "-v"), "\n") {
			if v, ok := strings.CutPrefix(l, "in-pack: "); ok {
				n, _ = strconv.Atoi(v)
			}
		}
		return n
	}
	before := gitDir()
	one := c.save(t)
	if strings.Contains(c.stderr, "update-index failed") {
		t.Fatalf("the save fell back to git add -A:\n%s", c.stderr)
	}
	// 4,500 paths are 3 batches of about 2,000, rounded up to a multiple
	// of the CPUs the save uses (nproc, at most 4).
	j := 1
	if out, err := exec.Command("nproc").Output(); err == nil {
		j, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	j = min(max(j, 1), 4)
	if n, want := strings.Count(c.stderr, "progress added a batch of paths"), (3+j-1)/j*j; n != want {
		t.Errorf("the save said %d batches done, want %d (%d CPUs):\n%s", n, want, j, c.stderr)
	}
	after := gitDir()
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("the save left %s in the clone", p)
		}
	}
	for p, data := range before {
		if after[p] != data {
			t.Errorf("the save changed or removed %s in the clone", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(c.dir, ".git", "sandbar-save.*")); len(left) > 0 {
		t.Errorf("the save left %v", left)
	}
	if out, err := gitCmd(c.dir, "cat-file", "-e", one.Snapshot+"^{tree}").CombinedOutput(); err != nil {
		t.Errorf("the snapshot's tree is not in the clone: %v %s", err, out)
	}
	if out, err := gitCmd(c.dir, "cat-file", "-e", one.Snapshot+":d44/f4499.txt").CombinedOutput(); err != nil {
		t.Errorf("the snapshot's blobs are not in the clone: %v %s", err, out)
	}
	packed := inPack()
	two := c.save(t)
	if more := inPack() - packed; more > 4500+100 {
		t.Errorf("the second save of the same files added %d objects to the clone (its blobs again, trees and commit: about 4,550)", more)
	}
	if a, b := gitT(t, c.m.Dir, "rev-parse", one.Snapshot+"^{tree}"), gitT(t, c.m.Dir, "rev-parse", two.Snapshot+"^{tree}"); a != b {
		t.Errorf("two saves of the same work made different trees: %s and %s", a, b)
	}
	files := strings.Split(gitT(t, c.m.Dir, "ls-tree", "-r", "--name-only", one.Snapshot), "\n")
	want := map[string]bool{"tracked.txt": true, "d44/f4499.txt": true, "d00/f0000.txt": true}
	n := 0
	for _, f := range files {
		if len(f) > 4 && f[0] == 'd' && f[3] == '/' {
			n++
		}
		delete(want, f)
	}
	if n != 4500 || len(want) > 0 {
		t.Errorf("the snapshot has %d of the 4,500 new files, and lacks %v", n, want)
	}
	if got := gitT(t, c.m.Dir, "show", one.Snapshot+":tracked.txt"); got != "v2" {
		t.Errorf("tracked.txt in the snapshot is %q, want the modified v2", got)
	}
}

// TestSaveFallsBackToGitAdd: when update-index refuses the batches (here a
// git on PATH that fails --index-info), the save takes the working tree
// with git add -A instead, into the same private object folder, and the
// snapshot still holds every file.
func TestSaveFallsBackToGitAdd(t *testing.T) {
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "fallback")
	for i := range 50 {
		writeFile(t, filepath.Join(c.dir, "new", fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	real, err := lookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\nfor a; do [ \"$a\" = --index-info ] && exit 128; done\nexec %q \"$@\"\n", real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	info := c.save(t)
	if !strings.Contains(c.stderr, "adding with git add -A") {
		t.Fatalf("the save did not fall back to git add -A:\n%s", c.stderr)
	}
	files := gitT(t, c.m.Dir, "ls-tree", "-r", "--name-only", info.Snapshot, "--", "new")
	if n := strings.Count(files, "\n") + 1; n != 50 {
		t.Errorf("the snapshot has %d of the 50 new files:\n%s", n, files)
	}
	if left, _ := filepath.Glob(filepath.Join(c.dir, ".git", "sandbar-save.*")); len(left) > 0 {
		t.Errorf("the save left %v", left)
	}
}

// TestSavedWorkIsAdoptedInTheClone: after a save of uncommitted files (a
// batch of them, an empty one, a symlink), the commit Sandbar makes of
// them on the host is taken by the clone (AdoptScript, as Commit now and
// a restart run it): the save left the snapshot's objects there.
func TestSavedWorkIsAdoptedInTheClone(t *testing.T) {
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "adopt")
	for i := range 30 {
		writeFile(t, filepath.Join(c.dir, "new", fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	writeFile(t, filepath.Join(c.dir, "empty.txt"), "")
	if err := os.Symlink("new/f00.txt", filepath.Join(c.dir, "link")); err != nil {
		t.Fatal(err)
	}
	c.save(t)
	ctx := context.Background()
	commit, made, err := c.m.CommitSnapshot(ctx, c.id, "work")
	if err != nil || !made {
		t.Fatalf("CommitSnapshot: %v (made %v)", err, made)
	}
	got, raw, ok, err := c.m.AutoCommitFor(ctx, c.id)
	if err != nil || !ok || got != commit {
		t.Fatalf("AutoCommitFor: %s %v %v, want %s", got, ok, err, commit)
	}
	cmd := exec.Command("sh", "-c", AdoptScript, "sandbar-adopt", c.branch, commit)
	cmd.Dir, cmd.Env, cmd.Stdin = c.dir, gitEnv(), bytes.NewReader(raw)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the clone did not take the commit of the saved work: %v\n%s", err, out)
	}
	if tip := gitT(t, c.dir, "rev-parse", c.branch); tip != commit {
		t.Errorf("the clone's branch is at %s, want %s", tip, commit)
	}
	if st := gitT(t, c.dir, "status", "--porcelain"); st != "" {
		t.Errorf("the clone has uncommitted work after taking the commit:\n%s", st)
	}
}

// TestSaveWithoutAnIndexReadsNoBigFile: an agent replaced .git/index with
// a FIFO and grew a tracked file to 2 GB (sparse). The save starts from
// HEAD's tree, which has no stat data: it must not read the big file to
// compare it (in a VM that was minutes of silence, and the save was cut
// off), it leaves it out and says so, and saves the rest.
func TestSaveWithoutAnIndexReadsNoBigFile(t *testing.T) {
	root := newRepo(t, testRemote)
	c := sessionT(t, root, "noindex")
	writeFile(t, filepath.Join(c.dir, "big.bin"), "small\n")
	gitT(t, c.dir, "add", "big.bin")
	gitT(t, c.dir, "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-qm", "big.bin, small for now")
	committed := gitT(t, c.dir, "rev-parse", "HEAD:big.bin")
	if err := os.Truncate(filepath.Join(c.dir, "big.bin"), 2<<30); err != nil {
		t.Fatal(err)
	}
	// A read of big.bin moves its access time (relatime moves it when it
	// is older than the change): whether this file system keeps access
	// times is checked first with a read of our own.
	big := filepath.Join(c.dir, "big.bin")
	old := time.Unix(1_000_000_000, 0)
	atime := func() time.Time {
		var st syscall.Stat_t
		if err := syscall.Stat(big, &st); err != nil {
			t.Fatal(err)
		}
		return time.Unix(st.Atim.Unix())
	}
	if err := os.Chtimes(big, old, time.Now()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Read(make([]byte, 1))
	f.Close()
	keepsAtime := !atime().Equal(old)
	if err := os.Chtimes(big, old, time.Now()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(c.dir, "work.txt"), "work\n")
	index := filepath.Join(c.dir, ".git", "index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Fatal(err)
	}
	info := c.save(t)
	if !keepsAtime {
		t.Log("this file system keeps no access times: whether the save read big.bin is not checked")
	} else if !atime().Equal(old) {
		t.Errorf("the save read big.bin (2 GB) to compare it: its access time moved to %v", atime())
	}
	if !strings.Contains(c.stderr, "left out of the snapshot, over 64 MiB: big.bin") {
		t.Errorf("the save did not say it left big.bin out:\n%s", c.stderr)
	}
	if got := gitT(t, c.m.Dir, "rev-parse", info.Snapshot+":big.bin"); got != committed {
		t.Errorf("the snapshot's big.bin is %s, want the committed %s", got, committed)
	}
	if got := gitT(t, c.m.Dir, "show", info.Snapshot+":work.txt"); got != "work" {
		t.Errorf("the snapshot's work.txt is %q, want %q", got, "work")
	}
}
