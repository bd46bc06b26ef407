#!/usr/bin/env bash
# Builds the Linux tarball: OUTPUT_DIR/sandbar-VERSION-linux-ARCH.tar.gz,
# holding one folder laid out like a prefix (/usr/local, ~/.local):
#
#   bin/sandbar
#   share/applications/sandbar.desktop
#   share/icons/hicolor/256x256/apps/sandbar.png
#   README.md
#
# so that `tar -xzf FILE --strip-components=1 -C ~/.local` installs it
# where desktops look for programs, their entries and their icons.
#
# Usage: packaging/package-linux.sh BINARY VERSION ARCH [OUTPUT_DIR]   (default: dist)
# `make package` runs it on Linux. The archive is reproducible: entries
# sorted, owned by root, dated SOURCE_DATE_EPOCH (default: the last
# commit's time).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

if [[ $# -lt 3 || $# -gt 4 ]]; then
	echo "usage: $0 BINARY VERSION ARCH [OUTPUT_DIR]" >&2
	exit 2
fi
bin=$1
version=$2
arch=$3
out=${4:-dist}

if [[ ! -x "$bin" ]]; then
	echo "package-linux.sh: $bin is not an executable: build it first (make build)" >&2
	exit 1
fi
if [[ ! "$version" =~ ^[A-Za-z0-9._+-]+$ || ! "$arch" =~ ^[A-Za-z0-9_]+$ ]]; then
	echo "package-linux.sh: version $version or arch $arch has characters a file name should not" >&2
	exit 1
fi

name="sandbar-$version-linux-$arch"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
top="$stage/$name"

install -D -m 755 "$bin" "$top/bin/sandbar"
install -D -m 644 "$here/sandbar.desktop" "$top/share/applications/sandbar.desktop"
install -D -m 644 "$root/assets/icon-256.png" "$top/share/icons/hicolor/256x256/apps/sandbar.png"
install -D -m 644 "$root/README.md" "$top/README.md"

epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$out"
tarball="$(cd "$out" && pwd)/$name.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" | gzip -9 -n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "==> $tarball"
echo "    install: tar -xzf $tarball --strip-components=1 -C ~/.local"
