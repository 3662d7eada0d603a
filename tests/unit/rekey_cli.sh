#!/bin/bash
# SPDX-License-Identifier: MIT
# --rekey-s and --rekey-bytes of rdmasec-server, rdmasec-client,
# rdmasec-blkd and rdmasec-blk (and the nbdkit plugin's rekey_s= and
# rekey_bytes=), without a device: 0, negative, garbage and over-maximum
# values are refused with a message naming the option, exit 2 (bad usage).
set -u
server=$1 client=$2 blkd=$3 blk=$4 plugin=${5-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
blk_conn=(info --server 192.0.2.1 --certs "$work" --export disk)
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
	refused "blk --rekey-s $v" 2 "--rekey-s: '$v' is not a number in 1..604800" \
		"$blk" "${blk_conn[@]}" --rekey-s "$v"
done
for v in 0 -5 lots 137438953473; do
	refused "server --rekey-bytes $v" 2 "rekey_bytes: '$v' is not in 1..137438953472" \
		"$server" --listen 127.0.0.1:1 --rekey-bytes "$v"
	refused "client --rekey-bytes $v" 2 "--rekey-bytes: '$v' is not a number in 1..137438953472" \
		"$client" -p 1 -t 1000 --rekey-bytes "$v" 127.0.0.1
	refused "blkd --rekey-bytes $v" 2 "rekey_bytes: '$v' is not a size in 1..137438953472" \
		"$blkd" --listen 127.0.0.1:1 --rekey-bytes "$v"
	refused "blk --rekey-bytes $v" 2 "--rekey-bytes: '$v' is not a number in 1..137438953472" \
		"$blk" "${blk_conn[@]}" --rekey-bytes "$v"
done
# The largest values are taken: rdmasec-blk gets as far as the credentials.
refused "blk at the bounds" 1 "cannot load CA $work/ca.pem" \
	"$blk" "${blk_conn[@]}" --rekey-s 604800 --rekey-bytes 128G
if [ -n "$plugin" ]; then
	# A sanitizer build's plugin needs its runtime loaded first in nbdkit (which is not built with it).
	asan=$(ldd "$plugin" | awk '/libasan/ { print $3; exit }')
	[ -z "$asan" ] || export LD_PRELOAD=$asan ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	args=(server=192.0.2.1 "certs=$work" export=disk)
	for v in 0 1h 604801; do
		refused "plugin rekey_s=$v" 1 "rekey_s: '$v' is not a number in 1..604800" \
			nbdkit -f "$plugin" "${args[@]}" "rekey_s=$v"
	done
	for v in 0 lots 137438953473; do
		refused "plugin rekey_bytes=$v" 1 "rekey_bytes: '$v' is not a number in 1..137438953472" \
			nbdkit -f "$plugin" "${args[@]}" "rekey_bytes=$v"
	done
	nbdkit "$plugin" --help | grep -q "rekey_bytes=" || fail "the plugin's help lacks rekey_bytes="
fi
for prog in "$server" "$client" "$blkd" "$blk"; do
	"$prog" --help | grep -q -- --rekey-bytes || fail "$prog --help lacks --rekey-bytes"
done
echo "rekey_cli: ok"
