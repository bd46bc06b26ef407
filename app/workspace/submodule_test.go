package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// newLib makes a small repository to be used as a submodule, in a folder
// with a space and non-ASCII letters.
func newLib(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "libs", name+" ü")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "init", "-q", "-b", "main")
	gitT(t, root, "config", "user.name", "Lib Person")
	gitT(t, root, "config", "user.email", "lib@example.com")
	writeFile(t, filepath.Join(root, name+".txt"), name+"\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", name)
	return canonical(t, root)
}

// addSubmodule adds url as a submodule at path of the repository root and
// commits it.
func addSubmodule(t *testing.T, root, url, path string) {
	t.Helper()
	gitT(t, root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "--", url, path)
	gitT(t, root, "commit", "-q", "-m", "add "+path)
}

// superRepo is a repository with submodules as people have them:
//
//	libs/core ü   checked out, with its own submodule "deep" checked out
//	libs/off      recorded, not checked out in the source (deinit)
//	libs/ghost    checked out, but recording a commit the source's copy lacks
//	libs/linked   replaced in the source by a symlink to a checkout elsewhere
func superRepo(t *testing.T) (root, core, deep string) {
	t.Helper()
	deep = newLib(t, "deep")
	core = newLib(t, "core")
	addSubmodule(t, core, deep, "deep")
	off := newLib(t, "off")
	ghost := newLib(t, "ghost")
	linked := newLib(t, "linked")

	root = newRepo(t, "https://example.com/me/super.git")
	addSubmodule(t, root, core, "libs/core ü")
	gitT(t, filepath.Join(root, "libs", "core ü"), "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
	addSubmodule(t, root, off, "libs/off")
	gitT(t, root, "submodule", "deinit", "-q", "-f", "--", "libs/off")
	addSubmodule(t, root, ghost, "libs/ghost")
	gitT(t, root, "update-index", "--cacheinfo", "160000,1234567890123456789012345678901234567890,libs/ghost")
	gitT(t, root, "commit", "-q", "-m", "ghost commit")
	addSubmodule(t, root, linked, "libs/linked")
	// The source's folder becomes a symlink to a checkout outside it:
	// Sandbar must not follow it.
	os.RemoveAll(filepath.Join(root, "libs", "linked"))
	if err := os.Symlink(linked, filepath.Join(root, "libs", "linked")); err != nil {
		t.Fatal(err)
	}
	return root, core, deep
}

func TestBaseCarriesSubmodules(t *testing.T) {
	t.Parallel()
	root, _, _ := superRepo(t)
	before := snapshot(t, root)
	c := sessionT(t, root, "sub")
	dest := c.dir

	if want := []string{"libs/core ü", "libs/core ü/deep"}; !slices.Equal(c.info.Submodules, want) {
		t.Errorf("Submodules = %q, want %q", c.info.Submodules, want)
	}
	skipped := strings.Join(c.info.SkippedSubmodules, "\n")
	if len(c.info.SkippedSubmodules) != 3 {
		t.Errorf("SkippedSubmodules = %q, want libs/off, libs/ghost and libs/linked", skipped)
	}
	for _, want := range []string{
		"libs/off: not checked out in " + root + ": run `git submodule update --init --recursive` in " + root + ", then start a new session",
		"libs/ghost: commit 123456789012 is not in " + filepath.Join(root, "libs", "ghost"),
		"libs/linked: not checked out in " + root,
	} {
		if !strings.Contains(skipped, want) {
			t.Errorf("SkippedSubmodules lack %q:\n%s", want, skipped)
		}
	}

	// The files are there, at the recorded commits, and the clone is clean.
	if got := readFile(t, filepath.Join(dest, "libs", "core ü", "core.txt")); got != "core\n" {
		t.Errorf("core.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(dest, "libs", "core ü", "deep", "deep.txt")); got != "deep\n" {
		t.Errorf("deep.txt = %q", got)
	}
	if st := gitT(t, dest, "status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("clone not clean:\n%s", st)
	}
	for _, line := range strings.Split(gitT(t, dest, "submodule", "status", "--recursive"), "\n") {
		switch {
		case strings.Contains(line, "libs/off") || strings.Contains(line, "libs/ghost") || strings.Contains(line, "libs/linked"):
			if !strings.HasPrefix(line, "-") {
				t.Errorf("skipped submodule not left uninitialised: %q", line)
			}
		case !strings.HasPrefix(line, " "):
			t.Errorf("submodule not at its recorded commit: %q", line)
		}
	}
	for _, p := range []string{"libs/off", "libs/ghost", "libs/linked"} {
		ents, err := os.ReadDir(filepath.Join(dest, p))
		if err != nil || len(ents) != 0 {
			t.Errorf("%s: %d entries, %v; want an empty folder", p, len(ents), err)
		}
	}
	// Laid out as git submodule update does, with the real URLs.
	core := filepath.Join(dest, "libs", "core ü")
	if got := readFile(t, filepath.Join(core, ".git")); got != "gitdir: ../../.git/modules/libs/core ü\n" {
		t.Errorf("gitfile = %q", got)
	}
	if got := gitT(t, dest, "config", "submodule.libs/core ü.active"); got != "true" {
		t.Errorf("submodule active = %q", got)
	}
	if got, want := gitT(t, core, "remote", "get-url", "origin"), gitT(t, root, "config", "-f", ".gitmodules", "submodule.libs/core ü.url"); got != want {
		t.Errorf("submodule origin = %q, want %q", got, want)
	}
	if got := gitT(t, core, "rev-parse", "refs/sandbar/base"); got != gitT(t, dest, "rev-parse", "HEAD:libs/core ü") {
		t.Errorf("submodule base = %s", got)
	}
	if got := gitT(t, filepath.Join(core, "deep"), "rev-parse", "--absolute-git-dir"); got != filepath.Join(dest, ".git", "modules", "libs", "core ü", "modules", "deep") {
		t.Errorf("nested git dir = %s", got)
	}
	// Its objects are its own: nothing reaches into the source.
	gitT(t, filepath.Join(core, "deep"), "fsck", "--no-progress")
	if _, err := os.Stat(filepath.Join(dest, ".git", "modules", "libs", "core ü", "objects", "info", "alternates")); err == nil {
		t.Error("a submodule borrows objects from elsewhere")
	}
	sameSnapshot(t, before, snapshot(t, root))

	// A second base at the same commit is the same disk; checking a
	// submodule out in the source makes a new one.
	ctx := context.Background()
	src := resolveT(t, root)
	info, err := c.m.BuildBase(ctx, BaseOptions{Source: src, Commit: c.base, Dir: filepath.Dir(c.disk)})
	if err != nil || !info.Reused || info.Path != c.disk || len(info.SkippedSubmodules) != 3 {
		t.Errorf("rebuild = %+v, %v; want the same disk reused", info, err)
	}
	gitT(t, root, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--", "libs/off")
	info, err = c.m.BuildBase(ctx, BaseOptions{Source: src, Commit: c.base, Dir: filepath.Dir(c.disk)})
	if err != nil || info.Reused || !slices.Contains(info.Submodules, "libs/off") {
		t.Errorf("after checking out libs/off: %+v, %v", info, err)
	}
}

// TestMergeSubmodules: the agent commits in a submodule and in the one
// nested in it, bumps both, and saves; merge brings each commit into the
// source's copy as the same branch, leaving their files, index and HEAD.
func TestMergeSubmodules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, _, _ := superRepo(t)
	c := sessionT(t, root, "subm")
	coreDest := filepath.Join(c.dir, "libs", "core ü")
	deepDest := filepath.Join(coreDest, "deep")
	coreSrc := filepath.Join(root, "libs", "core ü")
	deepSrc := filepath.Join(coreSrc, "deep")
	before := snapshot(t, root, "refs/heads/"+c.branch)
	coreBefore := snapshot(t, coreSrc, "refs/heads/"+c.branch)
	deepBefore := snapshot(t, deepSrc, "refs/heads/"+c.branch)

	deepCommit := commitT(t, deepDest, "deep.txt", "deep, by the agent\n", "agent: deep")
	gitT(t, coreDest, "add", "deep")
	coreCommit := commitT(t, coreDest, "core.txt", "core, by the agent\n", "agent: core")
	gitT(t, c.dir, "add", "libs/core ü")
	top := commitT(t, c.dir, "top.txt", "top\n", "agent: bump core")
	info := c.save(t)
	if info.Branch != top {
		t.Fatalf("saved branch %s, want %s", info.Branch, top)
	}
	if got := info.Submodules["libs/core ü"]; got != coreCommit {
		t.Errorf("saved submodules = %q", info.Submodules)
	}

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"libs/core ü", "libs/core ü/deep"}; !slices.Equal(res.Submodules, want) {
		t.Errorf("merged submodules = %q, want %q", res.Submodules, want)
	}
	if got := gitT(t, coreSrc, "rev-parse", "refs/heads/"+c.branch); got != coreCommit {
		t.Errorf("core's %s = %s, want %s", c.branch, got, coreCommit)
	}
	if got := gitT(t, deepSrc, "rev-parse", "refs/heads/"+c.branch); got != deepCommit {
		t.Errorf("deep's %s = %s, want %s", c.branch, got, deepCommit)
	}
	sameSnapshot(t, before, snapshot(t, root, "refs/heads/"+c.branch))
	sameSnapshot(t, coreBefore, snapshot(t, coreSrc, "refs/heads/"+c.branch))
	sameSnapshot(t, deepBefore, snapshot(t, deepSrc, "refs/heads/"+c.branch))
	gitT(t, coreSrc, "fsck", "--no-progress")

	// Again: nothing new. A branch of that name checked out in the
	// source's copy is refused, before the superproject's branch moves.
	if res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false); err != nil || len(res.Submodules) != 0 {
		t.Errorf("repeat merge = %+v, %v", res, err)
	}
	gitT(t, coreSrc, "switch", "-q", "-c", "sandbar/other")
	c2 := sessionT(t, root, "other")
	commitT(t, filepath.Join(c2.dir, "libs", "core ü"), "x.txt", "x\n", "x")
	gitT(t, c2.dir, "add", "libs/core ü")
	commitT(t, c2.dir, "y.txt", "y\n", "bump")
	c2.save(t)
	_, err = Merge(ctx, resolveT(t, root), c2.m, c2.id, c2.branch, false)
	if !errors.Is(err, ErrCheckedOut) || !strings.Contains(err.Error(), "submodule libs/core ü") {
		t.Errorf("branch checked out in the submodule: err = %v", err)
	}
	if out := gitT(t, root, "branch", "--list", c2.branch); out != "" {
		t.Errorf("a refused merge created %s", out)
	}

	// Not checked out in the source any more: the session's commit in it
	// has nowhere to go, and the merge says what to do.
	gitT(t, root, "submodule", "deinit", "-q", "-f", "--", "libs/core ü")
	commitT(t, coreDest, "z.txt", "z\n", "z")
	gitT(t, c.dir, "add", "libs/core ü")
	commitT(t, c.dir, "z.txt", "z\n", "bump again")
	c.save(t)
	_, err = Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if !errors.Is(err, errNoModuleCopy) || !strings.Contains(err.Error(), "run `git submodule update --init` there and merge again") {
		t.Errorf("submodule not checked out: err = %v", err)
	}
	if got := gitT(t, root, "rev-parse", "refs/heads/"+c.branch); got != top {
		t.Errorf("a refused merge moved %s to %s", c.branch, got)
	}
}

// TestImportSaveModuleSections: submodule sections are hostile input
// too: a pack for a submodule the session does not record is not kept,
// and a section that lies about its size is refused.
func TestImportSaveModuleSections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "mods")
	lib := newLib(t, "stray")
	libHead := gitT(t, lib, "rev-parse", "HEAD")
	pack := func(dir, revs string) string {
		cmd := exec.Command("git", "-C", dir, "pack-objects", "--revs", "--stdout", "-q")
		cmd.Env, cmd.Stdin = gitEnv(), strings.NewReader(revs)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	libPack := pack(lib, libHead+"\n")
	mainPack := pack(c.dir, "^"+c.base+"\n")
	hdr := "sandbar-save 2 " + c.base + " " + c.base + " " + c.base + "\n"
	section := func(path string, n int) string {
		return "module " + libHead + " " + strconv.Itoa(n) + " " + path + "\n" + libPack
	}

	info, err := c.m.ImportSave(ctx, strings.NewReader(hdr+section("not/a submodule", len(libPack))+"pack\n"+mainPack), c.id, 1<<20)
	if err != nil {
		t.Fatalf("a well-formed save: %v", err)
	}
	if len(info.Submodules) != 0 {
		t.Errorf("a submodule the session does not record was kept: %q", info.Submodules)
	}
	if refs := gitT(t, c.m.Dir, "for-each-ref", sessionRefs+c.id+"/modules/"); refs != "" {
		t.Errorf("refs for it: %s", refs)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"claims fewer", hdr + section("a", len(libPack)-30) + "pack\n" + mainPack, "did not pass git's checks"},
		{"claims more", hdr + section("a", len(libPack)+100) + "pack\n" + mainPack, "ended inside the pack"},
		{"claims more, swallowing the rest", hdr + section("a", len(libPack)+5+len(mainPack)) + "pack\n" + mainPack, "has bytes after its end"},
		{"twice", hdr + section("a", len(libPack)) + section("a", len(libPack)) + "pack\n" + mainPack, "comes twice"},
		{"over the bound", hdr + section("a", len(libPack)) + "pack\n" + mainPack, "too large"},
	} {
		max := int64(1 << 20)
		if tc.name == "over the bound" {
			max = int64(len(libPack))
		}
		_, err := c.m.ImportSave(ctx, strings.NewReader(tc.in), c.id, max)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMergeNeverFollowsSymlink: the source's folder for a submodule is a
// symlink to a repository elsewhere, and the agent commits a submodule
// there; merge never writes through the link, and says the commits stay
// in the session.
func TestMergeNeverFollowsSymlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, _, _ := superRepo(t)
	target := canonical(t, filepath.Join(root, "libs", "linked"))
	before := snapshot(t, target)
	beforeGit := filesOf(t, filepath.Join(root, ".git", "modules", "libs", "linked"))
	c := sessionT(t, root, "link")
	sub := filepath.Join(c.dir, "libs", "linked")
	gitT(t, sub, "init", "-q", "-b", "main")
	commitT(t, sub, "planted.txt", "x\n", "planted")
	gitT(t, c.dir, "add", "libs/linked")
	top := commitT(t, c.dir, "bump.txt", "x\n", "bump linked")
	if info := c.save(t); info.Submodules["libs/linked"] == "" {
		t.Fatalf("the planted submodule was not sent: %q", info.Submodules)
	}
	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	wantSkipped(t, res, "libs/linked: "+filepath.Join(root, "libs", "linked")+" is a symlink, and merge never writes through one, so its commits stay in the session")
	if got := gitT(t, root, "rev-parse", "refs/heads/"+c.branch); got != top {
		t.Errorf("%s = %s, want %s", c.branch, got, top)
	}
	sameSnapshot(t, before, snapshot(t, target))
	sameFiles(t, beforeGit, filesOf(t, filepath.Join(root, ".git", "modules", "libs", "linked")))
}

// filesOf is every file under dir, symlinks not followed: its bytes'
// hash and mode, by path.
func filesOf(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := contentHash(p, fi)
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %s", fi.Mode(), h)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) < 2 {
		t.Fatalf("%s holds nothing to compare", dir)
	}
	return m
}

func sameFiles(t testing.TB, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %q -> %q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// wantSkipped checks that a merge brought no submodule commits anywhere
// and skipped exactly the lines given.
func wantSkipped(t testing.TB, res MergeResult, lines ...string) {
	t.Helper()
	if len(res.Submodules) != 0 {
		t.Errorf("commits brought into %q", res.Submodules)
	}
	got, want := slices.Sorted(slices.Values(res.SkippedSubmodules)), slices.Sorted(slices.Values(lines))
	if !slices.Equal(got, want) {
		t.Errorf("SkippedSubmodules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// plant makes rel (in a session's clone) a repository of its own with a
// commit, and records it in the clone as a gitlink, as an agent can.
func plant(t testing.TB, clone, rel string) string {
	t.Helper()
	dir := filepath.Join(clone, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	c := commitT(t, dir, "planted.txt", "planted\n", "planted by the agent")
	gitT(t, clone, "add", "-f", "--", rel)
	return c
}

// TestMergeNestedRepoNotSubmodule: the person's working tree holds an
// ignored clone of some other project and a worktree of the repository
// itself; the agent records gitlinks at both paths, with commits of its
// own. Neither is a submodule of the person's repository, so merge runs
// no git in them and leaves them byte for byte as they were, and says
// the commits stay in the session; the branch itself is merged.
func TestMergeNestedRepoNotSubmodule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	// An ignored clone (out/ is in .gitignore), with refs and a config a
	// fetch would act on.
	vendor := filepath.Join(root, "out", "vendor")
	gitT(t, root, "clone", "-q", "--", newLib(t, "vendor"), vendor)
	gitT(t, vendor, "config", "core.alternateRefsCommand", "touch "+filepath.Join(root, "ran"))
	gitT(t, vendor, "branch", "keep")
	// A worktree of the person's own repository, as agents' tools make.
	wt := filepath.Join(root, ".claude", "worktrees", "x")
	gitT(t, root, "worktree", "add", "-q", "-b", "wt-branch", "--", wt)
	beforeVendor := filesOf(t, filepath.Join(vendor, ".git"))
	beforeGit := filesOf(t, filepath.Join(root, ".git", "worktrees"))

	c := sessionT(t, root, "nested")
	plant(t, c.dir, "out/vendor")
	plant(t, c.dir, ".claude/worktrees/x")
	top := commitT(t, c.dir, "top.txt", "top\n", "agent: gitlinks")
	info := c.save(t)
	if info.Submodules["out/vendor"] == "" || info.Submodules[".claude/worktrees/x"] == "" {
		t.Fatalf("the planted repositories were not sent: %q", info.Submodules)
	}
	before := snapshot(t, root, "refs/heads/"+c.branch)

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	why := " (neither its HEAD nor its index records one there), so its commits stay in the session"
	wantSkipped(t, res, "out/vendor: not a submodule of "+root+why, ".claude/worktrees/x: not a submodule of "+root+why)
	if got := gitT(t, root, "rev-parse", "refs/heads/"+c.branch); got != top {
		t.Errorf("%s = %s, want %s", c.branch, got, top)
	}
	sameFiles(t, beforeVendor, filesOf(t, filepath.Join(vendor, ".git")))
	sameFiles(t, beforeGit, filesOf(t, filepath.Join(root, ".git", "worktrees")))
	sameSnapshot(t, before, snapshot(t, root, "refs/heads/"+c.branch))
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Error("git ran a command configured in the nested clone")
	}

	// Forced: still nothing written there.
	if _, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, true); err != nil {
		t.Fatalf("forced merge: %v", err)
	}
	sameFiles(t, beforeVendor, filesOf(t, filepath.Join(vendor, ".git")))
	sameFiles(t, beforeGit, filesOf(t, filepath.Join(root, ".git", "worktrees")))
}

// TestMergeGitfileElsewhere: a submodule the person does record, whose
// folder's .git points at another repository outside .git/modules (here
// a clone of the same library elsewhere on the host). Merge does not
// write there and says why; that repository is untouched.
func TestMergeGitfileElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lib := newLib(t, "lib")
	root := newRepo(t, "")
	addSubmodule(t, root, lib, "libs/lib")
	other := filepath.Join(t.TempDir(), "other")
	gitT(t, t.TempDir(), "clone", "-q", "--", lib, other)
	gitfile := filepath.Join(root, "libs", "lib", ".git")
	writeFile(t, gitfile, "gitdir: "+filepath.Join(other, ".git")+"\n")
	beforeOther := filesOf(t, filepath.Join(other, ".git"))
	beforeOwn := filesOf(t, filepath.Join(root, ".git", "modules"))

	c := sessionT(t, root, "elsewhere")
	sub := filepath.Join(c.dir, "libs", "lib")
	if _, err := os.Stat(filepath.Join(sub, "lib.txt")); err != nil {
		// Carried from the other clone, which has the recorded commit.
		t.Fatalf("libs/lib not carried into the clone: %v", err)
	}
	commitT(t, sub, "lib.txt", "by the agent\n", "agent: lib")
	gitT(t, c.dir, "add", "libs/lib")
	commitT(t, c.dir, "top.txt", "top\n", "agent: bump lib")
	c.save(t)

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	wantSkipped(t, res, "libs/lib: "+gitfile+" names the git dir "+filepath.Join(other, ".git")+", which is not a submodule "+root+
		" keeps in "+filepath.Join(root, ".git", "modules")+", and merge writes into no repository elsewhere, so its commits stay in the session")
	sameFiles(t, beforeOther, filesOf(t, filepath.Join(other, ".git")))
	sameFiles(t, beforeOwn, filesOf(t, filepath.Join(root, ".git", "modules")))
}

// TestMergeSymlinkOnTheWay: a genuine submodule's git dir, reached
// through a folder on the way that is a symlink: the person moved vend/
// elsewhere and linked it back, with the gitfile naming the git dir in
// .git/modules outright. Merge does not go through the link.
func TestMergeSymlinkOnTheWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lib := newLib(t, "lib")
	root := newRepo(t, "")
	addSubmodule(t, root, lib, "vend/lib")
	moved := filepath.Join(t.TempDir(), "vend")
	if err := os.Rename(filepath.Join(root, "vend"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(root, "vend")); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(root, ".git", "modules", "vend", "lib")
	writeFile(t, filepath.Join(moved, "lib", ".git"), "gitdir: "+gitDir+"\n")
	gitT(t, filepath.Join(moved, "lib"), "config", "core.worktree", filepath.Join(moved, "lib"))
	if got := gitT(t, filepath.Join(moved, "lib"), "rev-parse", "HEAD"); got != gitT(t, root, "rev-parse", "HEAD:vend/lib") {
		t.Fatalf("the moved checkout is at %s", got)
	}
	beforeGit := filesOf(t, gitDir)

	c := sessionT(t, root, "onway")
	plant(t, c.dir, "vend/lib")
	commitT(t, c.dir, "top.txt", "top\n", "agent: replace lib")
	c.save(t)

	res, err := Merge(ctx, resolveT(t, root), c.m, c.id, c.branch, false)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	wantSkipped(t, res, "vend/lib: "+filepath.Join(root, "vend")+" is a symlink, and merge never writes through one, so its commits stay in the session")
	sameFiles(t, beforeGit, filesOf(t, gitDir))
}

func TestShowPath(t *testing.T) {
	for in, want := range map[string]string{
		"libs/core ü":  "libs/core ü",
		"out/\x1b[2Jx": `"out/\x1b[2Jx"`,
		"a\nb":         `"a\nb"`,
		"a\u202eb":     `"a\u202eb"`,
	} {
		if got := showPath(in); got != want {
			t.Errorf("showPath(%q) = %s, want %s", in, got, want)
		}
	}
}
