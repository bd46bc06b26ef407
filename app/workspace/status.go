package workspace

import (
	"context"
	"fmt"
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
	// Steering lists the files of Files that steer tools on the
	// person's machine (see steeringRules).
	Steering []Steering `json:",omitempty"`
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

// Runner runs git with args in a session's clone and returns what it
// printed on standard output. The clone is the agent's: a Runner runs
// git where the agent lives (inside its VM, see GuestGitScript), with
// a bound on what it reads back, and never on the host.
type Runner func(ctx context.Context, args ...string) (string, error)

// GuestGitScript is the wrapper a Runner runs git through inside the VM
// (sh -c GuestGitScript git ARGS...): git reads a private copy of the
// clone's index, because a status or diff refreshes the index it reads and
// writes it back under index.lock, which made the agent's own git commit
// fail ("index.lock: File exists") while Sandbar looked.
const GuestGitScript = `i=$(mktemp /tmp/sandbar-index.XXXXXX) || exit 1
idx=$(git rev-parse --git-path index 2>/dev/null) && [ -f "$idx" ] && cp "$idx" "$i" || rm -f "$i"
GIT_INDEX_FILE=$i GIT_OPTIONAL_LOCKS=0 LC_ALL=C git -c core.quotepath=off "$@"
rc=$?
rm -f "$i" "$i.lock"
exit $rc`

// Status reports the changes in a clone since base (a commit, or "" for
// HEAD), running git through run.
func Status(ctx context.Context, run Runner, base string) (Changes, error) {
	if base == "" {
		base = "HEAD"
	}
	if _, err := run(ctx, "rev-parse", "-q", "--verify", "--end-of-options", base+"^{commit}"); err != nil {
		if ctx.Err() != nil {
			return Changes{}, err
		}
		return Changes{}, fmt.Errorf("base %s is not a commit in the session's clone (%v): the agent may have removed it", short(base), err)
	}

	var ch Changes
	st, err := run(ctx, "status", "--porcelain=v2", "-z", "--untracked-files=all")
	if err != nil {
		return Changes{}, fmt.Errorf("status of the session's clone: %w", err)
	}
	porcelain, untracked, unmerged := parsePorcelain(st)
	ch.Porcelain = porcelain
	ch.DiffStat, err = run(ctx, "diff", "--stat", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("diff of the session's clone against %s: %w", short(base), err)
	}
	ns, err := run(ctx, "diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", base, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("diff of the session's clone against %s: %w", short(base), err)
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
	ch.Steering = SteeringIn(ch.Files)

	n, err := run(ctx, "rev-list", "--count", base+"..HEAD", "--")
	if err != nil {
		return Changes{}, fmt.Errorf("count commits in the session's clone: %w", err)
	}
	ch.Ahead, _ = strconv.Atoi(strings.TrimSpace(n))
	return ch, nil
}

// FileDiff is the unified diff of one file of a clone against base,
// through run; an untracked file is shown whole, as added.
func FileDiff(ctx context.Context, run Runner, base string, f FileChange) (string, error) {
	if f.Status == "untracked" {
		out, err := run(ctx, "diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv", "--", "/dev/null", f.Path)
		if err != nil && out == "" { // exit 1 means "differs"
			return "", err
		}
		return out, nil
	}
	paths := []string{":(literal)" + f.Path}
	if f.From != "" {
		paths = append(paths, ":(literal)"+f.From)
	}
	return run(ctx, append([]string{"diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, "--"}, paths...)...)
}

// parsePorcelain turns `status --porcelain=v2 -z` into the text form git
// prints without -z (the input comes from the agent's VM: any bytes at
// all must give some answer, never a panic) (a rename's two paths joined by a tab, names needing
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
			if len(r) < 3 || r[1] != ' ' {
				line = quotePath(r) // not git's: shown as given, never trusted
				break
			}
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
