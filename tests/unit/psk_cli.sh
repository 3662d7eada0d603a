#!/bin/bash
# SPDX-License-Identifier: MIT
# --psk-file of rdmasec-server and rdmasec-client, without a device: both
# read the key with the one hardened loader, so a symlink is refused and a
# FIFO is refused at once (a blocking open would hang here until timeout).
# Every case fails before any context is created.
set -u
server=$1 client=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n' >"$work/psk"
chmod 600 "$work/psk"
ln -s "$work/psk" "$work/link"
mkfifo -m 600 "$work/fifo"
cp "$work/psk" "$work/open"
chmod 644 "$work/open"

# $1 name, $2 file, $3 the reason expected; the rest: the command line.
refused() {
	local name=$1 file=$2 want=$3 rc
	shift 3
	timeout 20 "$@" --psk-file "$file" --psk-identity me >"$work/out" 2>&1
	rc=$?
	[ "$rc" = 124 ] && fail "$name: blocked on $file"
	[ "$rc" = 1 ] || fail "$name: exit $rc for $file (want 1): $(cat "$work/out")"
	grep -q -- "$want" "$work/out" || fail "$name: $file: no '$want' in: $(cat "$work/out")"
}

for prog in server client; do
	if [ "$prog" = server ]; then
		cmd=("$server" --listen 127.0.0.1:1)
	else
		cmd=("$client" -p 1 -t 1000 127.0.0.1)
	fi
	refused "$prog" "$work/link" "is a symbolic link" "${cmd[@]}"
	refused "$prog" "$work/fifo" "is not a regular file" "${cmd[@]}"
	refused "$prog" "$work/open" "has mode 0644" "${cmd[@]}"
	refused "$prog" "$work/missing" "cannot open" "${cmd[@]}"
done
# The same key through its real path passes the loader: whatever fails next is not about the PSK file.
timeout 20 "$client" -p 1 -t 1000 --psk-file "$work/psk" --psk-identity me 127.0.0.1 >"$work/out" 2>&1
grep -q "PSK file" "$work/out" && fail "client: refused a good PSK file: $(cat "$work/out")"
echo "psk_cli: ok"
