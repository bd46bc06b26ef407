package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sandbar/app/store"
)

// ErrNothingToCommit: Commit found no uncommitted work in the session.
var ErrNothingToCommit = errors.New("nothing to commit")

// CommitResult says what Commit made.
type CommitResult struct {
	// Commit is the commit made on the session's branch; Branch that
	// branch; Subject the message's first line.
	Commit, Branch, Subject string
	// Files are the files with uncommitted work it committed, as the
	// agent named them.
	Files []string
	// Working: the agent was in the middle of a turn, so what was on the
	// session's disk at that moment was committed; what it writes after
	// stays uncommitted.
	Working bool
	// NotInClone, when the clone in the VM did not take the commit as its
	// branch's tip (the agent committed or held git's index meanwhile),
	// says why. The commit is kept in Sandbar's repository, but the next
	// save (a merge's too) takes the clone's branch as it is, with the
	// work uncommitted again: Commit again once the agent is idle.
	NotInClone string `json:",omitempty"`
}

// Commit saves a running session's work and commits what it has not
// committed on its branch, as Sandbar does when a session ends (see
// autoCommit): the commit is made on the host, in Sandbar's repository,
// from the save's snapshot, so nothing runs in the VM but the save and
// the clone taking that commit as its branch's tip (workspace.AdoptScript,
// as a restart does), which keeps the two histories one: the agent's
// next commit and the next save build on it. Merge then brings it home.
//
// message is the commit's message; "" makes one from the session's
// prompt. A session in the middle of a turn is committed as its disk is
// at that moment (CommitResult.Working). A session that is not running
// is refused (ErrState, saying that its work was saved when it stopped),
// and one with nothing uncommitted too (ErrNothingToCommit, naming the
// commit its work is saved at).
func (m *Manager) Commit(ctx context.Context, ref, message string) (CommitResult, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return CommitResult{}, err
	}
	r := m.running(s.ID)
	if r == nil || !r.vmUp() {
		if Live(s.State) && ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
			return CommitResult{}, fmt.Errorf("session %s runs in Sandbar process %d: %w", s.ID, s.Owner.PID, ErrOwnedElsewhere)
		}
		if Live(s.State) {
			return CommitResult{}, fmt.Errorf("session %s is %s: commit once it runs: %w", short(s.ID), s.State, ErrState)
		}
		return CommitResult{}, fmt.Errorf("session %s is %s, not running, so there is nothing to commit in it: its work was saved when it stopped (and committed, when \"Commit the work a session leaves\" is on in Settings): `sandbar merge %s` brings it home: %w", short(s.ID), s.State, short(s.ID), ErrState)
	}
	message = strings.TrimSpace(strings.ReplaceAll(message, "\r\n", "\n"))
	if strings.ContainsRune(message, 0) {
		return CommitResult{}, fmt.Errorf("the commit message holds a NUL byte: write it without one: %w", ErrBadOptions)
	}
	r.mu.Lock()
	working := r.started && r.activity != ActivityWaiting
	r.mu.Unlock()

	info, err := r.save(ctx)
	if err != nil {
		return CommitResult{}, fmt.Errorf("commit session %s's work: %w", short(s.ID), err)
	}
	res := CommitResult{Branch: s.Branch, Working: working}
	if info.Snapshot == info.Head {
		return res, fmt.Errorf("%w: the work is already saved at %s on %s (sandbar merge %s brings it home)", ErrNothingToCommit, short7(info.Branch), s.Branch, short(s.ID))
	}
	if message == "" {
		message = sandbarCommitMessage(s.Prompt, s.ID, "Work of Sandbar session "+short(s.ID),
			"Sandbar committed the session's work as it stood, at the person's request (Commit now).")
	} else {
		message += fmt.Sprintf("\n\nSandbar-Session: %s\n", s.ID)
	}
	res.Subject, _, _ = strings.Cut(message, "\n")

	mr, unlock, err := m.mirror(ctx, s.ProjectID)
	if err != nil {
		return res, err
	}
	res.Files, _ = mr.SavedUncommitted(ctx, s.ID)
	c, made, err := mr.CommitSnapshot(ctx, s.ID, message)
	if err == nil && !made {
		err = fmt.Errorf("%w: the work is already saved at %s on %s", ErrNothingToCommit, short7(c), s.Branch)
	}
	if err != nil {
		unlock()
		return res, fmt.Errorf("commit session %s's work: %w", short(s.ID), err)
	}
	res.Commit = c
	_, raw, ok, rerr := mr.AutoCommitFor(ctx, s.ID)
	unlock()
	m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "commit", Detail: c})

	switch {
	case rerr != nil:
		res.NotInClone = rerr.Error()
	case !ok:
		res.NotInClone = "a later save moved the branch past it"
	default:
		if err := r.adopt(ctx, c, raw); err != nil {
			res.NotInClone = err.Error()
		}
	}
	what := fmt.Sprintf("committed the session's work (%s) on %s as %s %q (Commit now)", plural(len(res.Files), "file", "files"), s.Branch, short7(c), res.Subject)
	if working {
		what += "; the agent was in the middle of a turn: what was on disk then is committed, and what it writes after stays uncommitted"
	}
	if res.NotInClone != "" {
		what += "; the clone in the VM did not take the commit (" + res.NotInClone + "): it is kept in Sandbar's repository, but the next save takes the clone's branch as it is: commit again once the agent is idle"
	}
	r.systemLine(what)
	return res, nil
}
