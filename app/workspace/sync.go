package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Syncing a session with the person's branch: the branch is fetched
// into Sandbar's repository (Mirror.Fetch, data only: git runs in the
// person's repository only as upload-pack), and from there goes to the
// session's clone as a git bundle on an exec's stdin, which the clone
// fetches as refs/remotes/origin/<branch> (SyncFetchScript). Merging or
// rebasing onto it then runs in the VM, as the agent's user, with
// Sandbar's git (SyncScript): the host never runs git on the clone.

// SyncRef is where a session's clone holds the person's branch.
func SyncRef(branch string) string { return "refs/remotes/origin/" + branch }

// SyncName is SyncRef as people type it: origin/<branch>.
func SyncName(branch string) string { return "origin/" + branch }

// CheckBranchName refuses a branch name git would not take as a branch
// (so that SyncRef is a well-formed ref), saying what to do.
func CheckBranchName(ctx context.Context, branch string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("%q is not a branch name: check out a branch in the repository and sync again", branch)
	}
	if _, err := git(ctx, "", "check-ref-format", "refs/heads/"+branch); err != nil {
		return fmt.Errorf("%q is not a branch name git takes: check out a branch in the repository and sync again", branch)
	}
	return nil
}

// syncBundleRef names, in the mirror, the commit a bundle for session id
// carries, while the bundle is written (git bundle takes refs only).
func syncBundleRef(id string) string { return sessionRef(id, "sync") }

// SyncBundle prepares a git bundle of commit (already in the mirror:
// see Fetch) for session id's clone, whose only prerequisite is base,
// the commit the clone was made at (its whole history is on the
// session's read-only base disk). It returns the ref name the bundle
// carries the commit under, for SyncFetchScript, and write, which
// writes the bundle; "" and nil when base already holds commit and no
// bundle is needed.
func (m *Mirror) SyncBundle(ctx context.Context, id, commit, base string) (ref string, write func(io.Writer) error, err error) {
	if err := validSessionID(id); err != nil {
		return "", nil, err
	}
	if !isHex(commit) || !isHex(base) {
		return "", nil, fmt.Errorf("sync session %s: %q and %q are not both commit ids", id, commit, base)
	}
	if _, err := git(ctx, m.Dir, "merge-base", "--is-ancestor", commit, base); err == nil {
		return "", nil, nil
	} else if exitCode(err) != 1 {
		return "", nil, fmt.Errorf("compare %s with the session's base %s in Sandbar's repository: %w", short(commit), short(base), err)
	}
	ref = syncBundleRef(id)
	write = func(w io.Writer) error {
		if _, err := git(ctx, m.Dir, "update-ref", "--no-deref", ref, commit); err != nil {
			return fmt.Errorf("mark %s for session %s in Sandbar's repository: %w", short(commit), id, err)
		}
		defer func() {
			// Its objects stay reachable from the source's refs; a
			// failure here leaves a ref the session's Forget removes.
			_, _ = git(context.WithoutCancel(ctx), m.Dir, "update-ref", "-d", ref)
		}()
		if err := gitTo(ctx, m.Dir, nil, nil, w, "-c", "pack.threads=1", "bundle", "create", "-", ref, "^"+base); err != nil {
			return fmt.Errorf("write the bundle of %s for session %s: %w", short(commit), id, err)
		}
		return nil
	}
	return ref, write, nil
}

// SyncFetchScript makes the clone in a session's VM hold the person's
// branch at a commit as a remote-tracking branch. Arguments: the ref to
// set ($1, SyncRef), the commit ($2), and the ref a bundle on stdin
// carries it under ($3, from SyncBundle), "" when the clone has the
// commit already. It prints the commits HEAD has that the ref lacks and
// the ones the ref has that HEAD lacks, as `git rev-list --left-right
// --count` does. Run with Sandbar's git in the workspace, as the agent's
// user: what it fetches is Sandbar's bundle, and it writes only the
// clone.
const SyncFetchScript = `set -eu
ref=$1 want=$2 src=$3
if [ -n "$src" ]; then
	gd=$(git rev-parse --absolute-git-dir)
	tmp=$(mktemp "$gd/sandbar-sync.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	cat >"$tmp"
	git -c gc.auto=0 -c maintenance.auto=false fetch -q --no-tags --no-write-fetch-head --no-recurse-submodules "$tmp" "+$src:$ref"
else
	git cat-file -e "$want^{commit}" 2>/dev/null || { echo "commit $want is not in the clone" >&2; exit 3; }
	git update-ref -m "sandbar: sync" "$ref" "$want"
fi
[ "$(git rev-parse -q --verify "$ref^{commit}")" = "$want" ] || { echo "$ref is not at $want after the fetch" >&2; exit 3; }
git rev-list --left-right --count "HEAD...$ref" 2>/dev/null || echo "0 0"
`

// SyncScript merges ($1 = merge) or rebases ($1 = rebase) the clone's
// checked-out branch onto a ref ($2), or only reports ($1 = status). It
// prints, whatever happened: the operation in progress (merge, rebase or
// none) on a line, HEAD on the next, then the unmerged files, each ended
// by NUL; and exits as git did. Without an identity of the agent's, the
// commit is Sandbar's. Run with Sandbar's git in the workspace, as the
// agent's user.
const SyncScript = `set -u
mode=$1 ref=$2
export GIT_EDITOR=true GIT_MERGE_AUTOEDIT=no
if [ -z "$(git config user.email 2>/dev/null)" ]; then
	export GIT_AUTHOR_NAME=Sandbar GIT_AUTHOR_EMAIL=sandbar@localhost GIT_COMMITTER_NAME=Sandbar GIT_COMMITTER_EMAIL=sandbar@localhost
fi
report() {
	if [ -e "$(git rev-parse --git-path rebase-merge)" ] || [ -e "$(git rev-parse --git-path rebase-apply)" ]; then echo rebase
	elif git rev-parse -q --verify MERGE_HEAD >/dev/null 2>&1; then echo merge
	else echo none; fi
	git rev-parse -q --verify HEAD 2>/dev/null || echo
	git diff --name-only --diff-filter=U -z 2>/dev/null
}
rc=0
case $mode in
status) ;;
merge) git merge --no-edit "$ref" >&2 || rc=$? ;;
rebase) git rebase "$ref" >&2 || rc=$? ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
report
exit $rc
`

// SyncState is what SyncScript reports of the clone.
type SyncState struct {
	// Op is the operation left in progress: "merge", "rebase", or "".
	Op string
	// Head is the clone's HEAD.
	Head string
	// Conflicts lists the unmerged files, each as SafeName shows it, at
	// most MaxConflicts of them; More counts the rest.
	Conflicts []string
	More      int
}

// MaxConflicts bounds the conflicting files a SyncState names.
const MaxConflicts = 50

// maxSyncName bounds one conflicting file's name as SafeName shows it.
const maxSyncName = 300

// ParseSyncState reads SyncScript's output, which came from the guest:
// every field is checked, names are bounded and made safe to show.
func ParseSyncState(out []byte) (SyncState, error) {
	var st SyncState
	op, rest, ok := bytes.Cut(out, []byte("\n"))
	if !ok {
		return st, errors.New("the clone's state came back cut short")
	}
	switch string(op) {
	case "merge", "rebase":
		st.Op = string(op)
	case "none":
	default:
		return st, fmt.Errorf("the clone reported an operation %s", strconv.Quote(string(clipBytes(op, 40))))
	}
	head, rest, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || (len(head) > 0 && !isHex(string(head))) {
		return st, errors.New("the clone's HEAD came back malformed")
	}
	st.Head = string(head)
	for _, name := range bytes.Split(rest, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		if len(st.Conflicts) == MaxConflicts {
			st.More++
			continue
		}
		st.Conflicts = append(st.Conflicts, SafeName(string(name)))
	}
	return st, nil
}

// ParseAheadBehind reads SyncFetchScript's counts.
func ParseAheadBehind(out []byte) (ahead, behind int, err error) {
	f := strings.Fields(string(clipBytes(out, 64)))
	if len(f) != 2 {
		return 0, 0, errors.New("the clone's counts came back malformed")
	}
	ahead, err1 := strconv.Atoi(f[0])
	behind, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || ahead < 0 || behind < 0 {
		return 0, 0, errors.New("the clone's counts came back malformed")
	}
	return ahead, behind, nil
}

// SafeName is a file name from the guest as Sandbar shows it, in a
// window, a terminal or a message to the agent: as it is when every
// rune is printable (no controls, no bidirectional overrides, valid
// UTF-8), quoted with escapes otherwise, and cut to a bounded length.
func SafeName(name string) string {
	ok := utf8.ValidString(name)
	for _, r := range name {
		if !ok || !unicode.IsPrint(r) && r != ' ' {
			ok = false
			break
		}
	}
	if !ok {
		// Format runes (bidirectional overrides) are not graphic:
		// they are escaped too.
		name = strconv.QuoteToGraphic(name)
	}
	if utf8.RuneCountInString(name) > maxSyncName {
		name = string([]rune(name)[:maxSyncName-1]) + "…"
	}
	return name
}

func clipBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
