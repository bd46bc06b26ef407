package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// A session that ends with uncommitted work has it committed on its
// branch by Sandbar (unless store.SettingAutoCommit is off): from the
// snapshot its last save brought back, in Sandbar's own repository
// (workspace.Mirror.CommitSnapshot), so nothing runs in the VM and a
// session that has already stopped is committed as well.

// autoCommitOn reports whether uncommitted work is committed when a
// session ends.
func (m *Manager) autoCommitOn(ctx context.Context) bool {
	v, _, _ := m.cfg.Store.Setting(ctx, store.SettingAutoCommit)
	return v != "off"
}

// maxSubject is the longest first line an auto-commit takes from a
// prompt; a longer one is cut, and the whole prompt is the body.
const maxSubject = 72

// commitMessage is the message of the commit of a session's uncommitted
// work: the prompt's first line as the subject and the rest as the body,
// a plain sentence when there is no prompt, and a trailer naming the
// session either way.
func commitMessage(prompt, id string) string {
	return sandbarCommitMessage(prompt, id, "Work left uncommitted by Sandbar session "+short(id),
		"Sandbar committed what the session left uncommitted when it ended.")
}

// sandbarCommitMessage is commitMessage with the subject used when there
// is no prompt, and the sentence that says why Sandbar made the commit.
func sandbarCommitMessage(prompt, id, noPrompt, why string) string {
	prompt = strings.TrimSpace(strings.ReplaceAll(prompt, "\r\n", "\n"))
	subject, body, _ := strings.Cut(prompt, "\n")
	subject = strings.TrimSpace(subject)
	body = strings.TrimSpace(body)
	if subject == "" {
		subject = noPrompt
	} else if utf8.RuneCountInString(subject) > maxSubject {
		subject = string([]rune(subject)[:maxSubject-1]) + "…"
		body = prompt
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	if body != "" {
		b.WriteString(body + "\n\n")
	}
	fmt.Fprintf(&b, "%s\n\nSandbar-Session: %s\n", why, id)
	return b.String()
}

// commitLeftover commits the session's saved uncommitted work (see
// above) in mr, and returns what it made, "" when there was nothing to
// commit. The caller holds the project's mirror.
func (m *Manager) commitLeftover(ctx context.Context, mr *workspace.Mirror, s store.Session) (string, error) {
	c, made, err := mr.CommitSnapshot(ctx, s.ID, commitMessage(s.Prompt, s.ID))
	if err != nil || !made {
		return "", err
	}
	return c, nil
}

// autoCommit commits what a session left uncommitted after the save at
// its end, when the setting says so, and says so in its log.
func (r *run) autoCommit(ctx context.Context, info workspace.SaveInfo) {
	if info.Snapshot == info.Head || !r.m.autoCommitOn(ctx) {
		return
	}
	mr, unlock, err := r.m.mirror(ctx, r.s.ProjectID)
	if err != nil {
		r.systemLine("the uncommitted work was not committed: " + err.Error() + ": it is kept as a snapshot; Merge commits it")
		return
	}
	defer unlock()
	files, _ := mr.SavedUncommitted(ctx, r.id)
	c, err := r.m.commitLeftover(ctx, mr, r.s)
	switch {
	case err != nil:
		r.systemLine("the uncommitted work was not committed: " + err.Error() + ": it is kept as a snapshot; Merge commits it")
	case c != "":
		subject, _, _ := strings.Cut(commitMessage(r.s.Prompt, r.id), "\n")
		r.systemLine(fmt.Sprintf("committed the uncommitted work (%s) on %s as %s %q (committing work a session leaves is on in Settings)",
			plural(len(files), "file", "files"), r.s.Branch, short7(c), subject))
	}
}

// short7 is a commit's short form.
func short7(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

// plural is "1 file", "3 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// adoptAutoCommit makes a restarted session's clone take the commit
// Sandbar made of its uncommitted work when it ended (autoCommit, on the
// host) as its branch's tip, so that the VM's history and the saved
// branch are one: the agent goes on from the commit Merge would bring
// home, and its next save builds on it. Nothing of it is lost when the
// clone cannot take it (the branch moved, an object is missing): the
// commit stays in Sandbar's repository, kept by keepEarlierSave, and the
// log says so.
func (r *run) adoptAutoCommit(ctx context.Context) {
	mr, unlock, err := r.m.mirror(ctx, r.s.ProjectID)
	if err != nil {
		r.log.Warn("read the session's saved work", "err", err)
		return
	}
	c, raw, ok, err := mr.AutoCommitFor(ctx, r.id)
	unlock()
	if err != nil {
		r.log.Warn("read the commit of the session's work", "err", err)
	}
	if !ok {
		return
	}
	switch err := r.adopt(ctx, c, raw); {
	case err == nil:
		r.systemLine(fmt.Sprintf("the clone in the VM goes on from %s, the commit Sandbar made of the uncommitted work when the session ended", short7(c)))
	default:
		r.systemLine(fmt.Sprintf("the clone in the VM did not take %s, the commit of the uncommitted work: %v; it is kept in Sandbar's repository", short7(c), err))
	}
}

// adopt makes the clone in the VM take c, a commit Sandbar made on the
// host of the work the VM saved (raw is its object), as its branch's tip
// (workspace.AdoptScript); the files stay as they are.
func (r *run) adopt(ctx context.Context, c string, raw []byte) error {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return fmt.Errorf("session %s is not running: %w", r.id, ErrState)
	}
	errb := &boundedBuffer{max: 2048}
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:  []string{"sh", "-c", workspace.AdoptScript, "sandbar-adopt", r.s.Branch, c},
		Stdin: raw, Tools: true, Timeout: time.Minute,
	}, nil, errb)
	switch {
	case err != nil:
		return err
	case res.Code != 0:
		return errors.New(r.red.Redact(oneLine(lastLine(errb.String()))))
	}
	return nil
}
