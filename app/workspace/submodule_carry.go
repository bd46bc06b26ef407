package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// moduleCopy is a submodule carried into a base disk.
type moduleCopy struct {
	gitlink
	gitDir string // its git dir in the clone: .git/modules/<name>[/modules/<name>...]
	parent string // its superproject's git dir (.git for the top)
}

// carryModules copies into the mirror the history of every submodule,
// recursively, that commit records and that the source at root has
// checked out with the recorded commit, and returns those, parents before
// children, with a line for each one left out saying what to do. The
// source's copies are read by git only as upload-pack; a folder reached
// through a symlink is never used.
func (m *Mirror) carryModules(ctx context.Context, root, remote, commit string) ([]moduleCopy, []string, error) {
	var carried []moduleCopy
	var skipped []string
	var walk func(srcDir, commit, prefix, url, gitDir string, depth int) error
	walk = func(srcDir, commit, prefix, url, gitDir string, depth int) error {
		links, err := m.gitlinks(ctx, commit, prefix, url)
		if err != nil {
			return err
		}
		for _, l := range links {
			if depth >= maxSubmoduleDepth {
				skipped = append(skipped, fmt.Sprintf("%s: submodules nested deeper than %d are not carried in", l.path, maxSubmoduleDepth))
				continue
			}
			if l.name == "" {
				skipped = append(skipped, fmt.Sprintf("%s: .gitmodules has no usable entry for it, so it is left empty", l.path))
				continue
			}
			from := filepath.Join(srcDir, filepath.FromSlash(l.rel))
			if why := sourceModule(ctx, srcDir, l.rel, l.commit); why != "" {
				skipped = append(skipped, fmt.Sprintf("%s: %s: run `git submodule update --init --recursive` in %s, then start a new session", l.path, why, root))
				continue
			}
			ref := moduleRefs + refKey(l.path) + "/" + l.commit
			if !m.hasCommit(ctx, l.commit) {
				_, err = git(ctx, m.Dir, "-c", "gc.auto=0", "-c", "protocol.version=2", "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
					"--end-of-options", from, l.commit+":"+ref)
			} else {
				_, err = git(ctx, m.Dir, "update-ref", ref, l.commit)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				skipped = append(skipped, fmt.Sprintf("%s: its history could not be copied from %s (%s): check it with `git fsck` there, then start a new session", l.path, from, gitMessage(err)))
				continue
			}
			mc := moduleCopy{gitlink: l, gitDir: gitDir + "/modules/" + l.name, parent: gitDir}
			carried = append(carried, mc)
			if err := walk(from, l.commit, l.path+"/", l.url, mc.gitDir, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk(root, commit, "", remote, ".git", 0)
	return carried, skipped, err
}

// sourceModule checks that the folder rel of the repository at dir is a
// checkout of a submodule holding commit, reached without a symlink, and
// returns why not ("" when it is).
func sourceModule(ctx context.Context, dir, rel, commit string) string {
	p, ok := plainDir(dir, rel)
	if !ok {
		return "not checked out in " + dir
	}
	fi, err := os.Lstat(filepath.Join(p, ".git"))
	if err != nil || !(fi.IsDir() || fi.Mode().IsRegular()) {
		return "not checked out in " + dir
	}
	// Never run git in a folder that is not the submodule's own top: it
	// would act on the repository around it.
	top, err := gitLine(ctx, p, "rev-parse", "--show-toplevel")
	if err != nil || !samePath(top, p) {
		return "not checked out in " + dir
	}
	if _, err := git(ctx, p, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return fmt.Sprintf("commit %s is not in %s (fetch it there)", short(commit), p)
	}
	return ""
}

// plainDir joins rel (slash-separated) to dir, and reports whether every
// folder on the way is a folder, not a symlink.
func plainDir(dir, rel string) (string, bool) {
	if !validModulePath(rel) {
		return "", false
	}
	p := dir
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return "", false
		}
	}
	return p, true
}

func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// relSlash is the slash path from folder from to to, both relative to the
// same root.
func relSlash(from, to string) string {
	r, err := filepath.Rel(filepath.FromSlash(from), filepath.FromSlash(to))
	if err != nil {
		return to
	}
	return filepath.ToSlash(r)
}

// moduleSections is the [submodule] sections a superproject's config
// gets for the submodules carried into it.
func moduleSections(mods []moduleCopy, gitDir string) string {
	var b strings.Builder
	for _, mc := range mods {
		if mc.parent == gitDir {
			fmt.Fprintf(&b, "[submodule %s]\n\turl = %s\n\tactive = true\n", gitQuoteValue(mc.name), gitQuoteValue(mc.url))
		}
	}
	return b.String()
}

// moduleConfig is the config of a carried submodule's git dir.
func moduleConfig(mc moduleCopy, mods []moduleCopy) string {
	var b strings.Builder
	b.WriteString("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n")
	fmt.Fprintf(&b, "\tworktree = %s\n", gitQuoteValue(relSlash(mc.gitDir, mc.path)))
	if mc.url != "" {
		fmt.Fprintf(&b, "[remote \"origin\"]\n\turl = %s\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n", gitQuoteValue(mc.url))
	}
	b.WriteString(moduleSections(mods, mc.gitDir))
	return b.String()
}

// writeModule writes a carried submodule into a base disk: its git dir
// (HEAD detached at the recorded commit, that commit's history in one
// pack, an index, refs/sandbar/base), the gitfile in its folder, and its
// files. tmp is a folder for the pack and index.
func (m *Mirror) writeModule(ctx context.Context, bw *baseWriter, mc moduleCopy, mods []moduleCopy, tmp string) error {
	packName, index, err := m.packAndIndex(ctx, mc.commit, tmp)
	if err != nil {
		return fmt.Errorf("submodule %s: %w", mc.path, err)
	}
	g := mc.gitDir
	for _, d := range []string{g, g + "/refs/heads", g + "/refs/tags", g + "/refs/sandbar", g + "/objects/info", g + "/objects/pack", g + "/info"} {
		if err := bw.dir(d); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, data string }{
		{g + "/HEAD", mc.commit + "\n"},
		{g + "/config", moduleConfig(mc, mods)},
		{g + "/refs/sandbar/base", mc.commit + "\n"},
		{mc.path + "/.git", "gitdir: " + relSlash(mc.path, g) + "\n"},
	} {
		if err := bw.file(f.name, 0o644, int64(len(f.data)), strings.NewReader(f.data)); err != nil {
			return err
		}
	}
	for _, f := range []struct{ from, to string }{
		{filepath.Join(tmp, packName+".pack"), g + "/objects/pack/" + packName + ".pack"},
		{filepath.Join(tmp, packName+".idx"), g + "/objects/pack/" + packName + ".idx"},
		{index, g + "/index"},
	} {
		if err := bw.copyFile(f.from, f.to, 0o444); err != nil {
			return err
		}
	}
	entries, err := m.treeEntries(ctx, mc.commit)
	if err != nil {
		return err
	}
	return m.writeTree(ctx, bw, mc.path+"/", entries, func(int) {})
}
