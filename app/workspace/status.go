package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Changes is what a session's clone holds that its base does not.
type Changes struct {
	// Porcelain is `git status --porcelain=v2` (uncommitted changes).
	Porcelain string
	// DiffStat is `git diff --stat <base>`: committed and uncommitted
	// changes to tracked files since the base.
	DiffStat string
	// Files lists every file that differs from the base, committed or not,
	// plus untracked ones, sorted by path.
	Files []FileChange
	// Ahead counts the commits on HEAD that are not in the base.
	Ahead int
}

// FileChange is one changed file.
type FileChange struct {
	// Path is slash-separated, relative to the root.
	Path string
	// Status is "modified", "added", "deleted", "renamed", "untracked" or
	// "unmerged" (a conflict left by a merge or rebase).
	Status string
	// From is the old path of a renamed (or copied) file.
	From string
}

// Status reports the changes in the clone dir since base (a commit, or
// "" for HEAD). It only reads: no index refresh is written, and the
// clone's index.lock is never taken (see privateIndex).
func Status(ctx context.Context, dir, base string) (Changes, error) {
	if dir == "" {
		return Changes{}, errors.New("status: no clone given")
	}
	if base == "" {
		base = "HEAD"
	}
	if _, err := git(ctx, dir, "rev-parse", "-q", "--verify", "--end-of-options", base+"^{commit}"); err != nil {
		if ctx.Err() != nil {
			return Changes{}, err
		}
		if _, derr := git(ctx, dir, "rev-parse", "--git-dir"); derr != nil {
			return Changes{}, fmt.Errorf("%s is not a git clone any more (%s): start a new session", dir, gitMessage(derr))
		}
		return Changes{}, fmt.Errorf("base %s is not a commit in %s: start a new session from a base that exists", base, dir)
	}

	var ch Changes
	st, err := git(ctx, dir, "status", "--porcelain=v2", "-z", "--untracked-files=all")
	if err != nil {
		return Changes{}, fmt.Errorf("status of %s: %w", dir, err)
	}
	porcelain, untracked, unmerged := parsePorcelain(st)
	ch.Porcelain = porcelain

	idx, done, err := privateIndex(ctx, dir)
	if err != nil {
		return Changes{}, err
	}
	defer done()
	ch.DiffStat, err = gitEnvInput(ctx, dir, idx, nil, "diff", "--stat", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("diff of %s against %s: %w", dir, short(base), err)
	}
	ns, err := gitEnvInput(ctx, dir, idx, nil, "diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", base, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("diff of %s against %s: %w", dir, short(base), err)
	}
	ch.Files = parseNameStatus(ns)
	for i := range ch.Files {
		if slices.Contains(unmerged, ch.Files[i].Path) {
			ch.Files[i].Status = "unmerged"
		}
	}
	for _, p := range untracked {
		ch.Files = append(ch.Files, FileChange{Path: p, Status: "untracked"})
	}
	slices.SortFunc(ch.Files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })

	n, err := gitLine(ctx, dir, "rev-list", "--count", base+"..HEAD", "--")
	if err != nil {
		return Changes{}, fmt.Errorf("count commits in %s: %w", dir, err)
	}
	ch.Ahead, _ = strconv.Atoi(n)
	return ch, nil
}

// parsePorcelain turns `status --porcelain=v2 -z` into the text form git
// prints without -z (a rename's two paths joined by a tab, names needing
// it C-quoted), and picks out untracked and unmerged paths.
func parsePorcelain(z string) (text string, untracked, unmerged []string) {
	recs := splitZ(z)
	var b strings.Builder
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if r == "" {
			continue
		}
		var line, p string
		switch r[0] {
		case '1':
			head, path := cutFields(r, 8)
			line, p = head+quotePath(path), path
		case '2':
			head, path := cutFields(r, 9)
			orig := ""
			if i+1 < len(recs) {
				i++
				orig = recs[i]
			}
			line, p = head+quotePath(path)+"\t"+quotePath(orig), path
		case 'u':
			head, path := cutFields(r, 10)
			line, p = head+quotePath(path), path
			unmerged = append(unmerged, path)
		case '?', '!':
			p = r[2:]
			line = r[:2] + quotePath(p)
			if r[0] == '?' {
				untracked = append(untracked, p)
			}
		default:
			line = r
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String(), untracked, unmerged
}

// cutFields splits off n space-separated fields, returning them with their
// trailing space, and the rest, which is a path that may hold spaces.
func cutFields(r string, n int) (head, rest string) {
	at := 0
	for range n {
		j := strings.IndexByte(r[at:], ' ')
		if j < 0 {
			return r, ""
		}
		at += j + 1
	}
	return r[:at], r[at:]
}

// quotePath quotes a path the way git does with core.quotepath=off: only
// when it holds a double quote, a backslash or a control character.
func quotePath(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c == 0x7f {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// parseNameStatus reads `git diff --name-status -z`.
func parseNameStatus(z string) []FileChange {
	recs := splitZ(z)
	var out []FileChange
	for i := 0; i < len(recs); i++ {
		code := recs[i]
		if code == "" || i+1 >= len(recs) {
			continue
		}
		switch code[0] {
		case 'R', 'C':
			if i+2 >= len(recs) {
				return out
			}
			st := "renamed"
			if code[0] == 'C' {
				st = "added"
			}
			out = append(out, FileChange{Path: recs[i+2], Status: st, From: recs[i+1]})
			i += 2
			continue
		case 'A':
			out = append(out, FileChange{Path: recs[i+1], Status: "added"})
		case 'D':
			out = append(out, FileChange{Path: recs[i+1], Status: "deleted"})
		case 'U':
			out = append(out, FileChange{Path: recs[i+1], Status: "unmerged"})
		default: // M, T (type change), X
			out = append(out, FileChange{Path: recs[i+1], Status: "modified"})
		}
		i++
	}
	return out
}

// privateIndex copies the index of the repository at dir to a temporary
// file and returns the environment that points git at the copy, and a
// function that removes it. git diff against the working tree refreshes
// the index it reads and writes it back under index.lock whatever
// GIT_OPTIONAL_LOCKS says (git 2.39 does); on the clone's own index that
// made the agent's git commit fail with "index.lock: File exists" while
// Sandbar was reading the clone. Git replaces the index by renaming, so
// the copy is one whole version of it. With no index there is nothing to
// copy, and nothing to refresh.
func privateIndex(ctx context.Context, dir string) (env []string, done func(), err error) {
	done = func() {}
	p, err := gitLine(ctx, dir, "rev-parse", "--git-path", "index")
	if err != nil {
		return nil, done, fmt.Errorf("find the index of %s: %w", dir, err)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	src, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, done, nil
	}
	if err != nil {
		return nil, done, fmt.Errorf("read the index of %s: %w", dir, err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp("", "sandbar-index-")
	if err != nil {
		return nil, done, fmt.Errorf("copy the index of %s: %w", dir, err)
	}
	done = func() { os.Remove(tmp.Name()); os.Remove(tmp.Name() + ".lock") }
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		done()
		return nil, func() {}, fmt.Errorf("copy the index of %s: %w", dir, err)
	}
	return []string{"GIT_INDEX_FILE=" + tmp.Name()}, done, nil
}
