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
// (sh -c SaveScript sandbar-save BRANCH BASE). What it writes is, exactly:
//
//	sandbar-save 2 <branch> <snapshot> <head>\n
//	module <head> <bytes> <path>\n<bytes bytes: a pack>     (zero or more)
//	pack\n
//	<a pack, to the end>
//
// The last pack holds every object the branch and the snapshot have that
// BASE lacks. The snapshot is a commit on top of HEAD holding the working
// tree as it is, untracked files included (ignored ones not), made with a
// private index and a folder of objects of its own (whose packs the
// clone takes at the end), so the agent's own index and refs are not
// touched; it is
// HEAD itself when nothing is uncommitted, and it records each submodule
// at its HEAD (a gitlink), as git add -A does.
//
// Each module section is one checked-out submodule, nested ones too
// (at most 8 deep): <path> is its folder from the top of the clone (the
// rest of the line), <head> its HEAD, and the pack holds that HEAD's
// history and the commits its superproject records for it (in the index,
// HEAD and, at the top, the branch) less what the base disk brought
// (refs/sandbar/base in its git dir, which BuildBase writes). Sections are
// written whole to a file first; a submodule git cannot read is left out,
// and the project's own work is still saved. Uncommitted changes inside a
// submodule are not saved. Whatever the script prints is hostile input to
// the host (see Mirror.ImportSave).
const SaveScript = `set -e
branch=$1 base=$2
t=$(mktemp -d /tmp/sandbar-save.XXXXXX)
o=
trap 'rm -rf "$t" ${o:+"$o"}' EXIT
export GIT_INDEX_FILE=$t/index GIT_OPTIONAL_LOCKS=0
export GIT_AUTHOR_NAME=Sandbar GIT_AUTHOR_EMAIL=sandbar@localhost GIT_COMMITTER_NAME=Sandbar GIT_COMMITTER_EMAIL=sandbar@localhost
# Each on its own: rev-parse prints an argument it cannot resolve (a
# branch the supervisor has not made yet) where its id would be.
head=$(git rev-parse -q --verify 'HEAD^{commit}') || head=$base
htree=$(git rev-parse -q --verify 'HEAD^{tree}') || htree=
br=$(git rev-parse -q --verify "refs/heads/$branch^{commit}") || br=$head
objs=$(git rev-parse --path-format=absolute --git-path objects)
if [ -f .git/index ]; then cp -p .git/index "$GIT_INDEX_FILE"; else
	git read-tree "$head"
	# No index to start from (the agent removed .git/index or put a FIFO
	# there): this one has no file's stat data, so ls-files -m would read
	# every tracked file whole to compare it (minutes for a 2 GB sparse
	# file under emulation, in silence). Those over 64 MiB stay out of the
	# snapshot anyway: git takes them as unchanged, and stderr says which.
	: > "$t/bigtracked"
	git ls-files -z | find -files0-from - -maxdepth 0 -type f -size +65536k -fprint0 "$t/bigtracked" 2>/dev/null || :
	if [ -s "$t/bigtracked" ]; then
		git update-index -z --assume-unchanged --stdin < "$t/bigtracked"
		tr '\0' '\n' < "$t/bigtracked" | sed 's/^/sandbar-save: left out of the snapshot, over 64 MiB: /' | head -20 >&2
	fi
fi
# The objects the save makes go to a folder of its own beside the clone's
# (on its disk: /tmp is memory), removed when it ends; the clone takes
# their packs at the end (see below). Nothing is synced to disk
# (core.fsync=none): what must last is the copy the host takes in, and a
# VM that dies mid-save loses only a save it can make again.
o=$(mktemp -d "$objs/../sandbar-save.XXXXXX" 2>/dev/null) || o=$(mktemp -d "$t/objects.XXXXXX")
mkdir "$o/pack" "$o/info"
printf '%s\n' "$objs" > "$o/info/alternates"
export GIT_OBJECT_DIRECTORY=$o
export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=core.fsync GIT_CONFIG_VALUE_0=none
# The snapshot's trees are written loose, then joined into a pack: zlib's
# fastest level is enough.
export GIT_CONFIG_KEY_1=core.looseCompression GIT_CONFIG_VALUE_1=1
# Git's bulk check-in opens a zlib stream per object, and glibc hands its
# quarter megabyte back to the kernel after each (heap trimming), to
# fault it in again for the next: under emulation those page faults were
# most of the save's time (56,000 faults for 3,000 files, 500 without).
export MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_TOP_PAD_=16777216
# The private index takes the working tree's changes by git's own
# plumbing, a batch of paths at a time: never a process per file
# (thousands of files would take minutes). stderr says how far it got
# ("sandbar-save: progress …"), so a save that is busy is never taken for
# one that is stuck. Files over 64 MiB that are not committed stay out of
# the snapshot (it is for work in progress; a stray disk image would make
# every stop slow), and stderr says which.
echo "sandbar-save: progress listing changes" >&2
git ls-files -z -d > "$t/deleted"
git ls-files -z -m > "$t/changed"
git ls-files -z -o --exclude-standard >> "$t/changed"
: > "$t/big"
: > "$t/add"
# find stats each listed path once (deleted ones it cannot find: they are
# in $t/deleted), and sets folders apart: a folder ls-files ends with / is
# a repository of its own, one without is where the index has a file.
: > "$t/dirs"
[ ! -s "$t/changed" ] || find -files0-from "$t/changed" -maxdepth 0 \( -type f -size +65536k -fprint0 "$t/big" \) -o \( -type d -fprint0 "$t/dirs" \) -o -print0 > "$t/add" 2>/dev/null || :
if [ -s "$t/big" ]; then
	tr '\0' '\n' < "$t/big" | sed 's/^/sandbar-save: left out of the snapshot, over 64 MiB: /' | head -20 >&2
fi
if [ -s "$t/deleted" ] || [ -s "$t/dirs" ] || [ -s "$t/add" ]; then
	echo "sandbar-save: progress adding $(cat "$t/deleted" "$t/dirs" "$t/add" | tr -cd '\0' | wc -c) paths" >&2
	r=0
	# Deleted paths and folders first, in the private index itself: what
	# update-index makes of a folder depends on what the index has there
	# (a file leaves, a repository becomes a gitlink).
	if [ -s "$t/deleted" ] || [ -s "$t/dirs" ]; then
		cat "$t/deleted" "$t/dirs" | sed -z 's,/$,,' | git update-index -z --add --remove --replace --stdin || r=1
	fi
	# The files then go in batches of about 2,000 paths, as many at once as the
	# VM has CPUs (at most 4), each one update-index into an index of its
	# own (so none reads and writes the others' entries) and a folder of
	# objects of its own, and a progress line after each.
	# core.bigFileThreshold=1 has update-index stream every new blob into
	# a pack (git's bulk check-in) instead of a file per object, at
	# compression level 1. Git looks for each new blob in the object
	# store, and on a miss reads the folder of packs again: the batch's
	# folder starts empty, so that is cheap; with the clone's objects
	# looked in too (on the VM's overlay) the bench's save of 10,000
	# files took 33 s, and one folder for all batches makes each miss
	# read every other batch's packs. A blob the clone has already is
	# written again then; its gc drops the copy.
	# (--verbose would say each path, but it also ends the bulk check-in
	# at each: a pack per object.) The batches' entries then join the
	# private index in one pass (--index-info reads no file again): one
	# update-index over all the paths would write one pack, but git
	# compares each new blob with every one it wrote before.
	if [ "$r" = 0 ] && [ -s "$t/add" ]; then
		j=$(nproc 2>/dev/null) || j=1
		[ "$j" -le 4 ] || j=4
		# About 2,000 paths a batch, in a number of batches that is a
		# multiple of the CPUs, so that no CPU is left alone with the last
		# one (10,000 paths on 2 CPUs: 6 batches, not 5 with the fifth
		# alone; 1,000: 2 at once, not 1).
		n=$(tr -cd '\0' < "$t/add" | wc -c)
		k=$(( (n + 1999) / 2000 ))
		k=$(( (k + j - 1) / j * j ))
		[ "$k" -le "$n" ] || k=$n
		split -e -t '\0' -n "l/$k" -a 5 -d "$t/add" "$t/batch."
		k=$(ls "$t" | grep -c '^batch\.')
		ls "$t" | grep '^batch\.[0-9]*$' | xargs -P "$j" -n 1 sh -c '
			mkdir "$2/$4" "$2/$4/pack" || exit 1
			GIT_INDEX_FILE=$1/$4.index GIT_OBJECT_DIRECTORY=$2/$4 git -c core.bigFileThreshold=1 -c pack.compression=1 update-index -z --add --remove --replace --stdin < "$1/$4" || exit 1
			GIT_INDEX_FILE=$1/$4.index git ls-files -z -s > "$1/$4.entries" || exit 1
			n=${4#batch.}
			while [ "${n#0}" != "$n" ] && [ ${#n} -gt 1 ]; do n=${n#0}; done
			echo "sandbar-save: progress added a batch of paths ($((n + 1)) of $3)" >&2
		' sandbar-save-batch "$t" "$o" "$k" || r=1
		# (Each batch lists its entries itself, where the batches run at
		# once: under emulation a process takes a while to start.)
		if [ "$r" = 0 ]; then
			for b in $(ls "$t" | grep '^batch\.[0-9]*$'); do
				printf '%s\n' "$o/$b" >> "$o/info/alternates"
				printf '%s\0' "$t/$b.entries"
			done | xargs -0 cat > "$t/entries" || r=1
			echo "sandbar-save: progress joining the batches" >&2
		fi
		[ "$r" != 0 ] || git update-index -z --add --replace --index-info < "$t/entries" || r=1
	fi
	if [ "$r" != 0 ]; then
		# What update-index refuses (a folder that is a repository
		# without a commit, say) is git add's to judge, as before.
		echo "sandbar-save: progress update-index failed; adding with git add -A" >&2
		# The batches' objects are left out: git add writes its own.
		rm -rf "$o"/batch.*
		: > "$t/entries"
		printf '%s\n' "$objs" > "$o/info/alternates"
		if [ -f .git/index ]; then cp -p .git/index "$GIT_INDEX_FILE"; else rm -f "$GIT_INDEX_FILE"; git read-tree "$head"; fi
		sed -z 's/^/:(exclude,literal)/' "$t/big" > "$t/exclude"
		printf '.\0' >> "$t/exclude"
		git add -A --pathspec-from-file="$t/exclude" --pathspec-file-nul
	fi
fi
echo "sandbar-save: progress writing the snapshot" >&2
tree=$(git write-tree)
if [ "$tree" = "$htree" ]; then
	snap=$head
else
	snap=$(echo 'Sandbar: uncommitted work' | git commit-tree -p "$head" "$tree")
fi
# The clone keeps the objects the snapshot is made of, in one pack:
# Sandbar's commit of the uncommitted work becomes the clone's branch
# (AdoptScript), which needs its tree there. The batches' packs (a pack
# per 2,000 files) are joined with the loose objects (trees, the
# snapshot's commit, what git does not stream into a pack: empty files,
# symlinks, files with a filter) into that one pack, so a save of many
# files leaves one pack in the clone, not one per batch (at 50 the
# agent's git would start a gc of its own). The blobs are copied as they
# are (pack-objects reuses their compressed data), and --window=0 looks
# for no deltas: among a save's trees that search took most of this step.
# A file the clone had already is in that pack again, until its gc.
echo "sandbar-save: progress keeping the snapshot's objects in the clone" >&2
: > "$t/objects"
# The batches' blobs are those their entries name (an entry is
# "<mode> <id> <stage>\t<path>\0", and the path may hold a newline).
[ ! -s "$t/entries" ] || cut -z -d ' ' -f 2 "$t/entries" | tr '\0' '\n' > "$t/objects"
find "$o" -type f | sed -n 's,.*/\([0-9a-f][0-9a-f]\)/\([0-9a-f]\{38\}\)$,\1\2,p' >> "$t/objects"
[ ! -s "$t/objects" ] || git -c pack.compression=1 pack-objects --progress --window=0 "$objs/pack/pack" < "$t/objects" > /dev/null
# mods DIR PREFIX DEPTH BRANCH: a section per checked-out submodule of the
# repository at DIR (the top reads the private index), then its own.
mods() {
	[ "$3" -lt 8 ] || return 0
	git -c core.quotepath=off -C "$1" ls-files -s | grep '^160000 ' | while read -r mode obj stage p; do
		[ "$mode" = 160000 ] && [ -e "$1/$p/.git" ] || continue
		case $p in \"*) continue;; esac
		(
		unset GIT_INDEX_FILE GIT_OBJECT_DIRECTORY
		d=$1/$p
		h=$(git -C "$d" rev-parse -q --verify 'HEAD^{commit}') || exit 0
		{
			echo "$h"
			for c in "$obj" $(git -C "$1" rev-parse -q --verify "HEAD:$p" || :) ${4:+$(git -C "$1" rev-parse -q --verify "$4:$p" || :)}; do
				if git -C "$d" cat-file -e "$c^{commit}" 2>/dev/null; then echo "$c"; fi
			done
			if b=$(git -C "$d" rev-parse -q --verify 'refs/sandbar/base^{commit}'); then echo "^$b"; fi
		} > "$t/revs"
		git -C "$d" pack-objects --revs --stdout -q --delta-base-offset < "$t/revs" > "$t/p" || exit 0
		printf 'module %s %s %s\n' "$h" $(($(wc -c < "$t/p"))) "$2$p" >> "$t/modules"
		cat "$t/p" >> "$t/modules"
		mods "$d" "$2$p/" $(($3 + 1)) ""
		) || echo "sandbar-save: submodule $2$p not saved" >&2
	done
}
echo "sandbar-save: progress packing the work for Sandbar" >&2
: > "$t/modules"
mods . "" 0 "$br" || echo "sandbar-save: submodules not saved" >&2
printf 'sandbar-save 2 %s %s %s\n' "$br" "$snap" "$head"
cat "$t/modules"
printf 'pack\n'
printf '%s\n%s\n^%s\n' "$br" "$snap" "$base" | git -c pack.compression=1 pack-objects --revs --stdout --progress --delta-base-offset --window=0
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
	// AutoCommit is Branch when Branch is the commit CommitSnapshot made
	// of the session's uncommitted work, "" otherwise (Saved sets it).
	AutoCommit string
}

// ErrSaveTooLarge: the session's work is bigger than ImportSave accepts.
var ErrSaveTooLarge = errors.New("the session's work is too large")

// maxSavedModules bounds the submodule sections of one save.
const maxSavedModules = 100

// ImportSave reads what SaveScript printed and takes it into the mirror
// as the session's saved work (refs/sandbar/sessions/<id>/...). The input
// is data from the agent's VM: the header and each section line are
// parsed with a bound, every pack is read by `git index-pack --strict`
// (the check a server makes of a push), all of them together at most max
// bytes, every named commit must be whole in the mirror afterwards, and
// only then do the session's refs move. A submodule section is kept
// (refs/sandbar/sessions/<id>/modules/<path>, at its HEAD) only for a
// submodule the branch or the snapshot records. Nothing of the agent's
// configuration exists here, so nothing of it can run.
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
	if len(f) != 5 || f[0] != "sandbar-save" || f[1] != "2" || !isHex(f[2]) || !isHex(f[3]) || !isHex(f[4]) {
		return SaveInfo{}, fmt.Errorf("read the session's work: the VM sent a malformed header (%q)", truncate(string(line), 80))
	}
	info := SaveInfo{Branch: f[2], Snapshot: f[3], Head: f[4], Submodules: map[string]string{}}

	ctx, cancel := withDeadline(ctx)
	defer cancel()
	budget := m.packLimits().MaxInflated
	// Every pack goes into a quarantine (see quarantine.go); qm reads it.
	qm, drop, err := m.quarantine()
	if err != nil {
		return info, err
	}
	defer drop()
	lr := &io.LimitedReader{R: br, N: max + 1}
	cr := &countReader{r: lr}
	in := bufio.NewReaderSize(cr, 4096)
	tooLarge := func() error {
		info.Bytes = cr.n
		return fmt.Errorf("%w: it passes %d MiB: commit less (large files belong outside git), or raise the limit", ErrSaveTooLarge, max>>20)
	}
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			if lr.N <= 0 {
				return info, tooLarge()
			}
			return info, fmt.Errorf("read the session's work: the VM sent a malformed section line (%q): it was not saved", truncate(string(line), 80))
		}
		s := strings.TrimSuffix(string(line), "\n")
		if s == "pack" {
			break
		}
		head, bytes, path, err := parseModuleLine(s, max)
		if err == nil && info.Submodules[path] != "" {
			err = fmt.Errorf("submodule %q comes twice", path)
		}
		if err == nil && len(info.Submodules) >= maxSavedModules {
			err = fmt.Errorf("more than %d submodules", maxSavedModules)
		}
		if err != nil {
			return info, fmt.Errorf("read the session's work: %v (%q): it was not saved", err, truncate(s, 80))
		}
		st, err := qm.indexPack(ctx, in, bytes, &budget)
		if err == nil && st.Bytes < bytes {
			if _, err = io.CopyN(io.Discard, in, bytes-st.Bytes); err == nil {
				err = errPackTrailing
			} else {
				err = errPackEOF
			}
		}
		info.Bytes = cr.n
		switch {
		case lr.N <= 0:
			return info, tooLarge()
		case err != nil:
			return info, packError(err, fmt.Sprintf("the pack of submodule %q", path), bytes)
		}
		info.Submodules[path] = head
	}
	_, err = qm.indexPack(ctx, in, -1, &budget)
	if err == nil {
		if _, perr := in.Peek(1); perr == nil {
			err = errPackTrailing
		}
	}
	info.Bytes = cr.n
	if lr.N <= 0 {
		return info, tooLarge()
	}
	if err != nil {
		return info, packError(err, "the pack", 0)
	}
	// Every commit named must be whole: the packs plus what the mirror had.
	want := []string{info.Branch, info.Snapshot, info.Head}
	for _, c := range info.Submodules {
		want = append(want, c)
	}
	types, err := gitEnvInput(ctx, m.Dir, qm.env, strings.NewReader(strings.Join(want, "\n")+"\n"), "cat-file", "--batch-check=%(objecttype)")
	if err != nil {
		return info, fmt.Errorf("look up the session's commits in %s: %w", m.Dir, err)
	}
	for i, t := range strings.Split(strings.TrimSpace(types), "\n") {
		if i < len(want) && t != "commit" {
			return info, fmt.Errorf("the session's work names commit %s, which it did not send: it was not saved", short(want[i]))
		}
	}
	if _, err := qm.git(ctx, append([]string{"rev-list", "--objects", "--quiet"}, append(want, "--not", "--all")...)...); err != nil {
		if ctx.Err() != nil {
			return info, ctx.Err()
		}
		return info, fmt.Errorf("the session's work is missing objects (%s): it was not saved", gitMessage(err))
	}
	// Only submodules the session's branch or snapshot records are kept
	// (listing them, git lists every file).
	for _, c := range []string{info.Branch, info.Snapshot} {
		if len(info.Submodules) == 0 {
			break
		}
		if err := qm.boundFiles(ctx, c); err != nil {
			return info, fmt.Errorf("%w: it was not saved", tooManyFiles(err))
		}
	}
	seen := map[string][]gitlink{}
	for p := range info.Submodules {
		inBranch, err := qm.linkAt(ctx, info.Branch, p, seen)
		if err != nil {
			return info, err
		}
		inSnap, err := qm.linkAt(ctx, info.Snapshot, p, seen)
		if err != nil {
			return info, err
		}
		if inBranch == "" && inSnap == "" {
			delete(info.Submodules, p)
		}
	}

	// Everything passed: the packs join the mirror, then the refs move.
	if err := qm.migrate(); err != nil {
		return info, err
	}
	var tx strings.Builder
	tx.WriteString("start\n")
	if err := m.keepEarlierSave(ctx, &tx, id, info); err != nil {
		return info, err
	}
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "branch"), info.Branch)
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "snapshot"), info.Snapshot)
	fmt.Fprintf(&tx, "update %s %s\n", sessionRef(id, "head"), info.Head)
	keep := map[string]bool{}
	for p, c := range info.Submodules {
		ref := sessionRef(id, "modules/"+refKey(p))
		keep[ref] = true
		fmt.Fprintf(&tx, "update %s %s\n", ref, c)
	}
	old, err := git(ctx, m.Dir, "for-each-ref", "--format=%(refname)", sessionRef(id, "modules/"))
	if err != nil {
		return info, fmt.Errorf("read the session's refs in %s: %w", m.Dir, err)
	}
	for _, ref := range strings.Fields(old) {
		if !keep[ref] {
			fmt.Fprintf(&tx, "delete %s\n", ref)
		}
	}
	tx.WriteString("prepare\ncommit\n")
	if _, err := gitInput(ctx, m.Dir, strings.NewReader(tx.String()), "update-ref", "--stdin"); err != nil {
		return info, fmt.Errorf("record the session's work in %s: %w", m.Dir, err)
	}
	_ = m.Maintain(ctx) // a failure leaves more packs, consolidated next time
	return info, nil
}

// keepEarlierSave adds to tx, when the session's saved branch or snapshot
// has commits the new save's do not reach (its clone started again from
// an older commit, say, or the agent rewrote its history), a ref that
// keeps them: refs/sandbar/sessions/<id>/saves/<n>/{branch,snapshot}, n
// counting from 1. So a new save never makes saved work unreachable, and
// gc keeps it until the session is removed.
func (m *Mirror) keepEarlierSave(ctx context.Context, tx *strings.Builder, id string, info SaveInfo) error {
	prev, ok := m.Saved(ctx, id)
	if !ok {
		return nil
	}
	var keep []string
	for _, c := range []struct{ name, commit string }{{"branch", prev.Branch}, {"snapshot", prev.Snapshot}} {
		lost, err := git(ctx, m.Dir, "rev-list", "--max-count=1", c.commit, "--not", info.Branch, info.Snapshot, "--")
		if err != nil {
			return fmt.Errorf("compare the session's saves in %s: %w", m.Dir, err)
		}
		if strings.TrimSpace(lost) != "" {
			keep = append(keep, c.name, c.commit)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	out, err := git(ctx, m.Dir, "for-each-ref", "--format=%(refname)", sessionRef(id, "saves/"))
	if err != nil {
		return fmt.Errorf("read the session's refs in %s: %w", m.Dir, err)
	}
	n := 0
	for _, ref := range strings.Fields(out) {
		num, _, _ := strings.Cut(strings.TrimPrefix(ref, sessionRef(id, "saves/")), "/")
		if v, err := strconv.Atoi(num); err == nil && v > n {
			n = v
		}
	}
	for i := 0; i < len(keep); i += 2 {
		fmt.Fprintf(tx, "create %s %s\n", sessionRef(id, fmt.Sprintf("saves/%d/%s", n+1, keep[i])), keep[i+1])
	}
	return nil
}

// parseModuleLine reads "module <head> <bytes> <path>" (SaveScript).
func parseModuleLine(s string, max int64) (head string, n int64, path string, err error) {
	rest, ok := strings.CutPrefix(s, "module ")
	if !ok {
		return "", 0, "", errors.New("the VM sent a malformed section line")
	}
	head, rest, _ = strings.Cut(rest, " ")
	size, path, _ := strings.Cut(rest, " ")
	if !isHex(head) {
		return "", 0, "", errors.New("a submodule section names no commit")
	}
	n, err = strconv.ParseInt(size, 10, 64)
	if err != nil || n <= 0 || n > max {
		return "", 0, "", errors.New("a submodule section has a bad size")
	}
	if !validModulePath(path) {
		return "", 0, "", errors.New("a submodule section has a bad path")
	}
	return head, n, path, nil
}

// indexPack takes one pack from src into the mirror: checkPack reads it
// (at most limit bytes, -1 for no bound, and budget is what the save may
// still inflate) and forwards what it has checked to `git index-pack
// --strict`, the check a server makes of a push.
//
// What index-pack may then hold in memory: with --threads=1 it resolves
// one delta at a time, holding its base and its result (each at most
// PackLimits.MaxObject, checked before index-pack reads that object), up
// to core.deltaBaseCacheLimit of bases kept for the next deltas, and an
// entry of about 100 bytes per object (at most PackLimits.MaxObjects). A
// blob that is no delta and passes core.bigFileThreshold is hashed as it
// streams, never held whole. So at most about 2 × MaxObject + 96 MiB +
// 100 B × MaxObjects (1.5 GiB with the defaults), whatever the pack.
func (m *Mirror) indexPack(ctx context.Context, src *bufio.Reader, limit int64, budget *int64) (packStats, error) {
	parent := ctx
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := command(ctx, m.Dir, "-c", "core.bigFileThreshold=32m", "-c", "core.deltaBaseCacheLimit=96m",
		"index-pack", "--stdin", "--strict", "--threads=1")
	cmd.Env = append(cmd.Env, m.env...)
	var out, errb strings.Builder
	cmd.Stdout = &limitedBuilder{b: &out, n: 4096}
	cmd.Stderr = &limitedBuilder{b: &errb, n: 8192}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return packStats{}, err
	}
	if err := cmd.Start(); err != nil {
		return packStats{}, wrapRun([]string{"index-pack"}, "", err)
	}
	st, cerr := checkPack(src, limit, stdin, m.packLimits(), budget)
	var we *packWriteError
	refused := cerr != nil && !errors.As(cerr, &we)
	if refused {
		kill() // index-pack never gets the rest: it must not write a pack
	}
	stdin.Close()
	werr := cmd.Wait()
	switch {
	case refused:
		return st, cerr
	case parent.Err() != nil:
		return st, parent.Err()
	case werr != nil:
		return st, fmt.Errorf("%w (%s)", errGitRefused, lastLines(errb.String(), 3))
	case cerr != nil:
		return st, cerr
	}
	return st, nil
}

// errGitRefused: index-pack refused a pack; errPackTrailing: bytes follow
// a pack where none may.
var (
	errGitRefused   = errors.New("git refused it")
	errPackTrailing = errors.New("bytes after its end")
)

// packError turns what indexPack returned into a message for a person;
// what names the pack ("the pack of submodule x"), claimed is the size its
// section gave.
func packError(err error, what string, claimed int64) error {
	var fe *packFormatError
	switch {
	case errors.Is(err, ErrPackTooLarge):
		return fmt.Errorf("%s: %w", what, err)
	case errors.Is(err, errPackEOF) && claimed > 0:
		return fmt.Errorf("the session's work ended inside %s, which claimed %d bytes: it was not saved", what, claimed)
	case errors.Is(err, errPackTrailing):
		return fmt.Errorf("%s has bytes after its end: it was not saved", what)
	case errors.Is(err, errPackCut):
		return fmt.Errorf("the session's work did not pass git's checks (%s is longer than the %d bytes its section claimed): it was not saved", what, claimed)
	case errors.As(err, &fe), errors.Is(err, errPackEOF):
		return fmt.Errorf("the session's work did not pass git's checks (%s: %v): it was not saved", what, err)
	case errors.Is(err, errGitRefused):
		return fmt.Errorf("the session's work did not pass git's checks (%s: %v): it was not saved", what, err)
	}
	return err
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
