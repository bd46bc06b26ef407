#!/usr/bin/env bash
# Builds Sandbar.app: `fyne package` writes the bundle and its Info.plist,
# then the keys in packaging/Info.plist.extra are merged in (fyne has no
# place for them: LSUIElement makes it a menu-bar app without a Dock icon),
# and last the bundle is signed with the virtualization entitlement. Signing
# comes last because editing Info.plist afterwards would break the seal.
#
# Usage: packaging/package-macos.sh [OUTPUT_DIR]   (default: dist)
# Needs: macOS, Xcode command line tools, and the fyne CLI on PATH, at
# the release matching fyne.io/fyne/v2 in go.mod (`make package` installs
# fyne.io/tools/cmd/fyne@v1.7.4 into bin/tools and runs this script).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
out=${1:-dist}
extra="$here/Info.plist.extra"

if [[ "$(uname -s)" != Darwin ]]; then
	echo "package-macos.sh: an app bundle can only be built on macOS (this is $(uname -s))" >&2
	exit 1
fi
for tool in fyne plutil codesign; do
	if ! command -v "$tool" >/dev/null; then
		echo "package-macos.sh: $tool is not on PATH: install the Xcode command line tools (xcode-select --install) and the fyne CLI (make package installs it, or: go install fyne.io/tools/cmd/fyne@v1.7.4)" >&2
		exit 1
	fi
done

cd "$root"
make init
fyne package --os darwin --release
mkdir -p "$out"
rm -rf "$out/Sandbar.app"
mv Sandbar.app "$out/Sandbar.app"
plist="$out/Sandbar.app/Contents/Info.plist"

# Merge key by key with the type each key needs; the values come from the
# .extra file so there is one place to change them.
value() { plutil -extract "$1" raw -o - "$extra"; }
set_string() { plutil -replace "$1" -string "$(value "$1")" "$plist"; }
set_bool() {
	local v
	v=$(value "$1")
	case $v in
	true | YES | 1) v=YES ;;
	*) v=NO ;;
	esac
	plutil -replace "$1" -bool "$v" "$plist"
}
set_bool LSUIElement
set_string LSMinimumSystemVersion
set_string CFBundleIdentifier
set_string NSHumanReadableCopyright
plutil -lint "$plist"

"$here/codesign.sh" "$out/Sandbar.app"
echo "==> $out/Sandbar.app"
