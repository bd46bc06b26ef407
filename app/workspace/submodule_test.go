package workspace

import (
	"context"
	"errors"
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
