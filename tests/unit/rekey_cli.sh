#!/bin/bash
# SPDX-License-Identifier: MIT
# --rekey-s and --rekey-bytes of rdmasec-server, rdmasec-client and
# rdmasec-blkd, without a device: 0, negative, garbage and over-maximum
# values are refused with a message naming the option, exit 2 (bad usage).
set -u
server=$1 client=$2 blkd=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

# $1 name, $2 exit status wanted, $3 text wanted; the rest: the command line.
refused() {
	local name=$1 want_rc=$2 want=$3 rc out
	shift 3
	out=$(timeout 20 "$@" 2>&1)
	rc=$?
	[ "$rc" = "$want_rc" ] || fail "$name: exit $rc (want $want_rc): $out"
	grep -qF -- "$want" <<<"$out" || fail "$name: no '$want' in: $out"
}

for v in 0 -1 1h 604801; do
	refused "server --rekey-s $v" 2 "rekey_s: '$v' is not in 1..604800" \
		"$server" --listen 127.0.0.1:1 --rekey-s "$v"
	refused "client --rekey-s $v" 2 "--rekey-s: '$v' is not a number in 1..604800" \
		"$client" -p 1 -t 1000 --rekey-s "$v" 127.0.0.1
	refused "blkd --rekey-s $v" 2 "rekey_s: '$v' is not a number in 1..604800" \
		"$blkd" --listen 127.0.0.1:1 --rekey-s "$v"
done
for v in 0 -5 lots 137438953473; do
	refused "server --rekey-bytes $v" 2 "rekey_bytes: '$v' is not in 1..137438953472" \
		"$server" --listen 127.0.0.1:1 --rekey-bytes "$v"
	refused "client --rekey-bytes $v" 2 "--rekey-bytes: '$v' is not a number in 1..137438953472" \
		"$client" -p 1 -t 1000 --rekey-bytes "$v" 127.0.0.1
	refused "blkd --rekey-bytes $v" 2 "rekey_bytes: '$v' is not a size in 1..137438953472" \
		"$blkd" --listen 127.0.0.1:1 --rekey-bytes "$v"
done
for prog in "$server" "$client" "$blkd"; do
	"$prog" --help | grep -q -- --rekey-bytes || fail "$prog --help lacks --rekey-bytes"
done
echo "rekey_cli: ok"
