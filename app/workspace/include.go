package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// includeFiles are the lists, at a repository's root, of ignored or
// untracked files a session's clone should get anyway (.env, local
// config). .worktreeinclude is the name other tools use for the same idea.
func includeFiles() []string { return []string{".sandbarinclude", ".worktreeinclude"} }

// defaultSkip are folders too heavy to watch or to search for include
// matches; a session rebuilds them. An include pattern that names one
// explicitly ("node_modules/") still reaches into it.
func defaultSkip() []string {
	return []string{"node_modules", "target", ".venv", "venv", "__pycache__", "dist", "build", ".gradle", ".next", ".cache"}
}

// includePattern is one line of an include list, in the spirit of
// .gitignore: a pattern without a slash matches a name at any depth, one
// with a slash is anchored at the root, a trailing slash matches only
// folders, "**" spans folders, "!" takes a match back, and a matching
// folder brings everything under it. Each segment is matched with
// path.Match, which is close to, not exactly, git's wildmatch.
type includePattern struct {
	segs    []string
	neg     bool
	dirOnly bool
}

func parseInclude(text string) []includePattern {
	var out []includePattern
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		line = strings.TrimRight(line, " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var p includePattern
		if strings.HasPrefix(line, "!") {
			p.neg = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			continue
		}
		p.segs = strings.Split(line, "/")
		if !anchored {
			p.segs = append([]string{"**"}, p.segs...)
		}
		out = append(out, p)
	}
	return out
}

// segMatch matches path segments against pattern segments, "**" standing
// for any number of folders.
func segMatch(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			g = g[1:]
			if len(g) == 0 {
				return true
			}
			for i := 0; i <= len(p); i++ {
				if segMatch(g, p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], p[0]); err != nil || !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// includes reports whether the file rel (slash-separated) is selected:
// the last pattern matching it or one of its folders decides.
func includes(ps []includePattern, rel string) bool {
	segs := strings.Split(rel, "/")
	in := false
	for _, p := range ps {
		for k := 1; k <= len(segs); k++ {
			if p.dirOnly && k == len(segs) {
				break
			}
			if segMatch(p.segs, segs[:k]) {
				in = !p.neg
				break
			}
		}
	}
	return in
}

// mayInclude reports whether anything under the folder rel could be
// selected, so that untracked folders nobody asked for are not searched.
// A heavy folder (defaultSkip) is searched only if a pattern names it.
func mayInclude(ps []includePattern, rel string) bool {
	segs := strings.Split(rel, "/")
	name := segs[len(segs)-1]
	heavy := slices.Contains(defaultSkip(), name)
	for _, p := range ps {
		if p.neg || !prefixMatch(p.segs, segs) {
			continue
		}
		if !heavy || slices.Contains(p.segs, name) {
			return true
		}
	}
	return false
}

// prefixMatch reports whether the folder d could be on the way to a path
// g matches, or is under one g matches.
func prefixMatch(g, d []string) bool {
	for len(d) > 0 {
		if len(g) == 0 || g[0] == "**" {
			return true
		}
		if ok, err := path.Match(g[0], d[0]); err != nil || !ok {
			return false
		}
		g, d = g[1:], d[1:]
	}
	return true
}

// copyIncluded copies into dest the untracked or ignored files of src's
// working tree that src's include lists select, and excludes them in
// dest so they never show up as changes or get committed by accident.
func copyIncluded(ctx context.Context, src, dest string) (copied, skipped []string, err error) {
	picked, err := pickIncluded(ctx, src)
	if err != nil || len(picked) == 0 {
		return nil, nil, err
	}
	for _, rel := range picked {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		why, err := copyOne(src, dest, rel)
		if err != nil {
			return nil, nil, fmt.Errorf("copy %s from %s: %w", rel, src, err)
		}
		if why != "" {
			skipped = append(skipped, rel+": "+why)
			continue
		}
		copied = append(copied, rel)
	}
	if err := excludeCopied(dest, copied); err != nil {
		return nil, nil, err
	}
	return copied, skipped, nil
}

// pickIncluded lists, sorted, the untracked or ignored files of src's
// working tree that src's include lists select.
func pickIncluded(ctx context.Context, src string) ([]string, error) {
	var ps []includePattern
	for _, name := range includeFiles() {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			continue
		}
		ps = append(ps, parseInclude(string(b))...)
	}
	if len(ps) == 0 {
		return nil, nil
	}

	// Untracked files, ignored ones included; folders with nothing tracked
	// come back whole ("dir/") and are searched only if a pattern may
	// reach in.
	out, err := git(ctx, src, "ls-files", "-z", "--others", "--directory")
	if err != nil {
		return nil, fmt.Errorf("list untracked files in %s: %w", src, err)
	}
	var picked []string
	for _, rel := range splitZ(out) {
		if !strings.HasSuffix(rel, "/") {
			if includes(ps, rel) {
				picked = append(picked, rel)
			}
			continue
		}
		dir := strings.TrimSuffix(rel, "/")
		if !mayInclude(ps, dir) {
			continue
		}
		err := filepath.WalkDir(filepath.Join(src, filepath.FromSlash(dir)), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			r, _ := filepath.Rel(src, p)
			r = filepath.ToSlash(r)
			if d.IsDir() {
				if r != dir && (d.Name() == ".git" || !mayInclude(ps, r)) {
					return filepath.SkipDir
				}
				return ctx.Err()
			}
			if d.Name() != ".git" && includes(ps, r) {
				picked = append(picked, r)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(picked)
	return picked, nil
}

// copyOne copies one file, keeping its permission bits, or one symlink
// that stays inside the repository. It returns why it left the file
// behind, or an error for a failure that would also break the session.
func copyOne(src, dest, rel string) (skip string, err error) {
	if strings.ContainsAny(rel, "\n\r") {
		return "a name with a line break cannot be excluded in the clone", nil
	}
	from := filepath.Join(src, filepath.FromSlash(rel))
	to := filepath.Join(dest, filepath.FromSlash(rel))
	fi, err := os.Lstat(from)
	if err != nil {
		return "gone from the repository", nil
	}
	if _, err := os.Lstat(to); err == nil {
		return "already in the clone at the base commit", nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			return "its folder is a file in the clone", nil
		}
		return "", err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return "unreadable symlink", nil
		}
		if filepath.IsAbs(target) {
			return "symlink to an absolute path (" + target + ")", nil
		}
		r, err := filepath.Rel(src, filepath.Join(filepath.Dir(from), target))
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "symlink out of the repository (" + target + ")", nil
		}
		if r == ".git" || strings.HasPrefix(r, ".git"+string(filepath.Separator)) {
			return "symlink into .git (" + target + ")", nil
		}
		return "", os.Symlink(target, to)
	case fi.Mode().IsRegular():
		return "", copyFile(from, to, fi.Mode().Perm())
	default:
		return "not a regular file", nil
	}
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(to, perm) // the umask may have taken bits away
}

// excludeCopied lists the copied files in the clone's .git/info/exclude:
// they are the person's local files, never part of the session's work.
func excludeCopied(dest string, copied []string) error {
	if len(copied) == 0 {
		return nil
	}
	p := filepath.Join(dest, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("\n# Copied by Sandbar from the source repository's include lists.\n")
	for _, rel := range copied {
		b.WriteString("/" + escapeIgnore(rel) + "\n")
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// escapeIgnore makes a path a literal gitignore pattern.
func escapeIgnore(rel string) string {
	var b strings.Builder
	for _, r := range rel {
		if strings.ContainsRune(`\*?[]`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	s := b.String()
	if strings.HasSuffix(s, " ") {
		t := strings.TrimRight(s, " ")
		s = t + strings.Repeat(`\ `, len(s)-len(t))
	}
	return s
}
