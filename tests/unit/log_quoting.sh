#!/bin/bash
# SPDX-License-Identifier: MIT
# Usage: tests/unit/log_quoting.sh TOOLS_DIR
#        tests/unit/log_quoting.sh --self-test
#
# The daemons' logfmt lines carry text a peer chooses (a DISCONNECT's reason,
# an export's name, a certificate's subject): a value written as \"%s\" lets a
# '"' in it end the value and add fields of the peer's making. Every string
# value goes through log_q() (tools/common/log.h), which escapes it. This
# fails on any log_event or blkd_log call whose format quotes a string
# conversion itself (\"%s\", \"%.*s\", '%s'), however many lines the call takes.
# Exit 0: none; 1: each one printed; 2: usage.
set -u

# "FILE:LINE: ..." for each call, read whole (from its name to the ");" that ends it).
scan() {
	# shellcheck disable=SC2016 # an awk program
	find "$1" -name '*.c' -print0 | sort -z | xargs -0 -r awk '
		FNR == 1 { call = ""; at = 0 }
		!at && /(^|[^A-Za-z0-9_])(log_event|blkd_log)\(/ { at = FNR; call = "" }
		at {
			call = call $0
			if ($0 ~ /\);[ \t]*(\/\*.*)?$/) {
				if (call ~ /\\"%[-+ #0-9.*]*s\\"/ || call ~ /'\''%[-+ #0-9.*]*s'\''/)
					printf "%s:%d: a string in quotes of its own: use log_q()\n", FILENAME, at
				at = 0
			}
		}'
}

check() {
	local out
	out=$(scan "$1")
	[ -z "$out" ] && { echo "log quoting: ok (every string value of a log line through log_q)"; return 0; }
	echo "$out"
	return 1
}

# Each way of quoting by hand is caught, over one line or several; log_q() and a quoted constant are not.
self_test() {
	local t out
	t=$(mktemp -d) || exit 2
	trap 'rm -rf "$t"' RETURN
	cat >"$t/a.c" <<'EOF'
void f(void)
{
	log_event("info", "one", "peer=\"%s\"", p);
	blkd_log("info", "two", "a=%u b=%s c=%d", 1,
		 log_q(x),
		 2);
	blkd_log("info", "three", "a=%u "
		 "reason=\"%.*s\"", 1, n, r);
	log_event("info", "four", "what='%s'", w);
	log_event("info", "five", "reason=\"fixed text\" b=%s", log_q(b));
}
EOF
	out=$(check "$t") && { echo "self-test: hand quoting passed"; return 1; }
	for l in 3 7 9; do
		grep -q "a.c:$l: a string in quotes" <<<"$out" || { echo "self-test: missed line $l: $out"; return 1; }
	done
	[ "$(wc -l <<<"$out")" = 3 ] || { echo "self-test: blamed a good call: $out"; return 1; }
	echo "log_quoting self-test: ok"
}

case "${1:-}" in
--self-test) self_test ;;
-h | --help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//' ;;
"") sed -n '3,4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
*)
	[ -d "$1" ] || { echo "log_quoting: $1: not a directory" >&2; exit 2; }
	check "$1"
	;;
esac
