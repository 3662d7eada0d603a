#!/bin/bash
# SPDX-License-Identifier: MIT
# Usage: tests/unit/tool_links.sh TOOLS_DIR
#        tests/unit/tool_links.sh --self-test
#
# Issue 37's rule for tools/: no program's folder links a library another
# program's folder defines; what several programs share lives in
# tools/common/ or tools/daemon/. Reads every CMakeLists.txt below TOOLS_DIR:
# the owner of a library is the first folder below TOOLS_DIR of the file
# that defines it (add_library); each target_link_libraries(...) names are
# checked against their owners.
# Exit 0: within the rule; 1: each link across folders printed; 2: usage.
set -u
SHARED="common daemon"

# "OWNER LIBRARY" for every add_library, then "FOLDER FILE:LINE NAME" for every name a link names.
scan() {
	local root=$1 f rel top
	while IFS= read -r f; do
		rel=${f#"$root"/}
		top=${rel%%/*}
		awk -v top="$top" -v file="$rel" '
			{ text = text $0 "\n"; lines[NR] = $0 }
			END {
				n = split(text, l, "\n")
				for (i = 1; i <= n; i++) {
					s = l[i]; sub(/#.*/, "", s)
					if (match(s, /add_library\([A-Za-z0-9_]+/))
						print "def", top, substr(s, RSTART + 12, RLENGTH - 12)
					if (s ~ /target_link_libraries\(/) { inlink = 1; at = i; sub(/.*target_link_libraries\(/, "", s) }
					if (inlink) {
						done = sub(/\).*/, "", s)
						m = split(s, w, /[ \t]+/)
						for (j = 1; j <= m; j++)
							if (w[j] ~ /^[A-Za-z0-9_]+$/) print "use", top, file ":" at, w[j]
						if (done) inlink = 0
					}
				}
			}' "$f"
	done < <(find "$root" -name CMakeLists.txt | sort)
}

check() {
	local out
	out=$(scan "$1" | awk -v shared="$SHARED" '
		BEGIN { split(shared, s, " "); for (i in s) ok[s[i]] = 1 }
		$1 == "def" { owner[$3] = $2; next }
		$1 == "use" { use[++n] = $0 }
		END {
			for (i = 1; i <= n; i++) {
				split(use[i], u, " ")
				if ((u[4] in owner) && owner[u[4]] != u[2] && !(owner[u[4]] in ok))
					printf "%s: tools/%s links %s, a library of tools/%s\n", u[3], u[2], u[4], owner[u[4]]
			}
		}')
	[ -z "$out" ] && { echo "tool links: ok (each program's folder links only its own libraries, tools/common's and tools/daemon's)"; return 0; }
	printf 'tool links: %s\n' "$out" | sed '2,$s/^/tool links: /'
	echo "tool links: move what both use to tools/common or tools/daemon (issue 37)"
	return 1
}

# A link into another program's folder must be caught; one into tools/daemon, or within a folder, not.
self_test() {
	local t out
	t=$(mktemp -d) || exit 2
	trap 'rm -rf "$t"' RETURN
	mkdir -p "$t/a" "$t/b/sub" "$t/daemon"
	printf 'add_library(lib_a STATIC a.c)\nadd_library(lib_a2 STATIC a2.c) # lib_b here is a comment\n' >"$t/a/CMakeLists.txt"
	printf 'add_library(lib_d STATIC d.c)\n' >"$t/daemon/CMakeLists.txt"
	printf 'add_library(lib_b STATIC b.c)\n' >"$t/b/CMakeLists.txt"
	printf 'add_executable(b main.c)\ntarget_link_libraries(b PRIVATE lib_b lib_d\n\t\tlib_x)\n' >"$t/b/sub/CMakeLists.txt"
	out=$(check "$t") || { echo "self-test: legal links refused: $out"; return 1; }
	printf 'target_link_libraries(b PRIVATE lib_b\n\t\tlib_a2)\n' >>"$t/b/sub/CMakeLists.txt"
	out=$(check "$t") && { echo "self-test: a link into tools/a passed"; return 1; }
	grep -q 'sub/CMakeLists.txt:4: tools/b links lib_a2, a library of tools/a' <<<"$out" ||
		{ echo "self-test: the wrong report: $out"; return 1; }
	[ "$(grep -c ' links lib_' <<<"$out")" = 1 ] || { echo "self-test: blamed a legal link: $out"; return 1; }
	echo "tool_links self-test: ok"
}

case "${1:-}" in
--self-test) self_test ;;
-h | --help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//' ;;
"") sed -n '3,4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
*)
	[ -d "$1" ] || { echo "tool_links: $1: not a directory" >&2; exit 2; }
	check "$1"
	;;
esac
