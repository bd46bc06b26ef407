package workspace

import (
	"context"
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
