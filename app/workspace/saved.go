package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Saved returns the session's saved work, and false when none was saved.
func (m *Mirror) Saved(ctx context.Context, id string) (SaveInfo, bool) {
	if validSessionID(id) != nil {
		return SaveInfo{}, false
	}
	out, err := git(ctx, m.Dir, "for-each-ref", "--format=%(refname) %(objectname)", sessionRefs+id+"/")
	if err != nil {
		return SaveInfo{}, false
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, obj, ok := strings.Cut(line, " "); ok {
			refs[name] = obj
		}
	}
	s := SaveInfo{Branch: refs[sessionRef(id, "branch")], Snapshot: refs[sessionRef(id, "snapshot")], Head: refs[sessionRef(id, "head")]}
	if s.Branch == "" || s.Snapshot == "" || s.Head == "" {
		return SaveInfo{}, false
	}
	if a := refs[sessionRef(id, "autocommit")]; a == s.Branch {
		s.AutoCommit = a
	}
	return s, true
}

// SavedStatus reports a session's changes as saved in the mirror: files
// that differ between base and the snapshot (committed or not, untracked
// ones as added) and the commits on the branch since base.
func (m *Mirror) SavedStatus(ctx context.Context, id, base string) (Changes, error) {
	s, ok := m.Saved(ctx, id)
	if !ok {
		return Changes{}, fmt.Errorf("session %s has no saved work yet", id)
	}
	// git diff holds every changed file in memory before it prints one:
	// the snapshot's files are counted first.
	if err := m.boundFiles(ctx, s.Snapshot); err != nil {
		return Changes{}, tooManyFiles(err)
	}
	var ch Changes
	var err error
	ch.DiffStat, err = git(ctx, m.Dir, "diff", "--stat", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, s.Snapshot, "--")
	if err != nil {
		return Changes{}, tooManyFiles(fmt.Errorf("diff the session's work against %s: %w", short(base), err))
	}
	ns, err := git(ctx, m.Dir, "diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", base, s.Snapshot, "--")
	if err != nil {
		return Changes{}, tooManyFiles(fmt.Errorf("diff the session's work against %s: %w", short(base), err))
	}
	ch.Files = parseNameStatus(ns)
	ch.Steering = SteeringIn(ch.Files)
	n, err := gitLine(ctx, m.Dir, "rev-list", "--count", base+".."+s.Branch, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("count the session's commits: %w", err)
	}
	ch.Ahead, _ = strconv.Atoi(n)
	return ch, nil
}

// SavedDiff is the unified diff of one file between base and the
// session's saved snapshot, at most max bytes.
func (m *Mirror) SavedDiff(ctx context.Context, id, base, file string, max int) (string, error) {
	s, ok := m.Saved(ctx, id)
	if !ok {
		return "", fmt.Errorf("session %s has no saved work yet", id)
	}
	// What passes max is not read: git is stopped there.
	out, err := gitMax(ctx, m.Dir, nil, nil, int64(max)+1, "diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, s.Snapshot, "--", ":(literal)"+file)
	if err != nil && !errors.Is(err, ErrOutputTooLarge) {
		return "", fmt.Errorf("diff %s: %w", file, err)
	}
	return truncate(out, max), nil
}

// uncommittedSaved lists the files the snapshot changes on top of HEAD.
func (m *Mirror) uncommittedSaved(ctx context.Context, s SaveInfo) ([]string, error) {
	if s.Snapshot == s.Head {
		return nil, nil
	}
	if err := m.boundFiles(ctx, s.Snapshot); err != nil {
		return nil, tooManyFiles(err)
	}
	out, err := git(ctx, m.Dir, "diff", "--name-only", "-z", "--no-renames", s.Head, s.Snapshot, "--")
	if err != nil {
		return nil, tooManyFiles(fmt.Errorf("list the session's uncommitted files: %w", err))
	}
	return splitZ(out), nil
}

// SavedUncommitted lists the files the session's last save holds
// uncommitted (changed in its snapshot on top of its HEAD).
func (m *Mirror) SavedUncommitted(ctx context.Context, id string) ([]string, error) {
	s, ok := m.Saved(ctx, id)
	if !ok {
		return nil, fmt.Errorf("session %s has no saved work yet", id)
	}
	return m.uncommittedSaved(ctx, s)
}

// SameTree reports whether commits a and b, both in the mirror, hold the
// same files.
func (m *Mirror) SameTree(ctx context.Context, a, b string) (bool, error) {
	ta, err := gitLine(ctx, m.Dir, "rev-parse", "--verify", "--end-of-options", a+"^{tree}")
	if err != nil {
		return false, err
	}
	tb, err := gitLine(ctx, m.Dir, "rev-parse", "--verify", "--end-of-options", b+"^{tree}")
	if err != nil {
		return false, err
	}
	return ta == tb, nil
}

// SessionIDs lists the sessions that have saved refs in the mirror
// (refs/sandbar/sessions/<id>/...), each once, sorted: what the engine's
// healing compares with the sessions the database knows.
func (m *Mirror) SessionIDs(ctx context.Context) ([]string, error) {
	out, err := git(ctx, m.Dir, "for-each-ref", "--format=%(refname)", sessionRefs)
	if err != nil {
		return nil, fmt.Errorf("list the saved sessions in %s: %w", m.Dir, err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, ref := range strings.Fields(out) {
		id, _, _ := strings.Cut(strings.TrimPrefix(ref, sessionRefs), "/")
		if validSessionID(id) == nil && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
