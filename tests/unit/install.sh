# SPDX-License-Identifier: MIT
# `make install` (cmake --install) into a scratch DESTDIR: the library, its
# header and pkg-config file, every program, and every manual page in its
# section, each of which groff formats without a warning.
set -u
build=$1 src=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$dest cmake --install "$build" --prefix /usr/local >"$dest.log" 2>&1 || { cat "$dest.log"; fail "cmake --install failed"; }
rm -f "$dest.log"
root=$dest/usr/local
for p in rdmasec-server rdmasec-client rdmasec-keygen rdmasec-attack rdmasec-bench; do
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
[ $n -ge 5 ] || fail "only $n manual pages"
echo "install: ok ($n manual pages)"
