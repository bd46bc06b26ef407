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
