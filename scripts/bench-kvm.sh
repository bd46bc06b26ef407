#!/usr/bin/env bash
# bench-kvm.sh — run Sandbar's VM benchmarks (tests/bench) on a machine with
# a working /dev/kvm and no network, with nothing installed there.
#
#   scripts/bench-kvm.sh pack OUTDIR     here (a dev machine with the repo,
#                                        Go, QEMU and the built guest image)
#   OUTDIR/bench-kvm.sh run [OUTDIR] [bench.test flags...]
#                                        there (OUTDIR copied over as is)
#
# pack gathers into OUTDIR (~0.8 GiB):
#   bench.test              the compiled benchmarks (static: CGO_ENABLED=0)
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
# run puts the packed QEMU first on PATH, points SANDBAR_IMAGE_DIR at the
# packed image and runs every benchmark once (each does its own runs:
# SANDBAR_BENCH_RUNS, default 10), printing the figures and a Markdown table
# and keeping a copy in OUTDIR/results-<time>.txt. The benchmarks prove KVM
# with a trial boot into a fresh state directory of their own each run, so a
# verdict cached elsewhere is never reused; without a usable /dev/kvm they
# run under emulation (TCG) and say so on every line.
set -euo pipefail

usage() {
	echo "usage: $0 pack OUTDIR | $0 run [OUTDIR] [bench.test flags...]" >&2
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

pack() {
	local out=$1 self root
	self=$(readlink -f "$0")
	root=$(cd "$(dirname "$self")/.." && pwd)
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	cd "$root"
	[ -z "$(ls -A "$out")" ] || die "$out is not empty: give a new or empty directory"
	local go=${GO:-go}
	command -v "$go" >/dev/null || go=/usr/local/go/bin/go

	echo "==> benchmarks: $out/bench.test"
	CGO_ENABLED=0 "$go" test -c -o "$out/bench.test" ./tests/bench

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
		cp --sparse=always "$images/$hash/$f" "$out/images/$hash/$f"
	done
	echo "$hash" >"$out/images/current"
	echo "image $hash"

	cp "$self" "$out/bench-kvm.sh"
	chmod +x "$out/bench-kvm.sh"
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
	(cd "${TMPDIR:-/tmp}" && "$out/bench.test" -test.run '^$' -test.bench . -test.benchtime 1x -test.count 1 -test.timeout 60m "$@") 2>&1 | tee "$log"
}

[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in
pack)
	[ $# -eq 1 ] || usage
	pack "$1"
	;;
run)
	run "$@"
	;;
*) usage ;;
esac
