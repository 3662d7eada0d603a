# SPDX-License-Identifier: MIT
# Shared helpers for fabric tests (sourced). Each test boots the real
# soft-RoCE fabric through rxe-fabric; nothing RDMA is mocked.
set -u
fabric=${RXE_FABRIC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/fabric/rxe-fabric}
build=${RSEC_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build}
work=$(mktemp -d "$build/fabric-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect_match FILE REGEX WHAT: FILE must contain a line matching REGEX.
expect_match() {
	grep -Eq "$2" "$1" || { echo "--- $1:" >&2; tail -n 30 "$1" >&2; fail "$3"; }
}
