package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// A session's tree is the agent's data: trees that reuse their subtrees
// cost a few KiB in a pack and list as millions of files. Whatever lists
// one (status, diffs, export, merge) first makes sure it has at most
// MaxSessionFiles entries, reading `git ls-tree -r` as it streams.

// MaxSessionFiles bounds the files (and submodules) of a session's saved
// tree that Sandbar lists: a large monorepo has a few hundred thousand.
const MaxSessionFiles = 500_000

// maxBaseFiles bounds the files of a source commit put on a base disk.
const maxBaseFiles = 4_000_000

// ErrTooManyFiles: a tree has more files than Sandbar lists.
var ErrTooManyFiles = errors.New("the session's work has too many files to list")

// tooManyFiles makes a listing that was cut short (ErrTooManyFiles, or git
// printing past its bound) into a message a person can act on.
func tooManyFiles(err error) error {
	if errors.Is(err, ErrOutputTooLarge) && !errors.Is(err, ErrTooManyFiles) {
		err = fmt.Errorf("%w (%v)", ErrTooManyFiles, err)
	}
	if errors.Is(err, ErrTooManyFiles) {
		return fmt.Errorf("%w: look at it inside the VM with `sandbar shell`, or merge the branch and look there", err)
	}
	return err
}

// boundedTrees remembers, per mirror and commit, trees known to be within
// MaxSessionFiles, so that a status read again does not list them again.
var boundedTrees struct {
	sync.Mutex
	ok map[string]bool
}

// boundFiles checks that commit's tree has at most MaxSessionFiles
// entries, counting them as `git ls-tree -r` prints them and killing it
// past the bound: its memory and Sandbar's stay small whatever the tree.
func (m *Mirror) boundFiles(ctx context.Context, commit string) error {
	key := m.Dir + "\x00" + commit
	boundedTrees.Lock()
	ok := boundedTrees.ok[key]
	boundedTrees.Unlock()
	if ok {
		return nil
	}
	c := &recordCounter{max: MaxSessionFiles}
	if err := gitTo(ctx, m.Dir, m.env, nil, c, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "--end-of-options", commit); err != nil {
		if errors.Is(err, ErrTooManyFiles) {
			return err
		}
		return fmt.Errorf("list the files of %s: %w", short(commit), err)
	}
	boundedTrees.Lock()
	if boundedTrees.ok == nil || len(boundedTrees.ok) > 4096 {
		boundedTrees.ok = map[string]bool{}
	}
	boundedTrees.ok[key] = true
	boundedTrees.Unlock()
	return nil
}

// recordCounter counts NUL-terminated records and fails past max.
type recordCounter struct {
	n, max int
}

func (c *recordCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{0})
	if c.n > c.max {
		return 0, fmt.Errorf("%w: it has more than %d", ErrTooManyFiles, c.max)
	}
	return len(p), nil
}

// listTree lists every file of commit's tree, with sizes, at most max of
// them (ErrTooManyFiles past that), parsing `git ls-tree -r` as it
// streams.
func (m *Mirror) listTree(ctx context.Context, commit string, max int) ([]treeEntry, error) {
	p := &treeParser{max: max, commit: commit}
	err := gitTo(ctx, m.Dir, m.env, nil, p, "ls-tree", "-r", "-z", "--long", "--full-tree", "--end-of-options", commit)
	if err == nil && len(p.partial) > 0 {
		err = fmt.Errorf("list the files of %s: unexpected end %q", short(commit), truncate(string(p.partial), 80))
	}
	if err != nil {
		if errors.Is(err, ErrTooManyFiles) {
			return nil, err
		}
		return nil, fmt.Errorf("list the files of %s: %w", short(commit), err)
	}
	return p.es, nil
}

// maxTreeRecord bounds one record of ls-tree's output (a path is at most
// a few KiB on any system Sandbar writes to).
const maxTreeRecord = 1 << 20

// treeParser parses `ls-tree -r -z --long` output as it is written.
type treeParser struct {
	es      []treeEntry
	partial []byte
	max     int
	commit  string
}

func (t *treeParser) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			if len(t.partial)+len(p) > maxTreeRecord {
				return 0, fmt.Errorf("a path in %s is longer than %d KiB", short(t.commit), maxTreeRecord>>10)
			}
			t.partial = append(t.partial, p...)
			break
		}
		rec := p[:i]
		if len(t.partial) > 0 {
			rec = append(t.partial, rec...)
			t.partial = t.partial[:0]
		}
		p = p[i+1:]
		if len(t.es) >= t.max {
			return 0, fmt.Errorf("%w: %s has more than %d files", ErrTooManyFiles, short(t.commit), t.max)
		}
		e, err := parseTreeRecord(rec)
		if err != nil {
			return 0, fmt.Errorf("%v in the files of %s", err, short(t.commit))
		}
		t.es = append(t.es, e)
	}
	return n, nil
}

// parseTreeRecord parses "<mode> SP <type> SP <object> SP+ <size> TAB
// <path>", allocating only the object's id and the path.
func parseTreeRecord(rec []byte) (treeEntry, error) {
	meta, p, ok := bytes.Cut(rec, []byte("\t"))
	f := bytes.Fields(meta)
	if !ok || len(f) != 4 {
		return treeEntry{}, fmt.Errorf("unexpected line %q", truncate(string(rec), 200))
	}
	mode, err := strconv.ParseInt(string(f[0]), 8, 64)
	if err != nil {
		return treeEntry{}, fmt.Errorf("mode %q", f[0])
	}
	e := treeEntry{mode: mode, oid: string(f[2]), path: string(p)}
	switch string(f[1]) {
	case "blob":
		e.kind = "blob"
	case "commit":
		e.kind = "commit"
	case "tree":
		e.kind = "tree"
	default:
		e.kind = string(f[1])
	}
	if string(f[3]) != "-" {
		e.size, _ = strconv.ParseInt(string(f[3]), 10, 64)
	}
	return e, nil
}

// treeEntry is one entry of `git ls-tree -r`.
type treeEntry struct {
	mode int64
	kind string // blob or commit
	oid  string
	size int64
	path string
}

// treeEntries lists every file of commit's tree, with sizes.
func (m *Mirror) treeEntries(ctx context.Context, commit string) ([]treeEntry, error) {
	return m.listTree(ctx, commit, maxBaseFiles)
}
