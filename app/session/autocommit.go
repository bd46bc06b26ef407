package session

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

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
	prompt = strings.TrimSpace(strings.ReplaceAll(prompt, "\r\n", "\n"))
	subject, body, _ := strings.Cut(prompt, "\n")
	subject = strings.TrimSpace(subject)
	body = strings.TrimSpace(body)
	if subject == "" {
		subject = "Work left uncommitted by Sandbar session " + short(id)
	} else if utf8.RuneCountInString(subject) > maxSubject {
		subject = string([]rune(subject)[:maxSubject-1]) + "…"
		body = prompt
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	if body != "" {
		b.WriteString(body + "\n\n")
	}
	fmt.Fprintf(&b, "Sandbar committed what the session left uncommitted when it ended.\n\nSandbar-Session: %s\n", id)
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
