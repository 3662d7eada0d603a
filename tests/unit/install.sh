# SPDX-License-Identifier: MIT
# `make install` (cmake --install) into a scratch DESTDIR: the library, its
# header and pkg-config file, every program, and every manual page in its
# section, each of which groff formats without a warning. The library's
# section-3 pages: man-db's `man -l` formats each without a warning, every
# call the installed header declares is named by exactly one of them and
# `man 3 CALL` finds that page, and every type and constant of the header
# appears on one.
set -u
build=$1 src=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$dest cmake --install "$build" --prefix /usr/local >"$dest.log" 2>&1 || { cat "$dest.log"; fail "cmake --install failed"; }
rm -f "$dest.log"
root=$dest/usr/local
for p in rdmasec-server rdmasec-client rdmasec-keygen rdmasec-attack rdmasec-bench rdmasec-blkd; do
	[ -x "$root/bin/$p" ] || fail "$p not installed"
done
[ -f "$root/include/rdmasec.h" ] || fail "rdmasec.h not installed"
ls "$root"/lib*/librdmasec.so* >/dev/null 2>&1 || fail "librdmasec not installed"
ls "$root"/lib*/pkgconfig/rdmasec.pc >/dev/null 2>&1 || fail "rdmasec.pc not installed"
n=0
for page in "$src"/man/*.[1-8]; do
	name=$(basename "$page")
	installed=$root/share/man/man${name##*.}/$name
	[ -f "$installed" ] || fail "$name not installed in man${name##*.}"
	warnings=$(groff -man -ww -z "$installed" 2>&1)
	[ -z "$warnings" ] || fail "$name: $warnings"
	n=$((n + 1))
done
[ $n -ge 11 ] || fail "only $n manual pages"

# The library's pages (section 3), read as man-db reads them.
for tool in man lexgrog; do
	command -v $tool >/dev/null ||
		fail "$tool is missing: it comes with the Debian package man-db (scripts/install-deps installs it)"
done
export MANWIDTH=80 MANPAGER=cat PAGER=cat MAN_DISABLE_SECCOMP=1 LC_ALL=C.UTF-8
man3=$root/share/man/man3
header=$root/include/rdmasec.h
names=$dest/names # "call page" for every name in a NAME line
: >"$names"
pages3=0
for page in "$src"/man/*.3; do
	name=$(basename "$page")
	out=$(man --warnings=w -l "$man3/$name" 2>"$dest/err") || fail "man -l $name failed: $(cat "$dest/err")"
	[ ! -s "$dest/err" ] || fail "man -l $name: $(cat "$dest/err")"
	for section in NAME SYNOPSIS DESCRIPTION "RETURN VALUE" "SEE ALSO"; do
		grep -q "^$section\$" <<<"$out" || fail "$name has no $section section"
	done
	grep -q 'pkg-config --cflags --libs rdmasec' <<<"$out" || fail "$name: its SYNOPSIS does not say how to link"
	lexgrog "$man3/$name" >"$dest/whatis" || fail "lexgrog cannot read the NAME section of $name"
	sed -n 's/^[^:]*: "\([a-z0-9_]*\) - .*/\1/p' "$dest/whatis" | sed "s/\$/ ${name%.3}/" >>"$names"
	pages3=$((pages3 + 1))
done
[ $pages3 -ge 6 ] || fail "only $pages3 section-3 pages"

# Every function the header declares: its declarations start in column 0
# with a return type ("int rsec_x(", "const char *rsec_x(").
grep -v '^[[:space:]/*]' "$header" | grep -o '\brsec_[a-z0-9_]*(' | tr -d '(' | sort -u >"$dest/calls"
[ "$(wc -l <"$dest/calls")" -ge 40 ] || fail "found only $(wc -l <"$dest/calls") calls in rdmasec.h: is the grep still right?"
while read -r call; do
	on=$(awk -v c="$call" '$1 == c { print $2 }' "$names")
	case $(wc -w <<<"$on") in
	0) fail "$call (rdmasec.h) is in the NAME line of no section-3 page" ;;
	1) ;;
	*) fail "$call is in the NAME lines of several pages:" $on ;;
	esac
	title=$(man -M "$root/share/man" 3 "$call" 2>&1 | head -n 1)
	grep -q "^${on^^}(3) " <<<"$title" || fail "man 3 $call does not find $on(3): $title"
done <"$dest/calls"
while read -r call page; do
	grep -qx "$call" "$dest/calls" || fail "$page(3) names $call, which rdmasec.h does not declare"
done <"$names"

# Every type, enumerator and macro of the header appears on a page; each
# struct the header defines is shown ("struct rsec_x {") on exactly one.
{
	grep -o '\b\(struct\|enum\) rsec_[a-z0-9_]*' "$header"
	grep -o '\brsec_[a-z0-9_]*_fn\b' "$header"
	sed -n 's/^[[:space:]]*\(RSEC_[A-Z0-9_]*\) =.*/\1/p; s/^#define \(RSEC_[A-Z0-9_]*\).*/\1/p' "$header"
} | sort -u | while read -r token; do
	grep -qwF "$token" "$src"/man/*.3 || fail "$token (rdmasec.h) is on no section-3 page"
done || exit 1
grep -o '^struct rsec_[a-z0-9_]* {' "$header" | while read -r def; do
	on=$(grep -lF "$def" "$src"/man/*.3 | wc -l)
	[ "$on" = 1 ] || fail "\"$def\" is shown on $on section-3 pages, not one"
done || exit 1
echo "install: ok ($n manual pages, $pages3 for the library's $(wc -l <"$dest/calls") calls)"
