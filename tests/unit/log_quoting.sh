#!/bin/bash
# SPDX-License-Identifier: MIT
# Usage: tests/unit/log_quoting.sh TOOLS_DIR
#
# The daemons' logfmt lines carry text a peer chooses (a DISCONNECT's reason,
# an export's name, a certificate's subject): a value written as \"%s\" lets a
# '"' in it end the value and add fields of the peer's making. Every string
# value goes through log_q() (tools/common/log.h), which escapes it. This
# fails on any log_event or blkd_log call whose format quotes a %s itself.
# Exit 0: none; 1: each one printed; 2: usage.
set -u
[ -d "${1:-}" ] || { echo "usage: log_quoting.sh TOOLS_DIR" >&2; exit 2; }
# A call's format is its third argument: look at the call's first two lines.
# shellcheck disable=SC2016 # an awk program
out=$(find "$1" -name '*.c' -print0 | sort -z | xargs -0 awk '
	FNR == 1 { at = 0 }
	/(log_event|blkd_log)\(/ { at = FNR; text = $0; next }
	at && FNR == at + 1 { text = text $0 }
	at && FNR >= at + 1 {
		if (text ~ /\\"%s\\"/) printf "%s:%d: a %%s in quotes of its own: use log_q()\n", FILENAME, at
		at = 0
	}')
[ -z "$out" ] && { echo "log quoting: ok (every string value of a log line through log_q)"; exit 0; }
echo "$out"
exit 1
