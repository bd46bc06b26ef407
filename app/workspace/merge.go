package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Errors Merge wraps, checked with errors.Is.
var (
	// ErrDiverged: the branch in the source repository has commits the
	// session's branch does not; only a forced merge overwrites it.
	ErrDiverged = errors.New("branch has diverged")
	// ErrCheckedOut: the branch is checked out in the source repository
	// (or one of its worktrees), whose files a merge must never touch.
	ErrCheckedOut = errors.New("branch is checked out")
)

// MergeResult says what Merge or MergeInto did to the source repository.
type MergeResult struct {
	// Into is the branch MergeInto merged into (the one checked out in
	// the source); "" for Merge, which moves the session's own branch.
	Into string
	// FastForward: MergeInto moved Into to the session's commit, with no
	// merge commit.
	FastForward bool
	// Commit is the commit the branch now points at in the source.
	Commit string
	// Created: the branch did not exist in the source before.
	Created bool
	// Updated: the branch existed and was moved (fast-forward, or
	// overwritten when forced).
	Updated bool
	// Previous is where the branch pointed before, "" if it was created.
	Previous string
	// Uncommitted lists the clone's files with changes that were not
	// committed, and so were not merged; the caller warns about them.
	Uncommitted []string
	// Submodules lists the submodules (by path) whose commits, recorded
	// by the branch but missing in the source's copies, were brought
	// into those copies as the branch of the same name.
	Submodules []string
	// SkippedSubmodules says, one line each ("<path>: why"), which
	// submodules the branch records with commits of the session's that
	// were not brought anywhere, because the repository has no submodule
	// of its own there that merge may write into (see mergeModules).
	// Those commits stay in the session; the caller shows the lines.
	SkippedSubmodules []string
	// Steering lists the steering files (see steeringRules) the merge
	// brings: for MergeInto, those the working tree gets; for Merge,
	// those the branch changes since where it started (the caller fills
	// them in, see Mirror.SteeringBetween).
	Steering []Steering `json:",omitempty"`
	// Stashed lists the person's files with uncommitted changes that
	// MergeIntoStashing stashed for the merge and put back.
	Stashed []string `json:",omitempty"`
	// StashKept, when MergeIntoStashing merged but could not put the
	// stashed changes back, says why, where they are kept and how to get
	// them back; the caller shows it.
	StashKept string `json:",omitempty"`
}

// Merge brings the session's saved branch (see Mirror.ImportSave) into the
// source repository as the branch of the same name (git fetch <mirror>
// refs/sandbar/sessions/<id>/branch:refs/heads/<branch>). Only that branch
// is created or moved: the source's working tree, index, HEAD and other
// branches are never touched. Submodule commits the branch records and
// the source's submodule copies lack are brought into those copies first,
// as the branch of the same name (see mergeModules), but only into
// submodules the source itself records and keeps in its own modules
// folder: the branch's gitlinks never choose where git runs. A branch
// that has commits the session lacks is refused (ErrDiverged) unless force; a branch checked out in the
// source is always refused (ErrCheckedOut). git runs only in the source
// and in Sandbar's own repository, never where the agent wrote.
func Merge(ctx context.Context, source Repo, m *Mirror, id, branch string, force bool) (MergeResult, error) {
	root := source.Root
	if root == "" || m == nil {
		return MergeResult{}, errors.New("merge: no repository or saved work given")
	}
	if err := checkBranchName(ctx, branch); err != nil {
		return MergeResult{}, err
	}
	saved, ok := m.Saved(ctx, id)
	if !ok {
		return MergeResult{}, fmt.Errorf("session %s has no saved work to merge: its VM never handed any back (see its log)", id)
	}
	ref := "refs/heads/" + branch
	commit := saved.Branch
	if where, err := checkedOutAt(ctx, root, ref); err != nil {
		return MergeResult{}, err
	} else if where != "" {
		if filepath.Clean(where) == filepath.Clean(root) {
			return MergeResult{}, fmt.Errorf("branch %s is checked out in %s, and merging must not touch its files (%w): switch %s to another branch (git switch -) and merge again", branch, root, ErrCheckedOut, root)
		}
		return MergeResult{}, fmt.Errorf("branch %s is checked out in %s, a worktree of %s (%w): switch that worktree to another branch and merge again", branch, where, root, ErrCheckedOut)
	}

	res := MergeResult{Commit: commit}
	prev, err := gitLine(ctx, root, "rev-parse", "-q", "--verify", ref)
	switch {
	case err == nil:
		res.Previous = prev
	case ctx.Err() != nil:
		return MergeResult{}, err
	case exitCode(err) != 1:
		return MergeResult{}, fmt.Errorf("read branch %s in %s: %w", branch, root, err)
	}
	if res.Uncommitted, err = m.uncommittedSaved(ctx, saved); err != nil {
		return MergeResult{}, err
	}
	if prev == commit {
		return res, nil
	}
	if prev != "" && !force {
		ff, err := isAncestor(ctx, m.Dir, prev, commit)
		if err != nil {
			return MergeResult{}, err
		}
		if !ff {
			return MergeResult{}, fmt.Errorf("branch %s in %s has commits the session does not (%w): use --force to overwrite it, or merge it by hand", branch, root, ErrDiverged)
		}
	}
	// Submodule commits first, so the branch never lands naming one the
	// source's copies lack.
	if res.Submodules, res.SkippedSubmodules, err = mergeModules(ctx, moduleRepo{dir: root}, m, commit, "", branch, force, 0); err != nil {
		return res, err
	}
	spec := sessionRef(id, "branch") + ":" + ref
	if force {
		spec = "+" + spec
	}
	if err := fetchLocal(ctx, root, m.Dir, spec, branch); err != nil {
		return MergeResult{}, err
	}
	res.Created = prev == ""
	res.Updated = prev != ""
	return res, nil
}

// fetchLocal fetches spec from Sandbar's repository dir into the repository root,
// which is the only thing in root it writes: no tags, no submodules, no
// FETCH_HEAD and no automatic gc. spec's source may be a commit id (see
// mirrorConfig). branch names the branch for messages.
func fetchLocal(ctx context.Context, root, dir, spec, branch string) error {
	return fetchInto(ctx, moduleRepo{dir: root}, dir, spec, branch)
}

// fetchInto is fetchLocal into the repository r.
func fetchInto(ctx context.Context, r moduleRepo, dir, spec, branch string) error {
	root := r.dir
	fetch := []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "protocol.version=2",
		"fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"}
	_, err := r.git(ctx, append(fetch, dir, spec)...)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	msg := gitMessage(err)
	if strings.Contains(msg, "no-write-fetch-head") {
		return refuse(fmt.Sprintf("the installed git cannot fetch without writing FETCH_HEAD (%s): install git %s or newer", msg, MinGitVersion), ErrOldGit)
	}
	if strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "rejected") {
		return fmt.Errorf("branch %s in %s has commits the session does not (%w): use --force to overwrite it, or merge it by hand", branch, root, ErrDiverged)
	}
	return fmt.Errorf("fetch %s into %s: %s: check that both folders are readable and try again", branch, root, msg)
}

func checkBranchName(ctx context.Context, branch string) error {
	if branch == "" {
		return errors.New("no branch name given: name the session's branch")
	}
	if _, err := git(ctx, "", "check-ref-format", "--branch", branch); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%q is not a valid branch name: use the session's branch", branch)
	}
	return nil
}

// checkedOutAt returns the worktree of root in which ref is checked out,
// "" if none.
func checkedOutAt(ctx context.Context, root, ref string) (string, error) {
	return checkedOutIn(ctx, moduleRepo{dir: root}, ref)
}

// checkedOutIn is checkedOutAt for the repository r.
func checkedOutIn(ctx context.Context, r moduleRepo, ref string) (string, error) {
	out, err := r.git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("list worktrees of %s: %w", r.dir, err)
	}
	var wt string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			wt = p
		} else if b, ok := strings.CutPrefix(line, "branch "); ok && b == ref {
			return wt, nil
		}
	}
	return "", nil
}

// isAncestor reports whether commit a is in b's history, in dir. A commit
// dir does not have is not.
func isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	if _, err := git(ctx, dir, "cat-file", "-e", a+"^{commit}"); err != nil {
		return false, ctx.Err()
	}
	_, err := git(ctx, dir, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case exitCode(err) == 1:
		return false, nil
	}
	return false, fmt.Errorf("compare %s with %s in %s: %w", short(a), short(b), dir, err)
}

// DirtyError is CheckRemovable's refusal: the work a deletion would lose.
type DirtyError struct {
	// Dir is the clone, Repo the source repository's root.
	Dir, Repo string
	// Uncommitted lists files with changes not committed in the clone.
	Uncommitted []string
	// Unmerged lists the subjects of commits in the clone that no branch,
	// tag or other ref of the source repository has.
	Unmerged []string
}

func (e *DirtyError) Error() string {
	var parts []string
	if n := len(e.Uncommitted); n > 0 {
		parts = append(parts, fmt.Sprintf("%s not committed (%s)", plural(n, "file", "files"), list(e.Uncommitted, ", ")))
	}
	if n := len(e.Unmerged); n > 0 {
		parts = append(parts, fmt.Sprintf("%s not merged into %s (%s)", plural(n, "commit", "commits"), e.Repo, list(quoteAll(e.Unmerged), ", ")))
	}
	return fmt.Sprintf("the session has work that would be lost: %s: merge it first, or use --force to delete anyway", strings.Join(parts, " and "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func list(xs []string, sep string) string {
	const show = 5
	if len(xs) <= show {
		return strings.Join(xs, sep)
	}
	return strings.Join(xs[:show], sep) + fmt.Sprintf("%sand %d more", sep, len(xs)-show)
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// CheckRemovable says whether deleting a session would lose work: it
// returns nil, or a *DirtyError listing the files its last saved snapshot
// holds uncommitted and the commits of its saved branch that no ref of
// the source repository reaches (so a branch merged into anything there,
// or merged with Merge, counts as saved, and so does one the agent pushed
// to the remote and the person fetched). A session that saved nothing
// has nothing to lose. Everything is read from Sandbar's repository.
func CheckRemovable(ctx context.Context, source Repo, m *Mirror, id, base string) error {
	if source.Root == "" || m == nil {
		return errors.New("check the session's work: no repository given")
	}
	saved, ok := m.Saved(ctx, id)
	if !ok {
		return nil
	}
	unc, err := m.uncommittedSaved(ctx, saved)
	if err != nil {
		return fmt.Errorf("%w: use --force to delete it anyway", err)
	}
	out, err := git(ctx, m.Dir, "log", "-z", "--format=%H%x1f%s", saved.Branch, "--not", base, "--")
	if err != nil {
		return fmt.Errorf("list the session's commits: %w: use --force to delete it anyway", err)
	}
	unm, err := notIn(ctx, source.Root, out)
	if err != nil {
		return fmt.Errorf("%w: use --force to delete it anyway", err)
	}
	if len(unc) == 0 && len(unm) == 0 {
		return nil
	}
	return &DirtyError{Repo: source.Root, Uncommitted: unc, Unmerged: unm}
}

// notIn takes `git log -z --format=%H%x1f%s` output and returns the
// subjects of the commits that root lacks or that no ref of root reaches.
func notIn(ctx context.Context, root, log string) ([]string, error) {
	type cand struct{ hash, subject string }
	var cands []cand
	for _, rec := range splitZ(log) {
		h, s, _ := strings.Cut(strings.TrimLeft(rec, "\n"), "\x1f")
		cands = append(cands, cand{h, s})
	}
	if len(cands) == 0 {
		return nil, nil
	}

	// Which of them the source has at all...
	var q strings.Builder
	for _, c := range cands {
		q.WriteString(c.hash + "\n")
	}
	out, err := gitInput(ctx, root, strings.NewReader(q.String()), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, fmt.Errorf("look up the session's commits in %s: %w", root, err)
	}
	have := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if h, t, _ := strings.Cut(line, " "); t == "commit" {
			have[h] = true
		}
	}
	// ...and which of those no ref there reaches.
	var present []string
	for _, c := range cands {
		if have[c.hash] {
			present = append(present, c.hash)
		}
	}
	unreached := map[string]bool{}
	if len(present) > 0 {
		out, err = gitInput(ctx, root, strings.NewReader(strings.Join(present, "\n")+"\n"), "rev-list", "--stdin", "--not", "--all")
		if err != nil {
			return nil, fmt.Errorf("check the session's commits against %s: %w", root, err)
		}
		for _, h := range strings.Fields(out) {
			unreached[h] = true
		}
	}
	var subjects []string
	for _, c := range cands {
		if !have[c.hash] || unreached[c.hash] {
			subjects = append(subjects, c.subject)
		}
	}
	return subjects, nil
}
