#!/bin/bash
# SPDX-License-Identifier: MIT
# rdmasec-blk's and the nbdkit plugin's command lines, without a device:
# every case fails (or prints help) before any connection, each with its
# reason, and exit status 2 for bad usage.
set -u
blk=$1 plugin=${2-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS REGEX ARGS...: rdmasec-blk ARGS exits STATUS and says REGEX.
expect() {
	local want=$1 re=$2
	shift 2
	"$blk" "$@" >"$work/out" 2>&1
	local got=$?
	[ "$got" = "$want" ] || fail "rdmasec-blk $*: exit $got, not $want: $(cat "$work/out")"
	grep -Eq -- "$re" "$work/out" || fail "rdmasec-blk $*: no \"$re\" in: $(cat "$work/out")"
}

conn=(--server 192.0.2.1 --certs "$work" --export disk)
expect 0 "--queue-depth" --help
expect 0 "randwrite" bench --help
expect 2 "usage" 
expect 2 'unknown command "frob"' frob
expect 2 "give --server, --certs and --export" bench --server 192.0.2.1
expect 2 'rw: "sequential" is not' bench "${conn[@]}" --rw sequential
expect 2 "bs: '3x' is not a number" bench "${conn[@]}" --bs 3x
expect 2 "bs: '256' is not a number in 512" bench "${conn[@]}" --bs 256
expect 2 "queue-depth: '0' is not a number in 1..256" bench "${conn[@]}" --queue-depth 0
expect 2 "queue-depth: '257'" bench "${conn[@]}" --queue-depth 257
# The old spelling: still taken, with a warning, and still bounded.
expect 2 "iodepth is deprecated: it is --queue-depth now" bench "${conn[@]}" --iodepth 257
expect 2 "iodepth: '257'" bench "${conn[@]}" --iodepth 257
expect 2 "queues: '65'" bench "${conn[@]}" --queues 65
expect 2 "runtime: '0'" bench "${conn[@]}" --runtime 0
expect 2 "ramp-time: '3601'" bench "${conn[@]}" --ramp-time 3601
expect 2 "ramp-time: not with --verify" bench "${conn[@]}" --ramp-time 2 --verify
expect 2 "port: '70000'" bench --server 192.0.2.1:70000 --certs "$work" --export disk
expect 2 "is not ADDR" bench --server '[::1' --certs "$work" --export disk
expect 2 'unexpected argument "extra"' info "${conn[@]}" extra
expect 2 "read needs --length" read "${conn[@]}" --offset 0
expect 2 "unrecognized option" bench "${conn[@]}" --no-such-flag
# Valid options get as far as the credentials.
expect 1 "cannot load CA $work/ca.pem" info "${conn[@]}"
expect 1 "cannot load CA $work/ca.pem" bench "${conn[@]}" --queue-depth 256
expect 1 "iodepth is deprecated" bench "${conn[@]}" --iodepth 8

if [ -n "$plugin" ]; then
	command -v nbdkit >/dev/null || fail "nbdkit is missing (scripts/install-deps installs it)"
	# A sanitizer build's plugin needs its runtime loaded first in nbdkit (which is not built with it).
	asan=$(ldd "$plugin" | awk '/libasan/ { print $3; exit }')
	if [ -n "$asan" ]; then
		export LD_PRELOAD=$asan ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	fi
	nbdkit "$plugin" --help >"$work/out" 2>&1 || fail "nbdkit $plugin --help failed: $(cat "$work/out")"
	grep -q "server=HOST" "$work/out" || fail "the plugin's help lacks server=: $(cat "$work/out")"
	grep -q "reconnect=MS" "$work/out" || fail "the plugin's help lacks reconnect=: $(cat "$work/out")"
	grep -q "queue_depth=N" "$work/out" || fail "the plugin's help lacks queue_depth=: $(cat "$work/out")"
	# The old spelling: taken with a warning (this run then stops at the parameter after it).
	timeout 20 nbdkit -f "$plugin" server=192.0.2.1 certs="$work" export=d depth=8 frob=1 >"$work/out" 2>&1
	grep -q "depth= is deprecated: it is queue_depth= now" "$work/out" || fail "depth= gave no warning: $(cat "$work/out")"
	grep -q 'unknown parameter "frob"' "$work/out" || fail "depth=8 was not taken: $(cat "$work/out")"
	timeout 20 nbdkit -f "$plugin" server=192.0.2.1 certs="$work" export=d queue_depth=8 frob=1 >"$work/out" 2>&1
	grep -q 'unknown parameter "frob"' "$work/out" || fail "queue_depth=8 was not taken: $(cat "$work/out")"
	grep -q "deprecated" "$work/out" && fail "queue_depth= was called deprecated: $(cat "$work/out")"
	nbdkit "$plugin" --dump-plugin >"$work/out" 2>&1 || fail "--dump-plugin failed"
	grep -q "^thread_model=parallel" "$work/out" || fail "the plugin is not parallel: $(cat "$work/out")"
	grep -q "^api_version=2" "$work/out" || fail "the plugin is not API v2"
	for args in "server=192.0.2.1" "server=192.0.2.1 certs=$work export=bad/name" \
		"server=192.0.2.1 certs=$work export=d queues=65" "server=192.0.2.1 certs=$work export=d frob=1" \
		"server=192.0.2.1 certs=$work export=d max-io=100" "server=192.0.2.1 certs=$work export=d reconnect=-1" \
		"server=192.0.2.1 certs=$work export=d reconnect=3600001" \
		"server=192.0.2.1 certs=$work export=d queue_depth=0" "server=192.0.2.1 certs=$work export=d queue_depth=257" \
		"server=192.0.2.1 certs=$work export=d depth=257"; do
		# shellcheck disable=SC2086 # the parameters split into words on purpose
		timeout 20 nbdkit -f "$plugin" $args >"$work/out" 2>&1 && fail "nbdkit accepted $args"
		grep -q "error" "$work/out" || fail "$args: no error said: $(cat "$work/out")"
	done
fi
echo "blk_cli: ok"
