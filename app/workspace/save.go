package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SaveScript runs in the session's VM, in its clone, as the agent user
// (sh -c SaveScript sandbar-save BRANCH BASE). It writes one header line,
// "sandbar-save 1 <branch> <snapshot> <head>\n", then a pack of every
// object the branch and the snapshot have that BASE lacks. The snapshot is
// a commit on top of HEAD holding the working tree as it is, untracked
// files included (ignored ones not), made with a private index so the
// agent's own index and refs are not touched; it is HEAD itself when
// nothing is uncommitted. Whatever it prints is hostile input to the host
// (see Mirror.ImportSave).
const SaveScript = `set -e
branch=$1 base=$2
t=$(mktemp -d /var/tmp/sandbar-save.XXXXXX)
trap 'rm -rf "$t"' EXIT
export GIT_INDEX_FILE="$t/index" GIT_OPTIONAL_LOCKS=0
export GIT_AUTHOR_NAME=Sandbar GIT_AUTHOR_EMAIL=sandbar@localhost GIT_COMMITTER_NAME=Sandbar GIT_COMMITTER_EMAIL=sandbar@localhost
head=$(git rev-parse -q --verify 'HEAD^{commit}') || head=$base
br=$(git rev-parse -q --verify "refs/heads/$branch^{commit}") || br=$head
idx=$(git rev-parse --git-path index)
if [ -f "$idx" ]; then cp "$idx" "$GIT_INDEX_FILE"; else git read-tree "$head"; fi
git add -A
tree=$(git write-tree)
if [ "$tree" = "$(git rev-parse "$head^{tree}")" ]; then
	snap=$head
else
	snap=$(echo 'Sandbar: uncommitted work' | git commit-tree -p "$head" "$tree")
fi
printf 'sandbar-save 1 %s %s %s\n' "$br" "$snap" "$head"
printf '%s\n%s\n^%s\n' "$br" "$snap" "$base" | git pack-objects --revs --stdout -q --delta-base-offset
`

// SaveInfo is a session's work as ImportSave took it in.
type SaveInfo struct {
	// Branch, Snapshot and Head are commits: the session's branch, the
	// snapshot of its working tree, and the HEAD that snapshot sits on.
	Branch, Snapshot, Head string
	// Submodules maps the path of each checked-out submodule (nested ones
	// too) to its HEAD, as sent.
	Submodules map[string]string
	// Bytes is the size of the packs that carried them.
	Bytes int64
}

// ErrSaveTooLarge: the session's work is bigger than ImportSave accepts.
var ErrSaveTooLarge = errors.New("the session's work is too large")

// ImportSave reads what SaveScript printed and takes it into the mirror
// as the session's saved work (refs/sandbar/sessions/<id>/...). The input
// is data from the agent's VM: the header is parsed with a bound, the
// pack is read by `git index-pack --strict` (the check a server makes of a
// push) with at most max bytes, every named commit must be whole in the
// mirror afterwards, and only then do the session's refs move. Nothing of
// the agent's configuration exists here, so nothing of it can run.
func (m *Mirror) ImportSave(ctx context.Context, r io.Reader, id string, max int64) (SaveInfo, error) {
	if err := validSessionID(id); err != nil {
		return SaveInfo{}, err
	}
	br := bufio.NewReaderSize(r, 4096)
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return SaveInfo{}, errors.New("the VM sent nothing back: git in the session's clone failed (see the session's log)")
		}
		return SaveInfo{}, fmt.Errorf("read the session's work: the VM sent a malformed header (%q)", truncate(string(line), 80))
	}
	f := strings.Fields(string(line))
	if len(f) != 5 || f[0] != "sandbar-save" || f[1] != "1" || !isHex(f[2]) || !isHex(f[3]) || !isHex(f[4]) {
		return SaveInfo{}, fmt.Errorf("read the session's work: the VM sent a malformed header (%q)", truncate(string(line), 80))
	}
	info := SaveInfo{Branch: f[2], Snapshot: f[3], Head: f[4]}

	ctx, cancel := withDeadline(ctx)
	defer cancel()
	lr := &io.LimitedReader{R: br, N: max + 1}
	cr := &countReader{r: lr}
	cmd := command(ctx, m.Dir, "index-pack", "--stdin", "--strict")
	cmd.Stdin = cr
	var errb strings.Builder
	cmd.Stdout = io.Discard
	cmd.Stderr = &limitedBuilder{b: &errb, n: 8192}
	err = cmd.Run()
	info.Bytes = cr.n
	if lr.N <= 0 {
		return info, fmt.Errorf("%w: it passes %d MiB: commit less (large files belong outside git), or raise the limit", ErrSaveTooLarge, max>>20)
	}
	if err != nil {
		if ctx.Err() != nil {
			return info, ctx.Err()
		}
		return info, fmt.Errorf("the session's work did not pass git's checks (%s): it was not saved", lastLines(errb.String(), 3))
	}
	// Every commit named must be whole: the pack plus what the mirror had.
	want := []string{info.Branch, info.Snapshot, info.Head}
	for _, c := range want {
		if !m.hasCommit(ctx, c) {
			return info, fmt.Errorf("the session's work names commit %s, which it did not send: it was not saved", short(c))
		}
	}
	if _, err := git(ctx, m.Dir, append([]string{"rev-list", "--objects", "--quiet"}, append(want, "--not", "--all")...)...); err != nil {
		if ctx.Err() != nil {
			return info, ctx.Err()
		}
		return info, fmt.Errorf("the session's work is missing objects (%s): it was not saved", gitMessage(err))
	}
	var tx strings.Builder
	tx.WriteString("start\n")
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "branch"), info.Branch)
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "snapshot"), info.Snapshot)
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "head"), info.Head)
	tx.WriteString("prepare\ncommit\n")
	if _, err := gitInput(ctx, m.Dir, strings.NewReader(tx.String()), "update-ref", "--stdin"); err != nil {
		return info, fmt.Errorf("record the session's work in %s: %w", m.Dir, err)
	}
	return info, nil
}

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
	var ch Changes
	var err error
	ch.DiffStat, err = git(ctx, m.Dir, "diff", "--stat", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, s.Snapshot, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("diff the session's work against %s: %w", short(base), err)
	}
	ns, err := git(ctx, m.Dir, "diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", base, s.Snapshot, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("diff the session's work against %s: %w", short(base), err)
	}
	ch.Files = parseNameStatus(ns)
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
	out, err := git(ctx, m.Dir, "diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, s.Snapshot, "--", ":(literal)"+file)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", file, err)
	}
	return truncate(out, max), nil
}

// uncommittedSaved lists the files the snapshot changes on top of HEAD.
func (m *Mirror) uncommittedSaved(ctx context.Context, s SaveInfo) ([]string, error) {
	if s.Snapshot == s.Head {
		return nil, nil
	}
	out, err := git(ctx, m.Dir, "diff", "--name-only", "-z", "--no-renames", s.Head, s.Snapshot, "--")
	if err != nil {
		return nil, fmt.Errorf("list the session's uncommitted files: %w", err)
	}
	return splitZ(out), nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// limitedBuilder keeps the first n bytes written to it.
type limitedBuilder struct {
	b *strings.Builder
	n int
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
