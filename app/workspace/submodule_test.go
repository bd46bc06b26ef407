package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
