package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// includeFiles are the lists, at a repository's root, of ignored or
// untracked files a session's clone should get anyway (.env, local
// config). .worktreeinclude is the name other tools use for the same idea.
func includeFiles() []string { return []string{".sandbarinclude", ".worktreeinclude"} }

// defaultSkip are folders too heavy to search for include
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

// pickIncluded lists, sorted, the untracked or ignored files of src's
// working tree that the include lists' text selects.
func pickIncluded(ctx context.Context, src string, lists []byte) ([]string, error) {
	ps := parseInclude(string(lists))
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

// includedFile is one file an include list selects, read whole.
type includedFile struct {
	rel  string
	mode fs.FileMode
	link string
	data []byte
}

// includedSet is what the source's include lists select.
type includedSet struct {
	files   []includedFile
	skipped []string
}

func (s includedSet) copied() []string {
	out := make([]string, len(s.files))
	for i, f := range s.files {
		out[i] = f.rel
	}
	return out
}

// maxIncluded bounds what include lists may bring into a base disk: they
// are for .env files and the like, not data sets.
const maxIncluded = 256 << 20

// readIncluded reads the files the source's include lists select (see
// pickIncluded for the rules), each checked with Lstat as a regular file
// or a symlink that stays inside the repository.
func readIncluded(ctx context.Context, src string, lists []byte) (includedSet, error) {
	picked, err := pickIncluded(ctx, src, lists)
	if err != nil || len(picked) == 0 {
		return includedSet{}, err
	}
	var s includedSet
	var total int64
	for _, rel := range picked {
		if strings.ContainsAny(rel, "\n\r") {
			s.skipped = append(s.skipped, rel+": a name with a line break cannot be excluded in the clone")
			continue
		}
		p := filepath.Join(src, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			s.skipped = append(s.skipped, rel+": "+err.Error())
			continue
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				s.skipped = append(s.skipped, rel+": "+err.Error())
				continue
			}
			if filepath.IsAbs(target) || !filepath.IsLocal(filepath.Join(filepath.Dir(filepath.FromSlash(rel)), target)) {
				s.skipped = append(s.skipped, rel+" -> "+target+": symlink out of the repository")
				continue
			}
			s.files = append(s.files, includedFile{rel: rel, mode: fi.Mode(), link: target})
		case fi.Mode().IsRegular():
			if total+fi.Size() > maxIncluded {
				s.skipped = append(s.skipped, fmt.Sprintf("%s: the included files pass %d MiB: include less", rel, maxIncluded>>20))
				continue
			}
			data, err := readRegular(p, maxIncluded-total)
			if err != nil {
				s.skipped = append(s.skipped, rel+": "+err.Error())
				continue
			}
			total += int64(len(data))
			s.files = append(s.files, includedFile{rel: rel, mode: fi.Mode(), data: data})
		default:
			s.skipped = append(s.skipped, rel+": not a regular file")
		}
	}
	return s, nil
}
