package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// neutralArgs are the `-c` settings under which git may check out the
// session's trees in the person's repository without running, reading or
// contacting anything those trees name.
//
// A checkout runs programs through three doors. Hooks (post-checkout,
// post-merge, reference-transaction, git-lfs's own) are shut for every
// command by core.hooksPath=/dev/null (see command). Submodules are not
// recursed into. The third door is the attributes: the incoming trees'
// .gitattributes (read from the index being checked out, at any depth,
// macros included) pick a filter driver per file, and git then runs that
// driver's clean, smudge or process command from the person's config;
// with git-lfs installed globally that is git-lfs, which reads the
// tree's .lfsconfig and contacts the URL in it. Attributes cannot be
// turned off in git older than 2.40 (--attr-source), and parsing every
// .gitattributes of both trees for driver names misses what the person's
// own attribute files name. But a driver name that no config defines
// runs nothing (git finds no driver), so it is enough to blank every
// driver the config defines: `git config --get-regexp '^filter\.'` lists
// them from the person's system, global and repository config, the only
// places a driver can come from, and each gets empty clean, smudge and
// process commands (git runs no empty command) and required=false (so a
// driver that did nothing is not an error). lfs is blanked whether or
// not it is listed. Files under a filter are then written as stored in
// git, as `git lfs` writes them with GIT_LFS_SKIP_SMUDGE, and the index
// records exactly that, so nothing looks changed.
func neutralArgs(ctx context.Context, root string) ([]string, error) {
	out, err := git(ctx, root, "config", "-z", "--name-only", "--get-regexp", `^filter\.`)
	if err != nil && exitCode(err) != 1 {
		return nil, fmt.Errorf("read the filters in the git config of %s: %w", root, err)
	}
	drivers := []string{"lfs"}
	for _, key := range splitZ(out) {
		key = strings.TrimRight(key, "\n")
		i := strings.LastIndexByte(key, '.')
		if i <= len("filter.") {
			continue
		}
		d := key[len("filter."):i]
		if strings.ContainsAny(d, "=\n") {
			// `-c` splits at the first '='; GIT_CONFIG_COUNT, which does
			// not, needs git 2.31.
			return nil, fmt.Errorf("the git config of %s defines a filter named %q, which Sandbar cannot switch off for the merge: rename it, or create the branch instead and merge it yourself", root, d)
		}
		if !slices.Contains(drivers, d) {
			drivers = append(drivers, d)
		}
	}
	args := []string{"-c", "submodule.recurse=false", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}
	for _, d := range drivers {
		for _, k := range []string{"clean=", "smudge=", "process=", "required=false"} {
			args = append(args, "-c", "filter."+d+"."+k)
		}
	}
	return args, nil
}

// treeGuard is what a merge into the person's working tree may change,
// as it was before: HEAD, every ref, ORIG_HEAD, the index file's bytes,
// the status of tracked files and, for every path the merge writes or
// removes and each folder above one, what was there, tracked or not,
// ignored or not (bytes, mode, symlink target). A checkout writes nothing
// else (git's two-tree merge touches only the paths that differ), so
// that is the whole of what a failed one can leave. check compares it
// with now, byte for byte, and restore puts back what differs.
type treeGuard struct {
	root    string
	neutral []string
	before  repoState
	busy    string                // the operation half done in root ("a rebase"), "" for none
	files   map[string]*pathState // git paths from root, of files and the folders above them
}

// repoState is the repository's own state that a guard keeps: HEAD, the
// refs, git's index and ORIG_HEAD files, and the status of tracked files.
type repoState struct {
	head   string // HEAD's commit and the ref it names, a line each
	refs   string // every ref file of the common git dir, with its bytes
	status string // git status --porcelain=v2 -z --untracked-files=no
	index  pathFile
	orig   pathFile
}

// pathFile is a file of git's (the index, ORIG_HEAD) by path and bytes.
type pathFile struct {
	path   string
	exists bool
	data   []byte
}

// pathState is what was at one path of the working tree.
type pathState struct {
	exists bool
	mode   fs.FileMode
	leaf   bool   // a path the merge writes, not only a folder above one
	data   []byte // a regular file's bytes, when leaf
	link   string // a symlink's target
}

// maxGuardBytes bounds the bytes of the working tree's files a guard
// keeps: those at paths the merge would write, so it is what the merge
// itself reads to check them.
const maxGuardBytes = 512 << 20

// guardTree takes a treeGuard of root before a checkout that writes the
// given paths (slash-separated, from root).
func guardTree(ctx context.Context, root string, neutral, paths []string) (*treeGuard, error) {
	g := &treeGuard{root: root, neutral: neutral, files: map[string]*pathState{}}
	var err error
	if g.before, g.busy, err = g.read(ctx); err != nil {
		return nil, err
	}
	// The paths first (a file the merge removes may be a folder above one
	// it writes), then the folders above them.
	var total int64
	for _, p := range paths {
		st, n, err := readPathState(root, p, true)
		if err != nil {
			return nil, fmt.Errorf("read %s before merging: %w", p, err)
		}
		if total += n; total > maxGuardBytes {
			return nil, fmt.Errorf("the files the merge would change in %s hold more than %s: create the branch instead and merge it yourself", root, sizeStr(maxGuardBytes))
		}
		g.files[p] = st
	}
	for _, p := range paths {
		for q := pathDir(p); q != ""; q = pathDir(q) {
			if _, ok := g.files[q]; ok {
				break
			}
			st, _, err := readPathState(root, q, false)
			if err != nil {
				return nil, fmt.Errorf("read %s before merging: %w", q, err)
			}
			g.files[q] = st
		}
	}
	return g, nil
}

// gitPaths is `git rev-parse --git-path` of each name, made absolute.
func gitPaths(ctx context.Context, root string, names ...string) ([]string, error) {
	args := []string{"rev-parse"}
	for _, n := range names {
		args = append(args, "--git-path", n)
	}
	out, err := gitLine(ctx, root, args...)
	if err != nil {
		return nil, fmt.Errorf("read the state of %s: %w", root, err)
	}
	ps := strings.Split(out, "\n")
	if len(ps) != len(names) {
		return nil, fmt.Errorf("read the state of %s: git printed %q", root, out)
	}
	for i, p := range ps {
		if !filepath.IsAbs(p) {
			ps[i] = filepath.Join(root, p)
		}
	}
	return ps, nil
}

// opPaths are the files of git's that say an operation is half done, and
// opNames what each says (see operationIn).
var (
	opPaths = []string{"MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD"}
	opNames = []string{"a merge", "a rebase", "a rebase", "a cherry-pick", "a revert"}
)

// operationIn names the operation half done, given the absolute paths
// of opPaths; "" for none.
func operationIn(paths []string) string {
	for i, p := range paths {
		if _, err := os.Lstat(p); err == nil && i < len(opNames) {
			return opNames[i]
		}
	}
	return ""
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func readPathFile(p string) (pathFile, error) {
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		return pathFile{path: p, exists: true, data: b}, nil
	case errors.Is(err, fs.ErrNotExist):
		return pathFile{path: p}, nil
	}
	return pathFile{}, fmt.Errorf("read %s: %w", p, err)
}

// readPathState reads what is at rel (slash-separated) under root: a
// file's bytes only when leaf (a folder above a path is kept as a folder,
// not its contents). Only through plain folders: where one above rel is
// a symlink (or not a folder), nothing is at rel, and nothing is read,
// or later removed, where the link points (outside the repository, it
// may be).
func readPathState(root, rel string, leaf bool) (*pathState, int64, error) {
	if !plainParents(root, rel) {
		return &pathState{leaf: leaf}, 0, nil
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &pathState{leaf: leaf}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	st := &pathState{exists: true, mode: fi.Mode(), leaf: leaf}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		st.link, err = os.Readlink(p)
	case fi.Mode().IsRegular() && leaf:
		st.data, err = os.ReadFile(p)
	}
	return st, int64(len(st.data)), err
}

// plainParents reports whether every folder above rel under root is a
// folder, not a symlink to one.
func plainParents(root, rel string) bool {
	dir := root
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// read reads the repository's state: one rev-parse for HEAD and git's
// paths, the refs from the files that hold them (no git command), and the
// status with the session's filters off (a failed checkout may have left
// its .gitattributes). busy names an operation half done.
func (g *treeGuard) read(ctx context.Context) (st repoState, busy string, err error) {
	args := []string{"rev-parse", "--git-common-dir", "--git-path", "index", "--git-path", "ORIG_HEAD"}
	for _, p := range opPaths {
		args = append(args, "--git-path", p)
	}
	out, err := gitLine(ctx, g.root, append(args, "HEAD", "--symbolic-full-name", "HEAD")...)
	if err != nil {
		return st, "", fmt.Errorf("read the state of %s: %w", g.root, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 3+len(opPaths)+2 {
		return st, "", fmt.Errorf("read the state of %s: git printed %q", g.root, out)
	}
	for i := range 3 + len(opPaths) {
		if !filepath.IsAbs(lines[i]) {
			lines[i] = filepath.Join(g.root, lines[i])
		}
	}
	st.head = strings.Join(lines[3+len(opPaths):], "\n")
	busy = operationIn(lines[3 : 3+len(opPaths)])
	if st.refs, err = readRefs(lines[0]); err != nil {
		return st, "", err
	}
	if st.index, err = readPathFile(lines[1]); err != nil {
		return st, "", err
	}
	if st.orig, err = readPathFile(lines[2]); err != nil {
		return st, "", err
	}
	if st.status, err = git(ctx, g.root, append(slices.Clip(g.neutral), "status", "--porcelain=v2", "-z", "--untracked-files=no")...); err != nil {
		return st, "", fmt.Errorf("read the status of %s: %w", g.root, err)
	}
	return st, busy, nil
}

// readRefs is every file that holds a ref in the common git dir (loose
// refs, packed-refs, a reftable's tables), by path, with its bytes:
// reading them is cheaper than starting git for-each-ref, and sees
// symbolic refs and a reftable the same way.
func readRefs(common string) (string, error) {
	var b strings.Builder
	add := func(p string) error {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		rel, _ := filepath.Rel(common, p)
		b.WriteString(rel + "\x00" + string(data) + "\x00")
		return nil
	}
	if err := add(filepath.Join(common, "packed-refs")); err != nil {
		return "", err
	}
	for _, dir := range []string{"refs", "reftable"} {
		err := filepath.WalkDir(filepath.Join(common, dir), func(p string, d fs.DirEntry, err error) error {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case err != nil:
				return err
			case d.Type().IsRegular():
				return add(p)
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("read the refs of %s: %w", common, err)
		}
	}
	return b.String(), nil
}

// tracked lists the tracked files the status the guard took shows
// changed; the merge refuses those (see cleanTree).
func (g *treeGuard) tracked() []string {
	var files []string
	recs := splitZ(g.before.status)
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		switch {
		case strings.HasPrefix(r, "1 "):
			if _, p, ok := cutN(r, 8); ok {
				files = append(files, p)
			}
		case strings.HasPrefix(r, "2 "):
			if _, p, ok := cutN(r, 9); ok {
				files = append(files, p)
			}
			i++ // the name it came from
		case strings.HasPrefix(r, "u "):
			if _, p, ok := cutN(r, 10); ok {
				files = append(files, p)
			}
		}
	}
	return files
}

// cutN splits s after its first n space-separated fields.
func cutN(s string, n int) (head, rest string, ok bool) {
	i := 0
	for k := 0; k < n; k++ {
		j := strings.IndexByte(s[i:], ' ')
		if j < 0 {
			return "", "", false
		}
		i += j + 1
	}
	return s[:i], s[i:], true
}

// check compares the repository with the guard and returns what differs,
// one description each; none when it is as it was.
func (g *treeGuard) check(ctx context.Context) ([]string, error) {
	var diffs []string
	ps := g.paths()
	slices.Reverse(ps) // top first: .gitattributes before deep/new/file
	for _, p := range ps {
		was := g.files[p]
		now, _, err := readPathState(g.root, p, was.leaf)
		if err != nil {
			return nil, fmt.Errorf("read %s after the merge: %w", p, err)
		}
		if !now.same(was) {
			diffs = append(diffs, p)
		}
	}
	now, _, err := g.read(ctx)
	if err != nil {
		return nil, err
	}
	was := g.before
	for _, f := range [][2]pathFile{{was.index, now.index}, {was.orig, now.orig}} {
		if f[0].exists != f[1].exists || !bytes.Equal(f[0].data, f[1].data) {
			diffs = append(diffs, "the file "+f[0].path)
		}
	}
	if now.head != was.head {
		diffs = append(diffs, "HEAD")
	}
	if now.refs != was.refs {
		diffs = append(diffs, "the branches and tags")
	}
	if now.status != was.status {
		diffs = append(diffs, "the status of the working tree")
	}
	return diffs, nil
}

func (s *pathState) same(o *pathState) bool {
	if s.exists != o.exists {
		return false
	}
	if !s.exists {
		return true
	}
	if s.mode.Type() != o.mode.Type() {
		return false
	}
	if s.mode.IsDir() {
		return true
	}
	return s.mode.Perm() == o.mode.Perm() && s.link == o.link && bytes.Equal(s.data, o.data)
}

// paths are the guarded paths, deepest first (files before the folders
// that hold them).
func (g *treeGuard) paths() []string {
	ps := make([]string, 0, len(g.files))
	for p := range g.files {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if a, b := strings.Count(ps[i], "/"), strings.Count(ps[j], "/"); a != b {
			return a > b
		}
		return ps[i] < ps[j]
	})
	return ps
}

// restore puts the index, ORIG_HEAD, HEAD's branch and every guarded path
// back as they were, and returns what it could not.
func (g *treeGuard) restore(ctx context.Context) []string {
	var left []string
	for _, f := range []pathFile{g.before.index, g.before.orig} {
		if err := putPathFile(f); err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", f.path, err))
		}
	}
	// Files first, deepest first, so that folders the merge made are
	// empty when their turn comes; then folders that were there, top
	// first, before the files that go back into them.
	ps := g.paths()
	for _, p := range ps {
		was := g.files[p]
		full := filepath.Join(g.root, filepath.FromSlash(p))
		now, _, err := readPathState(g.root, p, was.leaf)
		if err == nil && now.same(was) {
			continue
		}
		// now.exists says the path is there below plain folders: under
		// a folder the merge made a symlink, it is not, and nothing is
		// removed through the link (the link itself goes in its turn).
		if now != nil && now.exists && (!was.exists || !(was.mode.IsDir() && now.mode.IsDir())) {
			// A folder goes only when empty: anything left in it is not
			// the merge's, and is reported.
			if err = os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				left = append(left, fmt.Sprintf("%s (%v)", full, err))
			}
		}
	}
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		was := g.files[p]
		if !was.exists {
			continue
		}
		full := filepath.Join(g.root, filepath.FromSlash(p))
		if now, _, err := readPathState(g.root, p, was.leaf); err == nil && now.same(was) {
			continue
		}
		if !plainParents(g.root, p) {
			left = append(left, fmt.Sprintf("%s (a folder above it is not a plain folder)", full))
			continue
		}
		var err error
		switch {
		case was.mode.IsDir():
			err = os.Mkdir(full, was.mode.Perm())
		case was.mode&fs.ModeSymlink != 0:
			err = os.Symlink(was.link, full)
		case was.mode.IsRegular():
			err = writeFileMode(full, was.data, was.mode.Perm())
		}
		if err != nil && !(was.mode.IsDir() && errors.Is(err, fs.ErrExist)) {
			left = append(left, fmt.Sprintf("%s (%v)", full, err))
		}
	}
	// HEAD and its branch: a failed fast-forward moves neither, but if
	// it did, they go back where they were.
	if sym, commit := g.headParts(); strings.HasPrefix(sym, "refs/heads/") {
		if now, err := gitLine(ctx, g.root, "rev-parse", "-q", "--verify", sym); err != nil || now != commit {
			if _, err := git(ctx, g.root, "update-ref", "-m", "sandbar: undo a failed merge", sym, commit); err != nil {
				left = append(left, fmt.Sprintf("branch %s (%v)", strings.TrimPrefix(sym, "refs/heads/"), err))
			}
		}
	}
	return left
}

func putPathFile(f pathFile) error {
	now, err := readPathFile(f.path)
	if err != nil {
		return err
	}
	if now.exists == f.exists && bytes.Equal(now.data, f.data) {
		return nil
	}
	if !f.exists {
		return os.Remove(f.path)
	}
	return writeFileMode(f.path, f.data, 0o644)
}

// writeFileMode writes data to p through a temporary file beside it, so
// that p is either as it was or whole.
func writeFileMode(p string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".sandbar-restore-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// branch is the branch HEAD was on when the guard was taken ("" when
// detached) and its commit.
func (g *treeGuard) branch() (branch, commit string) {
	sym, commit := g.headParts()
	if !strings.HasPrefix(sym, "refs/heads/") {
		return "", commit
	}
	return strings.TrimPrefix(sym, "refs/heads/"), commit
}

// headParts splits g.head: the ref HEAD names ("HEAD" when detached)
// and its commit.
func (g *treeGuard) headParts() (sym, commit string) {
	commit, sym, _ = strings.Cut(strings.TrimSpace(g.before.head), "\n")
	return sym, commit
}

// failed is the error of a checkout that failed (git's words why): the
// repository is checked against the guard, what differs is put back and
// checked again, and the error says which of "changed nothing",
// "changed nothing once Sandbar put back …" or "left … changed" holds.
// The check runs even when ctx is done, under a deadline of its own.
func (g *treeGuard) failed(ctx context.Context, into, why string, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), GitDeadline/60)
	defer cancel()
	head := fmt.Sprintf("git refused to bring the session's work into %s (%s)", into, why)
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		head = fmt.Sprintf("bringing the session's work into %s was stopped", into)
	}
	diffs, err := g.check(ctx)
	if err != nil {
		return fmt.Errorf("%s, and Sandbar could not check what it left in %s (%v): look at `git status` there before working on", head, g.root, err)
	}
	if len(diffs) == 0 {
		return &mergeFailed{msg: head + ", and changed nothing: fix that and merge again, or create the branch instead", cause: cause}
	}
	left := g.restore(ctx)
	again, err := g.check(ctx)
	if err == nil && len(again) == 0 && len(left) == 0 {
		return &mergeFailed{msg: fmt.Sprintf("%s, and changed nothing once Sandbar had put back what it left (%s): fix that and merge again, or create the branch instead", head, list(diffs, ", ")), cause: cause}
	}
	what := left
	if err != nil {
		what = append(what, fmt.Sprintf("(the check after putting back failed: %v)", err))
	}
	for _, d := range again {
		if !slices.ContainsFunc(left, func(l string) bool { return strings.Contains(l, d) }) {
			what = append(what, d)
		}
	}
	return &mergeFailed{msg: fmt.Sprintf("%s, and left these changed in %s, which Sandbar could not put back: %s: compare them with `git status` and `git diff` there and put them right before working on", head, g.root, strings.Join(what, "; ")), cause: cause}
}

// mergeFailed is a checkout's failure as the person reads it, wrapping
// git's error.
type mergeFailed struct {
	msg   string
	cause error
}

func (e *mergeFailed) Error() string { return e.msg }
func (e *mergeFailed) Unwrap() error { return e.cause }

// ErrSteering: the session's work changes files that steer tools on the
// person's machine (see steeringRules), and the person has not accepted
// them.
var ErrSteering = errors.New("the session changes files that steer your tools")

// SteeringError is MergeInto's refusal of steering files not accepted.
type SteeringError struct {
	// ID is the session's, Into the branch and Root the repository
	// merged into.
	ID, Into, Root string
	// Files are the steering files the merge would bring.
	Files []Steering
}

func (e *SteeringError) Error() string {
	lines := make([]string, len(e.Files))
	for i, f := range e.Files {
		lines[i] = SteeringNote(f)
	}
	return fmt.Sprintf("the session's work changes %s that steer tools on your machine: %s; nothing was merged: review them (sandbar diff %s FILE) and merge again with --accept-steering, or create the branch instead",
		plural(len(e.Files), "file", "files"), strings.Join(lines, "; "), e.ID)
}

func (e *SteeringError) Is(target error) bool { return target == ErrSteering }
