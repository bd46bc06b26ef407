package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
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

// A merge writes into the person's repository and into its submodules,
// and which submodules a branch records is the agent's to say: a gitlink
// at any path, with any .gitmodules. So merge never takes a path from the
// agent's commit as a repository to run git in. It writes into a
// submodule only when the person's repository itself has one there:
//
//   - the repository that holds it (the superproject, or for a nested
//     one the submodule that holds it) records a gitlink at exactly that
//     path in its own HEAD or index, read from that repository;
//   - every folder on the way to it is a folder, never a symlink;
//   - its .git is a gitfile (not a symlink, not a folder) naming a git
//     dir inside the holding repository's own modules folder (where
//     `git submodule` keeps them, .git/modules/<name>), reached without a
//     symlink.
//
// git then runs there with that git dir named outright (--git-dir,
// --work-tree), so nothing else on the host is looked up. An ignored
// clone nested in the working tree, an agent's worktree under it, a
// folder whose .git points at a repository elsewhere: none is a
// submodule by these rules, whatever the agent's commit says.
//
// What a person would expect when the rules say no:
//
//   - The person's repository records no submodule there (the agent
//     added one, or named some nested folder): there is nothing of the
//     person's for those commits to go into, and the branch does not
//     need them anywhere to be merged; they stay in the session (in
//     Sandbar's repository), and MergeResult.SkippedSubmodules says so.
//   - It records one but has not checked it out (no .git in its folder):
//     the person has that submodule and will want the session's commits
//     in it when they check the branch out, so the merge stops and says
//     to run `git submodule update --init` (the branch is not moved).
//   - It records one but the folder is not a checkout git keeps as this
//     repository's submodule (a symlink on the way, a .git folder of its
//     own, a gitfile pointing elsewhere): merge will not write there; the
//     commits stay in the session, and SkippedSubmodules says why and
//     what would make it one.
//
// Commits known from the source before (carried in with a base disk)
// are not the session's, and are neither merged nor reported.

// moduleRepo is a repository merge may write into: the person's
// superproject (gitDir "": git finds it from dir, as for any command in
// the person's repository) or one of its submodules, by its git dir.
type moduleRepo struct {
	dir    string // its working tree
	gitDir string // its git dir, absolute; "" for the superproject
}

// git runs git in r, naming r's git dir and working tree when it is a
// submodule.
func (r moduleRepo) git(ctx context.Context, args ...string) (string, error) {
	if r.gitDir != "" {
		args = append([]string{"--git-dir=" + r.gitDir, "--work-tree=" + r.dir}, args...)
	}
	return git(ctx, r.dir, args...)
}

// recordedLinks lists the paths at which r records a gitlink, in its
// HEAD or its index.
func recordedLinks(ctx context.Context, r moduleRepo) (map[string]bool, error) {
	recorded := map[string]bool{}
	tree, err := r.git(ctx, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("list the submodules of %s: %w", r.dir, err)
	}
	for _, rec := range splitZ(tree) {
		meta, p, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[0] == "160000" && f[1] == "commit" {
			recorded[p] = true
		}
	}
	index, err := r.git(ctx, "ls-files", "-s", "-z")
	if err != nil {
		return nil, fmt.Errorf("list the submodules in the index of %s: %w", r.dir, err)
	}
	for _, rec := range splitZ(index) {
		meta, p, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[0] == "160000" {
			recorded[p] = true
		}
	}
	return recorded, nil
}

// modulesDirs is where r keeps its submodules' git dirs: for the
// superproject, `git rev-parse --git-path modules` (per worktree) and the
// common dir's modules folder; for a submodule, its git dir's.
func modulesDirs(ctx context.Context, r moduleRepo) ([]string, error) {
	if r.gitDir != "" {
		return []string{filepath.Join(r.gitDir, "modules")}, nil
	}
	out, err := r.git(ctx, "rev-parse", "--git-path", "modules", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("find the submodules folder of %s: %w", r.dir, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("find the submodules folder of %s: git rev-parse said %q", r.dir, out)
	}
	dirs := []string{lines[0], filepath.Join(lines[1], "modules")}
	for i, d := range dirs {
		if !filepath.IsAbs(d) {
			dirs[i] = filepath.Join(r.dir, d)
		}
		dirs[i] = filepath.Clean(dirs[i])
	}
	return dirs, nil
}

// moduleState is what ownModule found at a submodule's folder.
type moduleState int

const (
	moduleOwn     moduleState = iota // a checkout git keeps as the holder's submodule
	moduleAbsent                     // no folder, or no .git in it: not checked out
	moduleRefused                    // something merge must not write into
)

// ownModule finds the submodule at rel (slash-separated) of the holding
// repository parent, whose submodules' git dirs live in one of mods, by
// the rules above. It returns the submodule, or why not.
func ownModule(parent moduleRepo, mods []string, rel string) (moduleRepo, moduleState, string) {
	if !validModulePath(rel) {
		return moduleRepo{}, moduleRefused, "not a path a submodule can have"
	}
	dir := parent.dir
	for _, part := range strings.Split(rel, "/") {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return moduleRepo{}, moduleAbsent, ""
		case err != nil:
			return moduleRepo{}, moduleRefused, fmt.Sprintf("%s cannot be read (%v)", dir, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return moduleRepo{}, moduleRefused, fmt.Sprintf("%s is a symlink, and merge never writes through one", dir)
		case !fi.IsDir():
			return moduleRepo{}, moduleRefused, fmt.Sprintf("%s is not a folder", dir)
		}
	}
	gitfile := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitfile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return moduleRepo{}, moduleAbsent, ""
	case err != nil:
		return moduleRepo{}, moduleRefused, fmt.Sprintf("%s cannot be read (%v)", gitfile, err)
	case fi.IsDir():
		return moduleRepo{}, moduleRefused, fmt.Sprintf("its repository is in %s, not kept by %s as a submodule (make it one with `git submodule absorbgitdirs -- %s` there and merge again)", gitfile, parent.dir, rel)
	case !fi.Mode().IsRegular():
		return moduleRepo{}, moduleRefused, fmt.Sprintf("%s is not a file naming the submodule's git dir", gitfile)
	}
	target, err := readGitfile(gitfile)
	if err != nil {
		return moduleRepo{}, moduleRefused, err.Error()
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	target = filepath.Clean(target)
	for _, base := range mods {
		bases := []string{base}
		if real, err := filepath.EvalSymlinks(base); err == nil && real != base {
			bases = append(bases, real)
		}
		for _, b := range bases {
			if under(b, target) {
				return moduleRepo{dir: dir, gitDir: target}, moduleOwn, ""
			}
		}
	}
	return moduleRepo{}, moduleRefused, fmt.Sprintf("%s names the git dir %s, which is not a submodule %s keeps in %s, and merge writes into no repository elsewhere", gitfile, target, parent.dir, mods[0])
}

// under reports whether dir is a git dir inside base, each folder from
// base down to it a folder and not a symlink (base included).
func under(base, dir string) bool {
	rel, err := filepath.Rel(base, dir)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return false
	}
	p := base
	for _, part := range append([]string{""}, strings.Split(rel, string(filepath.Separator))...) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	fi, err := os.Lstat(filepath.Join(dir, "HEAD"))
	return err == nil && fi.Mode().IsRegular()
}

// readGitfile reads the git dir a gitfile ("gitdir: <path>") names.
func readGitfile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("%s cannot be read (%v)", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%s cannot be read (%v)", name, err)
	}
	line := strings.TrimRight(string(b), "\r\n")
	target, ok := strings.CutPrefix(line, "gitdir: ")
	if len(b) > 4096 || !ok || target == "" || strings.ContainsAny(target, "\x00\n") {
		return "", fmt.Errorf("%s is not a gitfile (\"gitdir: <path>\")", name)
	}
	return target, nil
}

// mergeModules brings into the person's submodules (parent is the
// repository that holds them) the commits that commit, in the mirror,
// records and that those submodules lack: each is fetched from the mirror
// as the branch named branch (created, fast-forwarded, or overwritten
// when force), never touching the submodule's working tree, index or
// HEAD. Only submodules the person's repository has by the rules above
// are written; the others' session commits are listed in skipped, one
// line each with why. It recurses into submodules of submodules and
// returns the paths it brought commits into.
func mergeModules(ctx context.Context, parent moduleRepo, m *Mirror, commit, prefix, branch string, force bool, depth int) (brought, skipped []string, err error) {
	if depth >= maxSubmoduleDepth {
		return nil, nil, nil
	}
	links, err := m.gitlinks(ctx, commit, prefix, "")
	if err != nil || len(links) == 0 {
		return nil, nil, err
	}
	// The person's side, read once and only if a link needs it.
	var recorded map[string]bool
	var mods []string
	ref := "refs/heads/" + branch
	// The agent chooses the gitlinks, as many as it likes, often at one
	// commit: each commit is looked up once.
	have, carried := map[string]bool{}, map[string]bool{}
	cached := func(seen map[string]bool, c string, look func(context.Context, string) bool) bool {
		v, ok := seen[c]
		if !ok {
			v = look(ctx, c)
			seen[c] = v
		}
		return v
	}
	isCarried := func(c string) bool { return cached(carried, c, m.carriedCommit) }
	for _, l := range links {
		if ctx.Err() != nil {
			return brought, skipped, ctx.Err()
		}
		if !cached(have, l.commit, m.hasCommit) {
			// Neither carried in nor sent back: a commit the source's
			// copy never had (and still may not), not the session's.
			continue
		}
		if recorded == nil {
			if recorded, err = recordedLinks(ctx, parent); err != nil {
				return brought, skipped, err
			}
			if mods, err = modulesDirs(ctx, parent); err != nil {
				return brought, skipped, err
			}
		}
		if !recorded[l.rel] {
			if !isCarried(l.commit) {
				skipped = append(skipped, fmt.Sprintf("%s: not a submodule of %s (neither its HEAD nor its index records one there), so its commits stay in the session", showPath(l.path), parent.dir))
			}
			continue
		}
		sub, state, why := ownModule(parent, mods, l.rel)
		switch {
		case state == moduleOwn:
		case isCarried(l.commit):
			continue // known from the source before: not the session's
		case state == moduleAbsent:
			return brought, skipped, fmt.Errorf("submodule %s is not checked out in %s, so the session's commit %s in it has nowhere to go (%w): run `git submodule update --init` there and merge again", l.path, parent.dir, short(l.commit), errNoModuleCopy)
		default:
			skipped = append(skipped, fmt.Sprintf("%s: %s, so its commits stay in the session", showPath(l.path), why))
			continue
		}
		if _, err := sub.git(ctx, "cat-file", "-e", l.commit+"^{commit}"); err == nil {
			continue // the copy has it: nothing of the session's
		} else if ctx.Err() != nil {
			return brought, skipped, ctx.Err()
		}
		if where, err := checkedOutIn(ctx, sub, ref); err != nil {
			return brought, skipped, err
		} else if where != "" {
			return brought, skipped, fmt.Errorf("branch %s is checked out in submodule %s (%s), and merging must not touch its files (%w): switch it to another branch and merge again", branch, l.path, where, ErrCheckedOut)
		}
		spec := l.commit + ":" + ref
		if force {
			spec = "+" + spec
		}
		if err := fetchInto(ctx, sub, m.Dir, spec, branch); err != nil {
			return brought, skipped, fmt.Errorf("submodule %s: %w", l.path, err)
		}
		brought = append(brought, l.path)
		more, skip, err := mergeModules(ctx, sub, m, l.commit, l.path+"/", branch, force, depth+1)
		brought, skipped = append(brought, more...), append(skipped, skip...)
		if err != nil {
			return brought, skipped, err
		}
	}
	return brought, skipped, nil
}

// showPath is a path from the agent's commit as a person may read it in
// a terminal: quoted, with escapes, if it holds anything not printable.
func showPath(p string) string {
	if strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(p)
	}
	return p
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
