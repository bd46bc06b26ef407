package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// autoCommitter is who the commits CommitSnapshot makes are by: Sandbar,
// as the snapshots SaveScript makes are, so that nobody mistakes them for
// a commit the agent or the person made.
var autoCommitter = []string{
	"GIT_AUTHOR_NAME=Sandbar", "GIT_AUTHOR_EMAIL=sandbar@localhost",
	"GIT_COMMITTER_NAME=Sandbar", "GIT_COMMITTER_EMAIL=sandbar@localhost",
}

// CommitSnapshot turns the uncommitted work of a session's last save into
// a commit on its saved branch: a commit whose tree is the snapshot's
// (the working tree as it stood, untracked files included) and whose
// parent is the branch's tip, with message as its message. The session's
// branch, head and snapshot refs then all name that commit, so the work
// is merged like any other commit, and refs/sandbar/sessions/<id>/autocommit
// remembers which commit Sandbar made (see SaveInfo.AutoCommit).
//
// It runs only in Sandbar's repository, on objects already checked when
// they were saved: nothing of the agent's runs, and a session that has
// stopped is committed as well as one that is stopping. made is false,
// and nothing changes, when the save holds no uncommitted work.
func (m *Mirror) CommitSnapshot(ctx context.Context, id, message string) (commit string, made bool, err error) {
	s, ok := m.Saved(ctx, id)
	if !ok {
		return "", false, fmt.Errorf("session %s has no saved work to commit", id)
	}
	if s.Snapshot == s.Head {
		return s.Branch, false, nil
	}
	if strings.TrimSpace(message) == "" {
		return "", false, errors.New("commit the session's work: no message given")
	}
	tree, err := gitLine(ctx, m.Dir, "rev-parse", "--verify", "--end-of-options", s.Snapshot+"^{tree}")
	if err != nil {
		return "", false, fmt.Errorf("read the session's snapshot %s: %w", short(s.Snapshot), err)
	}
	env := append([]string{}, autoCommitter...)
	c, err := gitEnvInput(ctx, m.Dir, env, strings.NewReader(message), "commit-tree", "--no-gpg-sign", tree, "-p", s.Branch)
	if err != nil {
		return "", false, fmt.Errorf("commit the session's uncommitted work: %w", err)
	}
	c = strings.TrimSpace(c)
	// One transaction, checked against what the refs held: a save that
	// lands meanwhile wins, and this commit is simply not recorded.
	var tx strings.Builder
	tx.WriteString("start\n")
	fmt.Fprintf(&tx, "update %s %s %s\n", sessionRef(id, "branch"), c, s.Branch)
	fmt.Fprintf(&tx, "update %s %s %s\n", sessionRef(id, "head"), c, s.Head)
	fmt.Fprintf(&tx, "update %s %s %s\n", sessionRef(id, "snapshot"), c, s.Snapshot)
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "autocommit"), c)
	tx.WriteString("prepare\ncommit\n")
	if _, err := gitInput(ctx, m.Dir, strings.NewReader(tx.String()), "update-ref", "--stdin"); err != nil {
		return "", false, fmt.Errorf("record the commit of the session's work in %s: %w", m.Dir, err)
	}
	return c, true, nil
}

// AutoCommitFor is the commit Sandbar made of session id's uncommitted
// work (CommitSnapshot) while it is still the tip of the session's saved
// branch, with the commit object's raw bytes: what the session's clone
// in the VM needs to take it as its own history when it boots again (see
// AdoptScript). ok is false when there is none, or later work has been
// saved on top of it.
func (m *Mirror) AutoCommitFor(ctx context.Context, id string) (commit string, raw []byte, ok bool, err error) {
	s, saved := m.Saved(ctx, id)
	if !saved {
		return "", nil, false, nil
	}
	c, err := gitLine(ctx, m.Dir, "for-each-ref", "--format=%(objectname)", sessionRef(id, "autocommit"))
	if err != nil || c == "" || c != s.Branch {
		return "", nil, false, err
	}
	out, err := git(ctx, m.Dir, "cat-file", "commit", c)
	if err != nil {
		return "", nil, false, fmt.Errorf("read the commit of the session's work %s: %w", short(c), err)
	}
	return c, []byte(out), true, nil
}

// AdoptScript makes the clone in a session's VM take the commit Sandbar
// made of its uncommitted work on the host as its branch's tip, so that
// the two histories never diverge: it writes the commit object from its
// raw bytes on stdin (the tree is the VM's own, from the save), checks
// that it hashes to the commit ($2) and that its parent is the branch's
// tip ($1), moves the branch there, and sets the index to it; the files
// stay as they are. Run with Sandbar's git in the workspace; it exits 0
// at once when the branch is there already.
const AdoptScript = `set -eu
branch=$1 want=$2
cur=$(git rev-parse --verify -q "refs/heads/$branch^{commit}") || { echo "no branch $branch in the clone" >&2; exit 3; }
[ "$cur" = "$want" ] && exit 0
new=$(git hash-object -t commit -w --stdin)
[ "$new" = "$want" ] || { echo "the commit came out as $new, not $want" >&2; exit 3; }
git cat-file -e "$want^{tree}" || { echo "the commit's tree is not in the clone" >&2; exit 3; }
[ "$(git rev-parse "$want^")" = "$cur" ] || { echo "the branch has moved since the work was saved" >&2; exit 4; }
git update-ref -m "sandbar: the commit of the uncommitted work" "refs/heads/$branch" "$want" "$cur"
[ "$(git symbolic-ref -q HEAD)" = "refs/heads/$branch" ] && git reset -q
exit 0
`
