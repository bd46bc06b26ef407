#!/usr/bin/env bash
# bench-kvm.sh — run Sandbar's VM benchmarks (tests/bench) on a machine with
# a working /dev/kvm and no network, with nothing installed there.
#
#   scripts/bench-kvm.sh pack [--small] OUTDIR
#                                        here (a dev machine with the repo,
#                                        Go, QEMU and the built guest image)
#   OUTDIR/bench-kvm.sh run [OUTDIR] [bench.test flags...]
#                                        there (OUTDIR copied over as is)
#
# pack gathers into OUTDIR (~0.8 GiB):
#   bench.test              the compiled benchmarks (statically linked)
#   bin/qemu-system-x86_64  a wrapper that runs the packed QEMU
#   qemu/bin/               the real qemu-system-x86_64
#   qemu/lib/               every shared library it loads (ldd), the dynamic
#                           loader included, so the target's glibc never
#                           matters
#   qemu/modules/           QEMU's loadable modules (TCG is one on Debian)
#   qemu/share/{qemu,seabios}/  firmware (microvm loads bios-microvm.bin)
#   images/<hash>/, images/current  the current guest image: kernel,
#                           initramfs, rootfs.ext4, agent.ext4, manifest.json
#   bench-kvm.sh            this script, to run there
#
# pack --small makes the same pack in under 64 MiB, for machines that can
# be sent only that much (the lent KVM machine takes 64 MiB of carried
# files): OUTDIR holds bench-kvm.sh and pack.tar.gz, which run unpacks into
# a temporary directory. Its disks are trimmed: the root disk keeps its
# whole tree of directories and links, /etc, and the programs the
# benchmarks run (true, head, the shells) with the libraries they load;
# every other file is left out, and the agent disk is an empty ext4. The
# boot path reads none of what is left out (the init and the supervisor
# are in the initramfs), so boot, exec and stream figures stand; the
# session-start benchmark needs git and the agent, so a small pack runs
# only Boot, Exec and Stream.
#
# run puts the packed QEMU first on PATH, points SANDBAR_IMAGE_DIR at the
# packed image and runs every benchmark once (each does its own runs:
# SANDBAR_BENCH_RUNS, default 10), printing the figures and a Markdown table
# and keeping a copy in OUTDIR/results-<time>.txt. The benchmarks prove KVM
# with a trial boot into a fresh state directory of their own each run, so a
# verdict cached elsewhere is never reused; without a usable /dev/kvm they
# run under emulation (TCG) and say so on every line.
set -euo pipefail

usage() {
	echo "usage: $0 pack [--small] OUTDIR | $0 run [OUTDIR] [bench.test flags...]" >&2
	exit 2
}

die() {
	echo "bench-kvm: $*" >&2
	exit 1
}

# imagedir prints the guest images directory the way `make bench` finds it.
imagedir() {
	if [ -n "${SANDBAR_IMAGE_DIR:-}" ]; then
		echo "$SANDBAR_IMAGE_DIR"
	elif [ -x bin/sandbar ]; then
		bin/sandbar image path
	elif [ -n "${SANDBAR_HOME:-}" ]; then
		echo "$SANDBAR_HOME/images"
	else
		echo "${XDG_DATA_HOME:-$HOME/.local/share}/sandbar/images"
	fi
}

# slim_root SRC DST writes DST, an ext4 of SRC's size holding SRC's tree of
# directories and links, its /etc, and the programs the benchmarks run with
# the libraries they load (their ELF NEEDED closure); no other file.
slim_root() {
	local src=$1 dst=$2 tree lib f d size
	command -v debugfs >/dev/null && command -v mke2fs >/dev/null && command -v readelf >/dev/null ||
		die "pack --small needs debugfs, mke2fs (e2fsprogs) and readelf (binutils): run \`sudo apt install e2fsprogs binutils\`"
	tree=$(mktemp -d "${TMPDIR:-/tmp}/sandbar-slimroot-XXXXXX")
	debugfs -R "rdump / $tree" "$src" >/dev/null 2>&1 || die "could not read $src with debugfs"
	[ -d "$tree/usr/bin" ] || die "$src has no /usr/bin: is it the guest's root disk?"
	chmod 0755 "$tree"
	local -A keep=()
	local -a todo=(usr/bin/true usr/bin/head usr/bin/cat usr/bin/dash usr/bin/bash usr/bin/env)
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		[ -n "${keep[$f]:-}" ] && continue
		[ -f "$tree/$f" ] || die "$src lacks /$f, which the benchmarks run"
		keep[$f]=1
		# A library's link (libtinfo.so.6 -> libtinfo.so.6.4): keep both.
		if [ -L "$tree/$f" ]; then
			todo+=("$(realpath --relative-to="$tree" "$tree/$f")")
			continue
		fi
		while read -r lib; do
			local found=""
			for d in usr/lib/x86_64-linux-gnu lib/x86_64-linux-gnu usr/lib lib; do
				if [ -e "$tree/$d/$lib" ]; then
					found=$d/$lib
					break
				fi
			done
			[ -n "$found" ] || die "$src: /$f needs $lib, which is not in the root"
			todo+=("$found")
		done < <(readelf -d "$tree/$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	done
	# The dynamic loader is named by the program header, not NEEDED.
	while read -r f; do keep[${f#"$tree"/}]=1; done < <(find "$tree" -name 'ld-linux*' -type f)
	while read -r f; do
		f=${f#"$tree"/}
		case $f in etc/*) continue ;; esac
		[ -n "${keep[$f]:-}" ] || rm -f "$tree/$f"
	done < <(find "$tree" -type f)
	size=$(stat -c %s "$src")
	rm -f "$dst"
	truncate -s "$size" "$dst"
	mke2fs -q -F -t ext4 -O ^has_journal -L root -d "$tree" "$dst" ||
		die "mke2fs could not write the trimmed root disk $dst"
	rm -rf "$tree"
}

# empty_disk SRC DST writes DST, an empty ext4 of SRC's size.
empty_disk() {
	local size
	size=$(stat -c %s "$1")
	rm -f "$2"
	truncate -s "$size" "$2"
	mke2fs -q -F -t ext4 -O ^has_journal "$2" || die "mke2fs could not write the empty disk $2"
}

pack() {
	local small=0
	if [ "${1:-}" = --small ]; then
		small=1
		shift
	fi
	[ $# -eq 1 ] || usage
	local out=$1 self root final=""
	self=$(readlink -f "$0")
	root=$(cd "$(dirname "$self")/.." && pwd)
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	cd "$root"
	[ -z "$(ls -A "$out")" ] || die "$out is not empty: give a new or empty directory"
	if [ $small = 1 ]; then
		# Build the pack beside it, then send it as one archive.
		final=$out
		out=$(mktemp -d "${TMPDIR:-/tmp}/sandbar-kvm-pack-XXXXXX")
	fi
	local go=${GO:-go}
	command -v "$go" >/dev/null || go=/usr/local/go/bin/go

	echo "==> benchmarks: $out/bench.test"
	# Static, cgo included (the session benchmark's store is SQLite), so
	# the target's libc never matters.
	"$go" test -c -o "$out/bench.test" -tags 'netgo osusergo sqlite_omit_load_extension' \
		-ldflags '-linkmode external -extldflags -static' ./tests/bench

	echo "==> qemu and its libraries"
	local qemu
	qemu=$(command -v qemu-system-x86_64) || die "qemu-system-x86_64 is not installed: run \`sudo apt install qemu-system-x86\`"
	qemu=$(readlink -f "$qemu")
	mkdir -p "$out/qemu/bin" "$out/qemu/lib" "$out/qemu/modules" "$out/qemu/share" "$out/bin"
	cp "$qemu" "$out/qemu/bin/qemu-system-x86_64"
	local lib loader=""
	# ldd lines: "libz.so.1 => /lib/.../libz.so.1 (0x...)" and
	# "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
	while read -r lib; do
		cp -L "$lib" "$out/qemu/lib/"
		case $(basename "$lib") in ld-linux*) loader=$(basename "$lib") ;; esac
	done < <(ldd "$qemu" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
	[ -n "$loader" ] || die "ldd named no dynamic loader for $qemu"
	# Loadable modules (accel-tcg, display, audio...): only what a run
	# asks for is loaded, and our guests need at most accel-tcg.
	local moddir
	for moddir in "$(dirname "$qemu")/../lib/x86_64-linux-gnu/qemu" /usr/lib/x86_64-linux-gnu/qemu /usr/lib/qemu /usr/lib64/qemu; do
		if [ -d "$moddir" ] && ls "$moddir"/*.so >/dev/null 2>&1; then
			cp -L "$moddir"/*.so "$out/qemu/modules/"
			break
		fi
	done
	# Firmware: -M microvm opens bios-microvm.bin (a link to qboot.rom);
	# the whole data dir is small (~10 MB), so take it all, links resolved.
	local share
	share=$(cd "$(dirname "$qemu")/../share" 2>/dev/null && pwd) || true
	[ -d "$share/qemu" ] || share=/usr/share
	[ -d "$share/qemu" ] || die "no QEMU data directory (bios files) found next to $qemu or in /usr/share/qemu"
	cp -rL "$share/qemu" "$out/qemu/share/qemu"
	if [ -d "$share/seabios" ]; then cp -rL "$share/seabios" "$out/qemu/share/seabios"; fi
	cat >"$out/bin/qemu-system-x86_64" <<EOF
#!/bin/sh
# Runs the packed QEMU with its own loader, libraries, modules and firmware,
# whatever the host has installed.
here=\$(cd "\$(dirname "\$0")/.." && pwd)
QEMU_MODULE_DIR="\$here/qemu/modules"
export QEMU_MODULE_DIR
exec "\$here/qemu/lib/$loader" --library-path "\$here/qemu/lib" "\$here/qemu/bin/qemu-system-x86_64" -L "\$here/qemu/share/qemu" "\$@"
EOF
	chmod +x "$out/bin/qemu-system-x86_64"
	"$out/bin/qemu-system-x86_64" --version | head -1

	echo "==> guest image"
	local images hash=""
	images=$(imagedir)
	if [ -f "$images/current" ]; then
		hash=$(tr -d '[:space:]' <"$images/current")
	fi
	if [ -z "$hash" ] || [ ! -f "$images/$hash/manifest.json" ]; then
		hash=$(ls -t "$images"/*/manifest.json 2>/dev/null | head -1 | xargs -r dirname | xargs -r basename)
	fi
	[ -n "$hash" ] || die "no guest image in $images: run \`make image\`"
	mkdir -p "$out/images/$hash"
	local f
	for f in kernel initramfs rootfs.ext4 agent.ext4 manifest.json; do
		[ -f "$images/$hash/$f" ] || die "image $hash lacks $f: run \`make image\`"
		case $small/$f in
		1/rootfs.ext4) slim_root "$images/$hash/$f" "$out/images/$hash/$f" ;;
		1/agent.ext4) empty_disk "$images/$hash/$f" "$out/images/$hash/$f" ;;
		*) cp --sparse=always "$images/$hash/$f" "$out/images/$hash/$f" ;;
		esac
	done
	echo "$hash" >"$out/images/current"
	echo "image $hash"

	cp "$self" "$out/bench-kvm.sh"
	chmod +x "$out/bench-kvm.sh"
	if [ $small = 1 ]; then
		touch "$out/small"
		echo "==> archive"
		# gzip's default level: -9 took 19 s of CPU for 0.25 MiB less
		# (49.8 against 50.1 MiB) than -6's 5.5 s; the limit is 60 MiB.
		tar -C "$out" --sparse -cf - . | gzip -6 >"$final/pack.tar.gz"
		rm -rf "$out"
		out=$final
		cp "$self" "$out/bench-kvm.sh"
		chmod +x "$out/bench-kvm.sh"
		local bytes
		bytes=$(stat -c %s "$out/pack.tar.gz")
		echo "==> packed $((bytes / 1048576)) MiB in $out/pack.tar.gz"
		[ "$bytes" -lt $((60 * 1048576)) ] ||
			echo "bench-kvm: the small pack is over 60 MiB: it may not fit where only 64 MiB can be sent" >&2
		echo "send the directory to the KVM machine and run there:"
		echo "    $(basename "$out")/bench-kvm.sh run $(basename "$out")"
		return
	fi
	echo "==> packed $(du -sh "$out" | cut -f1) in $out"
	echo "copy it to the KVM machine (e.g. tar -C $(dirname "$out") -cf - $(basename "$out") | ...) and run there:"
	echo "    $(basename "$out")/bench-kvm.sh run $(basename "$out")"
}

run() {
	local out
	out=$(dirname "$(readlink -f "$0")")
	if [ $# -gt 0 ] && [ -d "$1" ]; then
		out=$1
		shift
	fi
	out=$(cd "$out" && pwd)
	if [ -f "$out/pack.tar.gz" ] && [ ! -x "$out/bench.test" ]; then
		# A small pack: unpack it where there is room and run from there.
		local tmp
		tmp=$(mktemp -d "${TMPDIR:-/tmp}/sandbar-kvm-XXXXXX")
		echo "==> unpacking $out/pack.tar.gz into $tmp"
		tar -C "$tmp" -xzf "$out/pack.tar.gz" || die "could not unpack $out/pack.tar.gz into $tmp"
		local rc=0
		"$tmp/bench-kvm.sh" run "$tmp" "$@" || rc=$?
		cp "$tmp"/results-*.txt "$out"/ 2>/dev/null || true
		rm -rf "$tmp"
		return $rc
	fi
	[ -x "$out/bench.test" ] || die "$out/bench.test is missing: make the pack with \`scripts/bench-kvm.sh pack OUTDIR\`"
	[ -x "$out/bin/qemu-system-x86_64" ] || die "$out has no packed QEMU: make the pack again"
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		echo "bench-kvm: /dev/kvm is missing or not read-writable by $(id -un): the benchmarks will run under emulation (TCG); add yourself to the kvm group or run as root" >&2
	fi
	export PATH="$out/bin:$PATH"
	export SANDBAR_IMAGE_DIR="$out/images"
	local log="$out/results-$(date +%Y%m%d-%H%M%S).txt"
	touch "$log" 2>/dev/null || log=$(mktemp "${TMPDIR:-/tmp}/sandbar-bench-XXXXXX.txt")
	echo "==> $(uname -r), $(nproc) cores; results also in $log"
	# pipefail: the status is bench.test's.
	local which=.
	if [ -f "$out/small" ]; then
		# Trimmed disks: no git or agent for the session benchmark.
		which='^Benchmark(Boot|Exec|Stream)$'
		echo "==> small pack: trimmed disks, boot, exec and stream benchmarks only"
	fi
	(cd "${TMPDIR:-/tmp}" && "$out/bench.test" -test.run '^$' -test.bench "$which" -test.benchtime 1x -test.count 1 -test.timeout 60m "$@") 2>&1 | tee "$log"
}

[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in
pack)
	pack "$@"
	;;
run)
	run "$@"
	;;
*) usage ;;
esac
