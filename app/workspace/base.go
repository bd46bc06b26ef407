package workspace

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sandbar/guest/image"
)

// AgentUID owns every file of a base disk: the guest runs the agent as
// the workspace's owner.
const AgentUID = 1000

// BaseRoot is the folder of a base disk that holds the clone; the guest
// mounts it at /workspace. (The disk's own root has lost+found, which
// the agent may not read and git would complain about.)
const BaseRoot = "repo"

// BaseOptions say which base disk to build.
type BaseOptions struct {
	// Source is the person's repository; the files IncludeLists
	// select are read from its working tree.
	Source Repo
	// IncludeLists is the text of the include lists (.sandbarinclude,
	// .worktreeinclude) the person trusted (RepoSettings.IncludeText);
	// nil includes nothing. The lists in the working tree are never read
	// here: they come with the repository, and an agent's merged commit
	// may have written them.
	IncludeLists []byte
	// Commit is the commit to check out, already in the mirror (see
	// Mirror.Fetch).
	Commit string
	// Dir is the folder base disks are kept in; BuildBase names the file.
	Dir string
	// Progress, if set, is called with Phase and Percent as the build goes.
	Progress func(Progress)
}

// BaseInfo describes a base disk.
type BaseInfo struct {
	// Path is the read-only ext4 image.
	Path string
	// Commit is the commit it holds checked out (HEAD, detached).
	Commit string
	// Reused: the disk was there already (same commit, same included files).
	Reused bool
	// Copied and Skipped are what the include lists brought over and left
	// behind, each with why.
	Copied, Skipped []string
	// Submodules lists the submodules (by path, nested ones too) carried
	// in from the source's checked-out copies; SkippedSubmodules says, for
	// each one left an empty folder, why and what to do.
	Submodules, SkippedSubmodules []string
	// LFSPointers lists the files Git LFS manages, which hold pointer text.
	LFSPointers []string
	// Size is the image's size in bytes.
	Size int64
	Took time.Duration
}

// PhaseBuilding is BuildBase's Progress phase (a fetch reports git's own
// meter lines, "Receiving objects" and the like).
const PhaseBuilding = "Building the workspace disk"

// BuildBase writes (or reuses) a read-only ext4 disk that holds a clone
// of the mirror at o.Commit: the working tree checked out, .git with the
// commit's whole history in one pack, an index, and the files of the
// source's working tree that o.IncludeLists select. Every session of the
// project at that commit boots on the same disk and writes only to its
// own copy-on-write layer inside its VM, so a new session costs neither
// time nor space that grows with the repository.
//
// It is built without git ever checking anything out: files come from
// the mirror's objects as they are stored (no filter, no attribute of
// the repository is applied), so nothing the repository configures runs.
// The disk's name says what it holds (commit and included files), and it
// is written to a temporary name and renamed, so a disk that exists is
// whole.
func (m *Mirror) BuildBase(ctx context.Context, o BaseOptions) (BaseInfo, error) {
	start := time.Now()
	progress := func(phase string, pct int) {
		if o.Progress != nil {
			o.Progress(Progress{Phase: phase, Percent: pct})
		}
	}
	if !isHex(o.Commit) || !m.hasCommit(ctx, o.Commit) {
		return BaseInfo{}, fmt.Errorf("build the workspace disk: %q is not a commit in Sandbar's repository %s", o.Commit, m.Dir)
	}
	inc, err := readIncluded(ctx, o.Source.Root, o.IncludeLists)
	if err != nil {
		return BaseInfo{}, err
	}
	mods, skippedMods, err := m.carryModules(ctx, o.Source.Root, o.Source.Remote, o.Commit)
	if err != nil {
		return BaseInfo{}, fmt.Errorf("carry the submodules of %s in: %w", o.Source.Root, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "sandbar base v1\x00%s\x00%s\x00", o.Commit, o.Source.Remote)
	for _, f := range inc.files {
		fmt.Fprintf(h, "%s\x00%o\x00%s\x00%x\x00", f.rel, f.mode, f.link, sha256.Sum256(f.data))
	}
	// The tree names the submodule commits; which of them are carried in
	// depends on the source's checkouts.
	for _, mc := range mods {
		fmt.Fprintf(h, "module\x00%s\x00%s\x00%s\x00%s\x00", mc.path, mc.name, mc.commit, mc.url)
	}
	name := "base-" + o.Commit[:12] + "-" + hex.EncodeToString(h.Sum(nil))[:12] + ".ext4"
	info := BaseInfo{Path: filepath.Join(o.Dir, name), Commit: o.Commit, Copied: inc.copied(), Skipped: inc.skipped, SkippedSubmodules: skippedMods}
	for _, mc := range mods {
		info.Submodules = append(info.Submodules, mc.path)
	}
	if fi, err := os.Lstat(info.Path); err == nil && fi.Mode().IsRegular() {
		info.Reused, info.Size, info.Took = true, fi.Size(), time.Since(start)
		info.LFSPointers = readLines(info.Path + ".lfs")
		return info, nil
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return BaseInfo{}, fmt.Errorf("create %s: %w", o.Dir, err)
	}
	tmpDir, err := os.MkdirTemp(o.Dir, ".build-")
	if err != nil {
		return BaseInfo{}, fmt.Errorf("build the workspace disk in %s: %w", o.Dir, err)
	}
	defer os.RemoveAll(tmpDir)

	progress(PhaseBuilding, 0)
	packName, index, err := m.packAndIndex(ctx, o.Commit, tmpDir)
	if err != nil {
		return BaseInfo{}, err
	}
	entries, err := m.treeEntries(ctx, o.Commit)
	if err != nil {
		return BaseInfo{}, err
	}
	progress(PhaseBuilding, 10)
	if info.LFSPointers, err = m.lfsPointers(ctx, o.Commit, index, entries); err != nil {
		return BaseInfo{}, err
	}

	out := filepath.Join(tmpDir, name)
	mtime := time.Now()
	err = image.TarToExt4(out, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		bw := &baseWriter{tw: tw, mtime: mtime, dirs: map[string]bool{}}
		if err := bw.dir("."); err != nil {
			return err
		}
		gitFiles := []struct {
			name string
			data []byte
		}{
			{".git/HEAD", []byte(o.Commit + "\n")},
			{".git/config", []byte(cloneConfig(o.Source.Remote) + moduleSections(mods, ".git"))},
			{".git/refs/sandbar/base", []byte(o.Commit + "\n")},
			{".git/info/exclude", []byte(excludeText(inc.copied()))},
		}
		for _, d := range []string{".git", ".git/refs", ".git/refs/heads", ".git/refs/tags", ".git/objects", ".git/objects/info", ".git/objects/pack", ".git/info"} {
			if err := bw.dir(d); err != nil {
				return err
			}
		}
		for _, f := range gitFiles {
			if err := bw.file(f.name, 0o644, int64(len(f.data)), strings.NewReader(string(f.data))); err != nil {
				return err
			}
		}
		for _, f := range []struct{ from, to string }{
			{filepath.Join(tmpDir, packName+".pack"), ".git/objects/pack/" + packName + ".pack"},
			{filepath.Join(tmpDir, packName+".idx"), ".git/objects/pack/" + packName + ".idx"},
			{index, ".git/index"},
		} {
			if err := bw.copyFile(f.from, f.to, 0o444); err != nil {
				return err
			}
		}
		if err := m.writeTree(ctx, bw, "", entries, func(done int) { progress(PhaseBuilding, 10+80*done/max(len(entries), 1)) }); err != nil {
			return err
		}
		for i, mc := range mods {
			dir := filepath.Join(tmpDir, fmt.Sprintf("module-%d", i))
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			if err := m.writeModule(ctx, bw, mc, mods, dir); err != nil {
				return err
			}
		}
		for _, f := range inc.files {
			if err := bw.included(f); err != nil {
				return err
			}
		}
		return tw.Close()
	})
	if err != nil {
		return BaseInfo{}, fmt.Errorf("build the workspace disk for %s: %w", short(o.Commit), err)
	}
	if err := os.Chmod(out, 0o444); err != nil {
		return BaseInfo{}, err
	}
	// What a reuse reports, beside the disk.
	if err := os.WriteFile(info.Path+".lfs", []byte(strings.Join(info.LFSPointers, "\n")), 0o600); err != nil {
		return BaseInfo{}, err
	}
	if err := os.Rename(out, info.Path); err != nil {
		return BaseInfo{}, fmt.Errorf("build the workspace disk: %w", err)
	}
	fi, err := os.Stat(info.Path)
	if err != nil {
		return BaseInfo{}, err
	}
	info.Size, info.Took = fi.Size(), time.Since(start)
	progress(PhaseDone, 100)
	return info, nil
}

// packAndIndex writes, in dir, commit's history as one pack (deltas
// reused, so this copies more than it computes) and an index of its tree,
// and returns the pack's name (pack-<hash>) and the index's path.
func (m *Mirror) packAndIndex(ctx context.Context, commit, dir string) (string, string, error) {
	out, err := gitInput(ctx, m.Dir, strings.NewReader(commit+"\n"), "pack-objects", "--revs", "--delta-base-offset", "--window=0", "-q", filepath.Join(dir, "pack"))
	if err != nil {
		return "", "", fmt.Errorf("pack the history of %s: %w", short(commit), err)
	}
	if !isHex(strings.TrimSpace(out)) {
		return "", "", fmt.Errorf("pack the history of %s: git printed %q", short(commit), out)
	}
	index := filepath.Join(dir, "index")
	if _, err := gitEnvInput(ctx, m.Dir, []string{"GIT_INDEX_FILE=" + index}, nil, "read-tree", "--end-of-options", commit); err != nil {
		return "", "", fmt.Errorf("index the tree of %s: %w", short(commit), err)
	}
	return "pack-" + strings.TrimSpace(out), index, nil
}

// cloneConfig is the .git/config of a session's clone: the source's
// remote as origin (without any password, see Resolve), so an agent given
// a token can push.
func cloneConfig(remote string) string {
	var b strings.Builder
	b.WriteString("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n")
	if remote != "" {
		fmt.Fprintf(&b, "[remote \"origin\"]\n\turl = %s\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n", gitQuoteValue(remote))
	}
	return b.String()
}

// gitQuoteValue makes s one double-quoted git config value.
func gitQuoteValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", "", "\r", "", "\x00", "")
	return `"` + r.Replace(s) + `"`
}

func excludeText(copied []string) string {
	var b strings.Builder
	b.WriteString("# Files Sandbar copied from .sandbarinclude / .worktreeinclude:\n")
	for _, c := range copied {
		b.WriteString("/" + escapeIgnore(c) + "\n")
	}
	return b.String()
}

// lfsPointers lists the files of commit that Git LFS manages, by the
// commit's own .gitattributes (read as data from index, an index of
// commit's tree, never applied).
func (m *Mirror) lfsPointers(ctx context.Context, commit, index string, es []treeEntry) ([]string, error) {
	out, err := git(ctx, m.Dir, "grep", "-l", "-z", "--no-color", "-I", "-e", "filter=lfs", commit, "--", "*.gitattributes", ".gitattributes")
	if err != nil || out == "" {
		return nil, nil
	}
	var paths strings.Builder
	for _, e := range es {
		if e.kind == "blob" {
			paths.WriteString(e.path + "\x00")
		}
	}
	attr, err := gitEnvInput(ctx, m.Dir, []string{"GIT_INDEX_FILE=" + index}, strings.NewReader(paths.String()), "check-attr", "--cached", "-z", "--stdin", "filter")
	if err != nil {
		return nil, fmt.Errorf("read the attributes of %s: %w", short(commit), err)
	}
	recs := splitZ(attr)
	var lfs []string
	for i := 0; i+2 < len(recs); i += 3 {
		if recs[i+2] == "lfs" {
			lfs = append(lfs, recs[i])
		}
	}
	return lfs, nil
}

// readLines reads a small list Sandbar wrote, one item a line.
func readLines(p string) []string {
	b, err := readRegular(p, 16<<20)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\n")
}

// readRegular reads a regular file of at most limit bytes, refusing
// anything else: a symlink (not followed), a FIFO (it would block), a
// device (it would not end).
func readRegular(p string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("larger than %d bytes", limit)
	}
	return data, err
}
