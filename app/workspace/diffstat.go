package workspace

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DiffStat sums a session's changes against its base: what a list row
// shows ("+120 −14, 3 files").
type DiffStat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
	// Binary counts the files of Files that git sees as binary: they add
	// and delete no lines.
	Binary int `json:"binary,omitempty"`
	// FilesOnly: the lines were not counted (the line diff ran past its
	// time budget); Files alone is right.
	FilesOnly bool `json:"files_only,omitempty"`
}

// IsZero reports whether nothing changed.
func (d DiffStat) IsZero() bool { return d.Files == 0 && d.Added == 0 && d.Deleted == 0 }

// DefaultDiffStatBudget is how long SavedDiffStat lets git count lines
// before it counts files alone: a list row must not wait on a diff of a
// generated file of a million lines.
const DefaultDiffStatBudget = 3 * time.Second

// SavedDiffStat sums the changes between base and commit, both in the
// mirror, with git plumbing (diff-tree --numstat, renames found, no
// external diff or text conversion). Counting lines takes at most budget
// (DefaultDiffStatBudget when 0); past it the files are counted without
// reading their contents and the result says FilesOnly.
func (m *Mirror) SavedDiffStat(ctx context.Context, base, commit string, budget time.Duration) (DiffStat, error) {
	if budget <= 0 {
		budget = DefaultDiffStatBudget
	}
	if err := m.boundFiles(ctx, commit); err != nil {
		return DiffStat{}, tooManyFiles(err)
	}
	lines, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	out, err := git(lines, m.Dir, "diff-tree", "-r", "-z", "--numstat", "-M", "--no-ext-diff", "--no-textconv", "--end-of-options", base, commit, "--")
	if err == nil {
		return parseNumstat(out), nil
	}
	if ctx.Err() != nil || lines.Err() == nil {
		return DiffStat{}, tooManyFiles(fmt.Errorf("count the changes against %s: %w", short(base), err))
	}
	// The line diff ran out of time: the files alone, from the trees.
	out, err = git(ctx, m.Dir, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--end-of-options", base, commit, "--")
	if err != nil {
		return DiffStat{}, tooManyFiles(fmt.Errorf("count the changed files against %s: %w", short(base), err))
	}
	return DiffStat{Files: len(splitZ(out)), FilesOnly: true}, nil
}

// parseNumstat sums `git diff-tree -r -z --numstat -M`: per file
// "added<TAB>deleted<TAB>path<NUL>", or for a rename
// "added<TAB>deleted<TAB><NUL>from<NUL>to<NUL>"; "-" counts mark a
// binary file.
func parseNumstat(out string) DiffStat {
	var d DiffStat
	recs := strings.Split(out, "\x00")
	for i := 0; i < len(recs); i++ {
		added, rest, ok := strings.Cut(recs[i], "\t")
		if !ok {
			continue
		}
		deleted, path, ok := strings.Cut(rest, "\t")
		if !ok {
			continue
		}
		if path == "" {
			i += 2 // a rename: its two paths follow
		}
		d.Files++
		if added == "-" || deleted == "-" {
			d.Binary++
			continue
		}
		a, _ := strconv.Atoi(added)
		r, _ := strconv.Atoi(deleted)
		d.Added += a
		d.Deleted += r
	}
	return d
}

// shortstatLine is the summary `git diff --stat` ends with.
var shortstatLine = regexp.MustCompile(`^\s*(\d{1,9}) files? changed(?:, (\d{1,12}) insertions?\(\+\))?(?:, (\d{1,12}) deletions?\(-\))?\s*$`)

// ErrNoStatSummary: a diff --stat had no summary line to read.
var ErrNoStatSummary = errors.New("no summary line in the diff stat")

// ParseStatSummary reads the last line of `git diff --stat` (Changes.
// DiffStat, made in the session's VM while it runs): text from the
// agent's sandbox, read for its three numbers and nothing more. An empty
// stat is no change.
func ParseStatSummary(stat string) (DiffStat, error) {
	stat = strings.TrimRight(stat, "\n")
	if strings.TrimSpace(stat) == "" {
		return DiffStat{}, nil
	}
	last := stat
	if i := strings.LastIndexByte(stat, '\n'); i >= 0 {
		last = stat[i+1:]
	}
	m := shortstatLine.FindStringSubmatch(last)
	if m == nil {
		return DiffStat{}, ErrNoStatSummary
	}
	var d DiffStat
	d.Files, _ = strconv.Atoi(m[1])
	d.Added, _ = strconv.Atoi(m[2])
	d.Deleted, _ = strconv.Atoi(m[3])
	return d, nil
}
