#!/usr/bin/env bash
# Signs a Sandbar binary or app bundle with packaging/sandbar.entitlements,
# without which Virtualization.framework refuses to create VMs.
#
# Usage: packaging/codesign.sh BINARY_OR_APP
#
# The signature is ad hoc ("-"): enough to run on the Mac that built it.
# Set SANDBAR_SIGN_IDENTITY to a "Developer ID Application: ..." identity to
# sign for distribution instead; that adds the hardened runtime and a secure
# timestamp, which notarization requires. `make build` runs this on macOS.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
entitlements="$here/sandbar.entitlements"

if [[ $# -ne 1 ]]; then
	echo "usage: $0 BINARY_OR_APP" >&2
	exit 2
fi
target=$1

if [[ "$(uname -s)" != Darwin ]]; then
	echo "codesign.sh: code signing exists only on macOS (this is $(uname -s)); $target was left unsigned, which is fine here" >&2
	exit 1
fi
if [[ ! -e "$target" ]]; then
	echo "codesign.sh: $target does not exist: build it first (make build)" >&2
	exit 1
fi

identity=${SANDBAR_SIGN_IDENTITY:--}
args=(--force --sign "$identity" --entitlements "$entitlements")
if [[ "$identity" != - ]]; then
	args+=(--options runtime --timestamp)
fi

codesign "${args[@]}" "$target"

# Read the signature back: a signing step that silently lost the
# entitlement would only show later, as a VM that will not start.
if ! codesign -d --entitlements - --xml "$target" 2>/dev/null | grep -q com.apple.security.virtualization; then
	echo "codesign.sh: $target was signed but carries no com.apple.security.virtualization entitlement" >&2
	exit 1
fi
