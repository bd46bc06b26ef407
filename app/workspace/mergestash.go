package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrStashable: a merge into was refused for uncommitted changes in the
// working tree that the session's work does not touch, so "Stash, merge,
// unstash" (MergeIntoStashing) can do it. It comes with ErrDirtyTree.
var ErrStashable = errors.New("the uncommitted changes can be stashed for the merge")

// MergeIntoStashing is MergeInto for a working tree with uncommitted
// changes to tracked files that the session's work does not change: it
// stashes them (git stash push, under the same neutral settings as the
// checkout: no hooks, every filter driver blank), merges, and puts them
// back (git stash apply --index), then drops the stash. Changes in files
// the work also changes are refused as MergeInto refuses them, naming
// those files, and nothing is stashed. A merge that fails after the stash
// is undone as MergeInto undoes it, and the changes are put back. Where
// they cannot be put back (the person changed the same files meanwhile,
// or git refuses), the stash stays, and MergeResult.StashKept, or the
// error when the merge failed too, says how to get it back.
func MergeIntoStashing(ctx context.Context, source Repo, m *Mirror, id, branch string, acceptSteering bool) (MergeResult, error) {
	return mergeInto(ctx, source, m, id, branch, acceptSteering, false, true)
}

// trackedChanges lists the tracked files with changes in the working tree
// or index of root, and refuses (ErrDirtyTree) a merge, rebase,
// cherry-pick or revert half done. Untracked files are left to git, which
// never overwrites one. Nothing is written: status runs without optional
// locks (see gitEnv). neutral, when given, is the checkout's settings
// (see neutralArgs): after a merge the tree's attributes may be the
// session's, and status runs a file's clean filter to compare it.
func trackedChanges(ctx context.Context, root string, neutral []string) ([]string, error) {
	paths, err := gitPaths(ctx, root, opPaths...)
	if err != nil {
		return nil, err
	}
	if op := operationIn(paths); op != "" {
		return nil, busyError(root, op)
	}
	out, err := git(ctx, root, append(slices.Clone(neutral), "status", "--porcelain=v1", "-z", "--untracked-files=no")...)
	if err != nil {
		return nil, fmt.Errorf("read the status of %s: %w", root, err)
	}
	var files []string
	recs := splitZ(out)
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if len(r) < 4 {
			continue
		}
		files = append(files, r[3:])
		if r[0] == 'R' || r[0] == 'C' {
			files = append(files, recs[i+1]) // the name it came from
			i++
		}
	}
	return files, nil
}

// overlapping lists the paths of dirty that the session's work changes:
// the same path, or one inside a folder the other is.
func overlapping(dirty []string, changed []FileChange) []string {
	var out []string
	for _, d := range dirty {
		if slices.ContainsFunc(changed, func(f FileChange) bool { return samePathOrInside(d, f.Path) }) {
			out = append(out, d)
		}
	}
	return out
}

func samePathOrInside(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// stashable refuses (ErrDirtyTree) a merge into a working tree with
// changes in dirty unless stash is asked for and none of them is among
// what the session's work changes; the refusal says whether stashing
// would do (ErrStashable), and if not, which files stand in the way.
func stashable(root, id string, dirty []string, changed []FileChange, stash bool) error {
	if len(dirty) == 0 {
		return nil
	}
	head := fmt.Sprintf("your working tree has uncommitted changes in %s (%s): commit or stash them first", plural(len(dirty), "file", "files"), list(dirty, ", "))
	if both := overlapping(dirty, changed); len(both) > 0 {
		return refuse(fmt.Sprintf("%s; the session's work changes %s too, so Sandbar will not stash them for you", head, list(both, ", ")), ErrDirtyTree)
	}
	if stash {
		return nil
	}
	return refuse(fmt.Sprintf("%s, or let Sandbar stash them, merge and put them back (the session's work changes none of them): Stash, merge, unstash in the window, or `sandbar merge --into --stash %s`", head, shortID(id)), ErrDirtyTree, ErrStashable)
}

// shortID is a session id as the CLI takes it.
func shortID(id string) string {
	if len(id) > 6 {
		return id[:6]
	}
	return id
}

// stashed is the person's uncommitted changes, stashed for a merge.
type stashed struct {
	root    string
	neutral []string
	ident   []string
	// commit is the stash's commit; base the commit HEAD was at.
	commit, base string
	message      string
	files        []string
}

// stashPush stashes the uncommitted changes to tracked files of root
// (files) under the neutral settings, and returns the stash. Untracked
// files stay where they are.
func stashPush(ctx context.Context, root string, neutral, files []string, id, base string) (*stashed, error) {
	st := &stashed{root: root, neutral: neutral, ident: personIdent(ctx, root), base: base, files: files,
		message: "sandbar: your uncommitted changes, stashed to merge session " + shortID(id)}
	before, _ := gitLine(ctx, root, "rev-parse", "-q", "--verify", "refs/stash")
	args := append(slices.Clone(neutral), "-c", "gc.auto=0", "-c", "maintenance.auto=false",
		"stash", "push", "--quiet", "-m", st.message)
	if _, err := gitEnvInput(ctx, root, st.ident, nil, args...); err != nil {
		return nil, fmt.Errorf("stash your uncommitted changes in %s (%s): %s: nothing was merged; commit or stash them yourself, or create the branch instead", root, list(files, ", "), gitMessage(err))
	}
	c, err := gitLine(ctx, root, "rev-parse", "-q", "--verify", "refs/stash")
	if err != nil || c == before {
		return nil, fmt.Errorf("stash your uncommitted changes in %s: git stashed nothing: look at `git status` there, then merge again", root)
	}
	st.commit = c
	return st, nil
}

// keptError says where the stash is and how to get it back, with why it
// was not put back.
func (st *stashed) kept(why string) string {
	return fmt.Sprintf("your uncommitted changes in %s were not put back (%s): they are kept in git's stash as %s (%q; `git stash list` in %s shows it): `git stash apply %s` puts them back once you have dealt with that, and `git stash drop` then removes the entry",
		list(st.files, ", "), why, short(st.commit), st.message, st.root, short(st.commit))
}

// pop puts the stashed changes back on what the merge left, and drops the
// stash; where they cannot go back cleanly nothing is applied, the stash
// stays, and the message (kept) says how to get them back. It runs even
// when ctx is done: the changes must not stay stashed unsaid.
func (st *stashed) pop(ctx context.Context) (kept string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), GitDeadline/60)
	defer cancel()
	// What the stash changes, and what changed under it since it was
	// made: the same path in both would be a merge of contents, which
	// Sandbar does not make in the person's tree.
	mine, err := git(ctx, st.root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", st.base, st.commit, "--")
	if err != nil {
		return st.kept("Sandbar could not read what the stash holds: " + gitMessage(err))
	}
	moved, err := git(ctx, st.root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", st.base, "HEAD", "--")
	if err != nil {
		return st.kept("Sandbar could not read what changed since: " + gitMessage(err))
	}
	now, err := trackedChanges(ctx, st.root, st.neutral)
	if err != nil {
		return st.kept(err.Error())
	}
	var clash []string
	for _, p := range splitZ(mine) {
		if slices.ContainsFunc(append(splitZ(moved), now...), func(q string) bool { return samePathOrInside(p, q) }) {
			clash = append(clash, p)
		}
	}
	if len(clash) > 0 {
		return st.kept("they would conflict with what is now in " + list(clash, ", "))
	}
	args := append(slices.Clone(st.neutral), "-c", "gc.auto=0", "-c", "maintenance.auto=false",
		"stash", "apply", "--index", "--quiet", st.commit)
	if _, err := gitEnvInput(ctx, st.root, st.ident, nil, args...); err != nil {
		return st.kept("git stash apply: " + gitMessage(err) + "; look at `git status` first")
	}
	st.drop(ctx)
	return ""
}

// drop removes the stash's entry from the stash list, found by its
// commit: the person may have stashed something meanwhile.
func (st *stashed) drop(ctx context.Context) {
	out, err := git(ctx, st.root, "stash", "list", "--format=%H")
	if err != nil {
		return
	}
	for i, c := range strings.Split(strings.TrimSpace(out), "\n") {
		if c == st.commit {
			git(ctx, st.root, "stash", "drop", "--quiet", fmt.Sprintf("stash@{%d}", i))
			return
		}
	}
}

// restore puts the stash back after the merge's checkout (see pop), and
// says so in res, or in err when the merge failed.
func (st *stashed) restore(ctx context.Context, res MergeResult, err error) (MergeResult, error) {
	kept := st.pop(ctx)
	if kept == "" {
		res.Stashed = st.files
		return res, err
	}
	if err != nil {
		return res, fmt.Errorf("%w; and %s", err, kept)
	}
	res.StashKept = kept
	return res, nil
}
