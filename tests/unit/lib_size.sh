#!/bin/bash
# SPDX-License-Identifier: MIT
# Usage: tests/unit/lib_size.sh DIR [ALLOW]
#        tests/unit/lib_size.sh --self-test
#
# The size rule of lib/ (issue 25) and tools/ (issue 37): no .c file over 800
# lines, no function over 60. A function's lines run from its opening "{"
# (alone at column 0 after its signature, or ending the signature's line) to
# its closing "}" at column 0, both counted; .c and .h files are read, those
# under a tests/ folder are not. ALLOW lists files (relative to DIR, one per
# line, "# why" after) still over 800 lines: the list may only shrink, and a
# listed file no longer over it fails too.
# Exit 0: within the rule; 1: each file or function over it printed; 2: usage.
set -u
FILE_MAX=800
FUNC_MAX=60

# Is the path (relative to DIR) under a tests/ folder? Relative: a checkout may itself sit under one.
in_tests() {
	[[ $1 == tests/* || $1 == */tests/* ]]
}

# "FILE: N lines" for each .c file over FILE_MAX but those listed in $2, and each listed one no longer over it.
long_files() {
	local f n rel allowed=""
	[ -n "${2:-}" ] && allowed=$(sed 's/#.*//' "$2" | awk 'NF { print $1 }')
	while IFS= read -r f; do
		rel=${f#"$1"/}
		in_tests "$rel" && continue
		n=$(wc -l <"$f")
		[ "$n" -gt "$FILE_MAX" ] && ! grep -qxF -- "$rel" <<<"$allowed" &&
			echo "$rel: $n lines (at most $FILE_MAX per file)"
	done < <(find "$1" -name '*.c' | sort)
	while IFS= read -r rel; do
		[ -n "$rel" ] || continue
		if [ ! -f "$1/$rel" ] || [ "$(wc -l <"$1/$rel")" -le "$FILE_MAX" ]; then
			echo "$rel: listed in $(basename "$2") but no longer over $FILE_MAX lines: remove the line"
		fi
	done <<<"$allowed"
	return 0
}

# "FILE:LINE: NAME: N lines" for each function over FUNC_MAX.
long_functions() {
	local f
	while IFS= read -r f; do
		in_tests "${f#"$1"/}" && continue
		awk -v file="${f#"$1"/}" -v max="$FUNC_MAX" '
			# A definition (or a prototype) starts at column 0 with a name and "(".
			/^[A-Za-z_][A-Za-z0-9_ \t*]*\(/ && !in_body {
				start = FNR; name = $0
				gsub(/[A-Z_][A-Z0-9_]*\([^()]*\)[ \t*]/, "T ", name) # a type like STACK_OF(X509)
				sub(/\(.*/, "", name); sub(/.*[ \t*]/, "", name)
				if ($0 ~ /\{[ \t]*$/) { in_body = 1; open = FNR }
				next
			}
			/^\{/ && !in_body && start { in_body = 1; open = FNR; next }
			/^}/ && in_body && $0 !~ /^};/ {
				n = FNR - open + 1
				if (n > max) printf "%s:%d: %s: %d lines (at most %d per function)\n", file, start, name, n, max
				in_body = 0; start = 0
			}' "$f"
	done < <(find "$1" -name '*.[ch]' | sort)
}

check() {
	local out what
	what="$(basename "$1") size"
	out=$(long_files "$1" "${2:-}"; long_functions "$1")
	[ -z "$out" ] && { echo "$what: ok (files <= $FILE_MAX lines, functions <= $FUNC_MAX)"; return 0; }
	printf '%s: %s\n' "$what" "$out" | sed "2,\$s/^/$what: /"
	echo "$what: split what is listed above (one job per file, short functions)"
	return 1
}

# A planted long function and a long file must be caught, and only they.
self_test() {
	local t out
	local root
	root=$(mktemp -d) || exit 2
	trap 'rm -rf "$root"' RETURN
	t="$root/tests" # a tree under a folder named tests is still checked
	mkdir -p "$t/lib/base"
	{
		printf 'static int short_one(void)\n{\n\treturn 0;\n}\n\n'
		printf 'static const int table[] = {\n'
		for i in $(seq 70); do printf '\t%d,\n' "$i"; done
		printf '};\n\nint long_one(int a,\n\t     int b)\n{\n'
		for i in $(seq 58); do printf '\ta += b;\n'; done
		printf '\treturn a;\n}\n'
	} >"$t/lib/base/f.c"
	# long_one: "{", 59 statements and "}": 61 lines (its two-line signature not counted).
	out=$(check "$t/lib") && { echo "self-test: a 61-line function passed"; return 1; }
	grep -q 'base/f.c:[0-9]*: long_one: 61 lines' <<<"$out" || { echo "self-test: missed long_one: $out"; return 1; }
	grep -q 'short_one\|table' <<<"$out" && { echo "self-test: blamed a short one: $out"; return 1; }
	sed -i '/a += b;/{x;s/^/x/;/^x\{58\}$/{x;d};x}' "$t/lib/base/f.c" # one statement less: 60 lines
	out=$(check "$t/lib") || { echo "self-test: a 60-line function failed: $out"; return 1; }
	seq 801 | sed 's/.*/\/* & *\//' >"$t/lib/base/big.c"
	out=$(check "$t/lib") && { echo "self-test: an 801-line file passed"; return 1; }
	grep -q 'base/big.c: 801 lines' <<<"$out" || { echo "self-test: missed the long file: $out"; return 1; }
	printf 'base/big.c  # being split\n' >"$t/allow"
	out=$(check "$t/lib" "$t/allow") || { echo "self-test: an allowed long file failed: $out"; return 1; }
	mkdir -p "$t/lib/base/tests"
	seq 900 | sed 's/.*/\/* & *\//' >"$t/lib/base/tests/test_big.c"
	out=$(check "$t/lib" "$t/allow") || { echo "self-test: a long test failed: $out"; return 1; }
	sed -i '2,$d' "$t/lib/base/big.c"
	out=$(check "$t/lib" "$t/allow") && { echo "self-test: a stale allow line passed"; return 1; }
	grep -q 'base/big.c: listed in allow but no longer over' <<<"$out" || { echo "self-test: missed the stale line: $out"; return 1; }
	echo "lib_size self-test: ok"
}

case "${1:-}" in
--self-test) self_test ;;
-h | --help) sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//' ;;
"") sed -n '3,4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
*)
	[ -d "$1" ] || { echo "lib_size: $1: not a directory" >&2; exit 2; }
	[ -z "${2:-}" ] || [ -f "$2" ] || { echo "lib_size: $2: no such file" >&2; exit 2; }
	check "$1" "${2:-}"
	;;
esac
