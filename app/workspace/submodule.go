package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Submodules travel as the rest of a session's work does, as data
// through Sandbar's repository (the Mirror), whose object store holds
// every submodule's objects beside the project's own:
//
//   - In: BuildBase copies the history of each submodule the source has
//     checked out (from the source's own copy, read-only) into the mirror,
//     pinned under refs/sandbar/modules/<key>/<commit>, and writes its
//     checkout into the base disk the way `git submodule update` lays it
//     out (.git/modules/<name>, a gitfile, core.worktree).
//   - Back: SaveScript sends a pack per checked-out submodule; ImportSave
//     takes each in with the same checks as the project's own pack.
//   - Merge: each submodule commit the session's branch records and the
//     source's copy lacks is fetched from the mirror into that copy, as
//     the branch of the same name.

// maxSubmoduleDepth bounds how deep submodules of submodules are followed.
const maxSubmoduleDepth = 8

// moduleRefs pins, in the mirror, the submodule commits carried in from
// the source: refs/sandbar/modules/<key of its path>/<commit>.
const moduleRefs = "refs/sandbar/modules/"

// gitlink is a submodule a commit records: a tree entry of type commit,
// with its name and URL from that commit's .gitmodules (read as data).
type gitlink struct {
	path   string // from the top of the clone, slash-separated
	rel    string // inside the repository that records it
	name   string // "" when .gitmodules has no usable entry for rel
	url    string // as .gitmodules gives it, relative ones resolved
	commit string
}

// gitlinks lists the submodules commit records, in the mirror. prefix is
// the path of commit's repository in the clone ("" or ending in "/"),
// parentURL its own URL, against which relative URLs are resolved.
func (m *Mirror) gitlinks(ctx context.Context, commit, prefix, parentURL string) ([]gitlink, error) {
	out, err := m.git(ctx, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit)
	if err != nil {
		return nil, tooManyFiles(fmt.Errorf("list the submodules of %s: %w", short(commit), err))
	}
	var links []gitlink
	for _, rec := range splitZ(out) {
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "commit" || !isHex(f[2]) {
			continue
		}
		links = append(links, gitlink{path: prefix + p, rel: p, commit: f[2]})
	}
	if len(links) == 0 {
		return nil, nil
	}
	// Names and URLs, from .gitmodules as data: --blob reads no include.
	cfg, err := m.git(ctx, "config", "-z", "--blob", commit+":.gitmodules", "--get-regexp", `^submodule\..*\.(path|url)$`)
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	names, urls := map[string]string{}, map[string]string{}
	for _, rec := range splitZ(cfg) {
		key, val, _ := strings.Cut(rec, "\n")
		rest, ok := strings.CutPrefix(key, "submodule.")
		if !ok {
			continue
		}
		if name, ok := strings.CutSuffix(rest, ".path"); ok && validModuleName(name) {
			if _, dup := names[val]; !dup {
				names[val] = name
			}
		} else if name, ok := strings.CutSuffix(rest, ".url"); ok {
			urls[name] = val
		}
	}
	for i := range links {
		if name, ok := names[links[i].rel]; ok {
			links[i].name = name
			links[i].url = resolveModuleURL(parentURL, urls[name])
		}
	}
	return links, nil
}

// validModuleName accepts a submodule name Sandbar may use as a folder
// under .git/modules: what git accepts, less anything odd.
func validModuleName(name string) bool {
	if name == "" || len(name) > 255 || strings.HasPrefix(name, "/") {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// validModulePath accepts the path of a submodule in a clone: relative,
// clean, slash-separated, no .git component, no control character.
func validModulePath(p string) bool {
	if p == "" || len(p) > 4096 || !fs.ValidPath(p) || p == "." {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	for _, part := range strings.Split(p, "/") {
		if strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// resolveModuleURL resolves a relative submodule URL ("./x", "../x")
// against the URL of the repository that records it, as git does for the
// common forms; an absolute one is returned as is, without any password.
func resolveModuleURL(parent, u string) string {
	if !strings.HasPrefix(u, "./") && !strings.HasPrefix(u, "../") {
		return redactURL(u)
	}
	if parent == "" {
		return u
	}
	base := strings.TrimSuffix(parent, "/")
	for {
		switch {
		case strings.HasPrefix(u, "./"):
			u = u[2:]
			continue
		case strings.HasPrefix(u, "../"):
			u = u[3:]
			i := strings.LastIndexAny(base, "/:")
			if i < 0 {
				base = "."
			} else if base[i] == ':' {
				base = base[:i+1]
			} else {
				base = base[:i]
			}
			continue
		}
		break
	}
	if strings.HasSuffix(base, ":") {
		return base + u
	}
	return base + "/" + u
}

// refKey makes a submodule's path into one ref name component: bytes
// other than letters, digits, '-' and '_' as %XX; a long one as its hash
// ("%%" never occurs in an escaped path).
func refKey(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > 200 {
		s := sha256.Sum256([]byte(p))
		return "%%" + hex.EncodeToString(s[:])
	}
	return b.String()
}

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

// errNoModuleCopy: a submodule the session committed in is not checked
// out in the source, so its commits have nowhere to go.
var errNoModuleCopy = errors.New("submodule not checked out")

// mergeModules brings into the source's submodule copies (root is the
// repository that records them) the commits that commit, in the mirror,
// records and that those copies lack: each is fetched from the mirror as
// the branch named branch (created, fast-forwarded, or overwritten when
// force), never touching the copy's working tree, index or HEAD. It
// recurses into submodules of submodules and returns the paths it brought
// commits into.
func mergeModules(ctx context.Context, root string, m *Mirror, commit, prefix, branch string, force bool, depth int) ([]string, error) {
	if depth >= maxSubmoduleDepth {
		return nil, nil
	}
	links, err := m.gitlinks(ctx, commit, prefix, "")
	if err != nil {
		return nil, err
	}
	ref := "refs/heads/" + branch
	var brought []string
	for _, l := range links {
		if !m.hasCommit(ctx, l.commit) {
			// Neither carried in nor sent back: a commit the source's
			// copy never had (and still may not), not the session's.
			continue
		}
		to, ok := plainDir(root, l.rel)
		checked := ok && sourceModule(ctx, root, l.rel, l.commit) == ""
		if checked {
			continue // the copy has it: nothing of the session's
		}
		if ctx.Err() != nil {
			return brought, ctx.Err()
		}
		if ok {
			if fi, err := os.Lstat(filepath.Join(to, ".git")); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
				if top, err := gitLine(ctx, to, "rev-parse", "--show-toplevel"); err == nil && samePath(top, to) {
					checked = true // checked out, without the commit
				}
			}
		}
		if !checked {
			if m.carriedCommit(ctx, l.commit) {
				continue // known from the source before: not the session's
			}
			return brought, fmt.Errorf("submodule %s is not checked out in %s, so the session's commit %s in it has nowhere to go (%w): run `git submodule update --init` there and merge again", l.path, root, short(l.commit), errNoModuleCopy)
		}
		if where, err := checkedOutAt(ctx, to, ref); err != nil {
			return brought, err
		} else if where != "" {
			return brought, fmt.Errorf("branch %s is checked out in submodule %s (%s), and merging must not touch its files (%w): switch it to another branch and merge again", branch, l.path, where, ErrCheckedOut)
		}
		spec := l.commit + ":" + ref
		if force {
			spec = "+" + spec
		}
		if err := fetchLocal(ctx, to, m.Dir, spec, branch); err != nil {
			return brought, fmt.Errorf("submodule %s: %w", l.path, err)
		}
		brought = append(brought, l.path)
		more, err := mergeModules(ctx, to, m, l.commit, l.path+"/", branch, force, depth+1)
		brought = append(brought, more...)
		if err != nil {
			return brought, err
		}
	}
	return brought, nil
}

// carriedCommit reports whether commit is in the history of a submodule
// commit carried in from the source (see carryModules).
func (m *Mirror) carriedCommit(ctx context.Context, commit string) bool {
	out, err := git(ctx, m.Dir, "for-each-ref", "--count=1", "--format=%(refname)", "--contains", commit, moduleRefs)
	return err == nil && strings.TrimSpace(out) != ""
}

// linkAt finds the submodule at p (a path from the top of the clone) that
// commit records, following submodules of submodules through commits the
// mirror holds; "" when there is none. seen keeps the lists already read,
// by commit and prefix.
func (m *Mirror) linkAt(ctx context.Context, commit, p string, seen map[string][]gitlink) (string, error) {
	prefix := ""
	for depth := 0; depth <= maxSubmoduleDepth; depth++ {
		links, ok := seen[commit+" "+prefix]
		if !ok {
			var err error
			if links, err = m.gitlinks(ctx, commit, prefix, ""); err != nil {
				return "", err
			}
			seen[commit+" "+prefix] = links
		}
		next := ""
		for _, l := range links {
			if l.path == p {
				return l.commit, nil
			}
			if strings.HasPrefix(p, l.path+"/") && m.hasCommit(ctx, l.commit) {
				next, prefix = l.commit, l.path+"/"
				break
			}
		}
		if next == "" {
			return "", nil
		}
		commit = next
	}
	return "", nil
}
