package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Errors MergeInto wraps, checked with errors.Is. Each comes inside a
// message that says what to do.
var (
	// ErrNothingToMerge: the branch merged into already holds every
	// commit of the session's work, or the session made none.
	ErrNothingToMerge = errors.New("nothing to merge")
	// ErrDirtyTree: the source repository's working tree or index has
	// changes not committed, or an operation (a merge, a rebase) is half
	// done there.
	ErrDirtyTree = errors.New("working tree has uncommitted changes")
	// ErrConflict: merging would conflict.
	ErrConflict = errors.New("the merge conflicts")
	// ErrNoBranch: the source repository is not on a branch.
	ErrNoBranch = errors.New("not on a branch")
)

// MergeInto merges the session's saved branch (see Mirror.ImportSave)
// into the branch checked out in the source repository, and updates its
// working tree: the fast-forward or merge a person would make with git
// merge, made only when nothing of theirs can be lost.
//
//   - The working tree and index must be clean (untracked files may be
//     there; git refuses to overwrite one), HEAD on a branch, and no
//     merge or rebase half done: otherwise it refuses, having changed
//     nothing.
//
//   - The merge is worked out in Sandbar's repository: the branch's
//     history is fetched there (git runs in the source only as
//     upload-pack), `git merge-tree --write-tree` tests for conflicts
//     without a working tree, and a conflict is refused, naming the files.
//
//   - A merge that is not a fast-forward becomes a commit made there
//     (commit-tree, first parent the branch, by the person's git
//     identity), so that what reaches the source is always a
//     fast-forward of its branch: its objects are fetched in (no ref
//     written), and `git merge --ff-only` moves the branch and the
//     working tree together, with git's own checks that no local change
//     or untracked file is overwritten. A branch that moved meanwhile is
//     not fast-forwarded: nothing changes then either.
//
//   - Nothing the session's commits name runs, is read or is contacted:
//     the checkout runs with the source's hooks off and every filter
//     driver blanked (see neutralArgs), so git-lfs, a custom filter and
//     their endpoints are never reached; files under a filter are written
//     as stored in git.
//
//   - A steering file among what the working tree gets (see
//     steeringRules) is refused (a *SteeringError, ErrSteering) unless
//     acceptSteering: the person reviews those first.
//
//   - A checkout that fails is checked against what was there before
//     (see treeGuard), byte for byte, and anything it left is put back;
//     the error says "changed nothing" only once that holds, and
//     otherwise says what is left and where.
func MergeInto(ctx context.Context, source Repo, m *Mirror, id, branch string, acceptSteering bool) (MergeResult, error) {
	return mergeInto(ctx, source, m, id, branch, acceptSteering, false, false)
}

// mergeInto is MergeInto; unguarded is BenchmarkMergeInto's baseline
// only: the steps as they were before the steering files, the blanked
// filters and the guard (issue 21), so that their cost is measured
// against it in one run. stash is MergeIntoStashing's.
func mergeInto(ctx context.Context, source Repo, m *Mirror, id, branch string, acceptSteering, unguarded, stash bool) (MergeResult, error) {
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
	into, target, err := currentBranch(ctx, root)
	if err != nil {
		return MergeResult{}, err
	}
	// Changes of the person's are refused below, once it is known
	// whether the session's work touches them (see stashable).
	dirty, err := trackedChanges(ctx, root, nil)
	if err != nil {
		return MergeResult{}, err
	}
	if unguarded {
		if err := dirtyError(root, dirty); err != nil {
			return MergeResult{}, err
		}
	}
	res := MergeResult{Into: into, Previous: target}
	if res.Uncommitted, err = m.uncommittedSaved(ctx, saved); err != nil {
		return MergeResult{}, err
	}
	work := saved.Branch
	if _, err := m.Fetch(ctx, source, target, nil); err != nil {
		return MergeResult{}, err
	}
	if done, err := isAncestor(ctx, m.Dir, work, target); err != nil {
		return MergeResult{}, err
	} else if done {
		return res, refuse(fmt.Sprintf("nothing to merge: %s in %s already has the session's work", into, root), ErrNothingToMerge)
	}
	ff, err := isAncestor(ctx, m.Dir, target, work)
	if err != nil {
		return MergeResult{}, err
	}
	res.Commit, res.FastForward = work, ff
	if !ff {
		if res.Commit, err = m.mergeCommit(ctx, root, target, work, branch, into); err != nil {
			return MergeResult{}, err
		}
	}
	if unguarded {
		return m.mergeIntoUnguarded(ctx, root, branch, into, target, res)
	}
	// What the working tree gets: every path the checkout writes or
	// removes, and among them the steering files, which wait for the
	// person's yes before anything else is written.
	changed, err := m.changedBetween(ctx, target, res.Commit)
	if err != nil {
		return MergeResult{}, err
	}
	if err := stashable(root, id, dirty, changed, stash); err != nil {
		return MergeResult{}, err
	}
	res.Steering = SteeringIn(changed)
	if len(res.Steering) > 0 && !acceptSteering {
		return res, &SteeringError{ID: id, Into: into, Root: root, Files: res.Steering}
	}
	if res.Submodules, res.SkippedSubmodules, err = mergeModules(ctx, moduleRepo{dir: root}, m, res.Commit, "", branch, false, 0); err != nil {
		return MergeResult{}, err
	}
	// The objects only: no ref of the source is written by the fetch.
	if err := fetchLocal(ctx, root, m.Dir, res.Commit, into); err != nil {
		return MergeResult{}, err
	}
	neutral, err := neutralArgs(ctx, root)
	if err != nil {
		return MergeResult{}, err
	}
	paths := make([]string, len(changed))
	for i, f := range changed {
		paths[i] = f.Path
	}
	if len(dirty) == 0 {
		return checkout(ctx, root, neutral, paths, into, target, res)
	}
	st, err := stashPush(ctx, root, neutral, dirty, id, target)
	if err != nil {
		return MergeResult{}, err
	}
	res, err = checkout(ctx, root, neutral, paths, into, target, res)
	return st.restore(ctx, res, err)
}

// checkout moves the source's branch into, at target, and its working
// tree to res.Commit, a fast-forward, guarded (see treeGuard): the end of
// mergeInto, once the commit's objects are in the source.
func checkout(ctx context.Context, root string, neutral, paths []string, into, target string, res MergeResult) (MergeResult, error) {
	// The person may have worked meanwhile: look again, just before the
	// working tree changes, and keep what is there to check against.
	g, err := guardTree(ctx, root, neutral, paths)
	if err != nil {
		return MergeResult{}, err
	}
	if now, head := g.branch(); now != into || head != target {
		return MergeResult{}, fmt.Errorf("%s changed while Sandbar was merging (now %s at %s): merge again", root, orDetached(now), short(head))
	}
	if g.busy != "" {
		return MergeResult{}, busyError(root, g.busy)
	}
	if err := dirtyError(root, g.tracked()); err != nil {
		return MergeResult{}, err
	}
	args := append(neutral, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "merge.autoStash=false",
		"merge", "--ff-only", "--no-autostash", "--no-verify-signatures", "--quiet", "--no-stat", res.Commit)
	if _, err := git(ctx, root, args...); err != nil {
		return MergeResult{}, g.failed(ctx, into, gitMessage(err), err)
	}
	res.Updated = true
	return res, nil
}

// mergeIntoUnguarded is the end of mergeInto as it was before issue 21,
// for the benchmark's baseline (see mergeInto); nothing else calls it.
func (m *Mirror) mergeIntoUnguarded(ctx context.Context, root, branch, into, target string, res MergeResult) (MergeResult, error) {
	var err error
	if res.Submodules, res.SkippedSubmodules, err = mergeModules(ctx, moduleRepo{dir: root}, m, res.Commit, "", branch, false, 0); err != nil {
		return MergeResult{}, err
	}
	if err := fetchLocal(ctx, root, m.Dir, res.Commit, into); err != nil {
		return MergeResult{}, err
	}
	if now, head, err := currentBranch(ctx, root); err != nil {
		return MergeResult{}, err
	} else if now != into || head != target {
		return MergeResult{}, fmt.Errorf("%s changed while Sandbar was merging: merge again", root)
	}
	if err := cleanTree(ctx, root); err != nil {
		return MergeResult{}, err
	}
	if _, err := git(ctx, root, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "submodule.recurse=false",
		"-c", "merge.autoStash=false", "merge", "--ff-only", "--no-autostash", "--quiet", "--no-stat", res.Commit); err != nil {
		return MergeResult{}, err
	}
	res.Updated = true
	return res, nil
}

func orDetached(branch string) string {
	if branch == "" {
		return "a detached HEAD"
	}
	return branch
}

// mergeCommit merges work into target in Sandbar's repository and
// returns the merge commit, or refuses (ErrConflict) naming the files
// that conflict. Nothing of the source's configuration is read but its
// git identity.
func (m *Mirror) mergeCommit(ctx context.Context, root, target, work, branch, into string) (string, error) {
	out, err := git(ctx, m.Dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", target, work)
	fields := strings.Split(out, "\x00")
	switch {
	case err == nil:
	case exitCode(err) == 1 && len(fields) > 1:
		var files []string
		for _, f := range fields[1:] {
			if f == "" {
				break
			}
			files = append(files, f)
		}
		return "", refuse(fmt.Sprintf("the merge conflicts in %s: create the branch instead and merge it yourself", list(files, ", ")), ErrConflict)
	case ctx.Err() != nil:
		return "", err
	case strings.Contains(gitMessage(err), "write-tree"), strings.Contains(gitMessage(err), "usage"):
		return "", refuse(fmt.Sprintf("the installed git cannot test a merge without a working tree (%s): install git 2.38 or newer, or create the branch instead", gitMessage(err)), ErrOldGit)
	default:
		return "", fmt.Errorf("merge the session's work with %s: %w", into, err)
	}
	tree := strings.TrimSpace(fields[0])
	msg := fmt.Sprintf("Merge branch '%s' into %s\n", branch, into)
	c, err := gitEnvInput(ctx, m.Dir, personIdent(ctx, root), strings.NewReader(msg), "commit-tree", "--no-gpg-sign", tree, "-p", target, "-p", work)
	if err != nil {
		return "", fmt.Errorf("make the merge commit: %w", err)
	}
	return strings.TrimSpace(c), nil
}

// personIdent is the environment naming the source repository's git
// identity as author and committer, or Sandbar's when it has none.
func personIdent(ctx context.Context, root string) []string {
	out, err := gitLine(ctx, root, "var", "GIT_COMMITTER_IDENT")
	lt, gt := strings.Index(out, " <"), strings.LastIndex(out, ">")
	if err != nil || lt <= 0 || gt < lt {
		return autoCommitter
	}
	name, email := out[:lt], out[lt+2:gt]
	return []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email}
}

// currentBranch returns the branch checked out in root and its commit,
// or refuses (ErrNoBranch) when HEAD is detached or the branch has no
// commits.
func currentBranch(ctx context.Context, root string) (branch, commit string, err error) {
	ref, err := gitLine(ctx, root, "symbolic-ref", "-q", "HEAD")
	switch {
	case err == nil && strings.HasPrefix(ref, "refs/heads/"):
	case err == nil || exitCode(err) == 1:
		return "", "", refuse(fmt.Sprintf("%s is not on a branch (HEAD is detached): check out the branch to merge into, or create the branch instead", root), ErrNoBranch)
	default:
		return "", "", fmt.Errorf("read the current branch of %s: %w", root, err)
	}
	branch = strings.TrimPrefix(ref, "refs/heads/")
	commit, err = gitLine(ctx, root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", "", err
		}
		return "", "", refuse(fmt.Sprintf("%s in %s has no commits yet: commit something first, or create the branch instead", branch, root), ErrNoBranch)
	}
	return branch, commit, nil
}

// CurrentBranch is the branch checked out in the source repository, ""
// when HEAD is detached or unreadable.
func CurrentBranch(ctx context.Context, source Repo) string {
	b, _, err := currentBranch(ctx, source.Root)
	if err != nil {
		return ""
	}
	return b
}

// cleanTree refuses (ErrDirtyTree) a working tree or index with changes
// to tracked files, and an operation half done (see trackedChanges).
func cleanTree(ctx context.Context, root string) error {
	files, err := trackedChanges(ctx, root, nil)
	if err != nil {
		return err
	}
	return dirtyError(root, files)
}

func busyError(root, op string) error {
	return refuse(fmt.Sprintf("%s is in the middle of %s: finish or abort it first", root, op), ErrDirtyTree)
}

// dirtyError refuses a merge into a tree with changes in files; nil when
// files is empty.
func dirtyError(root string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	return refuse(fmt.Sprintf("your working tree has uncommitted changes in %s (%s): commit or stash them first", plural(len(files), "file", "files"), list(files, ", ")), ErrDirtyTree)
}

// Reaches reports whether rev (a branch, HEAD) of the source repository
// has commit in its history; false when the source lacks the commit.
func Reaches(ctx context.Context, source Repo, rev, commit string) bool {
	ok, err := isAncestor(ctx, source.Root, commit, rev)
	return err == nil && ok
}

// BranchAt is the commit the branch points at in the source repository,
// "" when it does not exist.
func BranchAt(ctx context.Context, source Repo, branch string) string {
	c, err := gitLine(ctx, source.Root, "rev-parse", "-q", "--verify", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return c
}
