#!/usr/bin/env bash
# A `go test -exec` wrapper: on macOS it signs the test binary with the
# virtualization entitlement, then runs it with its arguments, so tests that
# boot VMs under Virtualization.framework can run. Elsewhere it just runs it.
#
# Usage: go test -exec "$PWD/packaging/go-test-exec.sh" ./vm/vz
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: $0 TEST_BINARY [ARGS...] (meant for go test -exec)" >&2
	exit 2
fi

if [[ "$(uname -s)" == Darwin ]]; then
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	"$here/codesign.sh" "$1" >&2
fi
exec "$@"
