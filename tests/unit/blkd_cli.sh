#!/bin/bash
# SPDX-License-Identifier: MIT
# rdmasec-blkd's command line, without a device: the configuration file is
# read however getopt spells its option, flags and export specs are checked
# with the bad input quoted, --rw/--ro need an --export before them, an
# export must name who may use it, and a missing store stops the start.
# Every case fails or exits before the RDMA context is created.
set -u
blkd=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect STATUS TEXT ARGS...: rdmasec-blkd ARGS exits STATUS and says TEXT.
expect() {
	local want=$1 text=$2
	shift 2
	"$blkd" "$@" >"$work/out" 2>&1
	local got=$?
	[ "$got" = "$want" ] || fail "$*: exit $got, expected $want: $(cat "$work/out")"
	grep -qF -- "$text" "$work/out" || fail "$*: no '$text' in: $(cat "$work/out")"
}

printf '[target]\nqueues = 0\n' >"$work/bad.ini"
for spelling in "--config=$work/bad.ini" "-f$work/bad.ini" "--config $work/bad.ini"; do
	# shellcheck disable=SC2086 # the spelling splits into words on purpose
	expect 2 "bad.ini: line 2: queues: '0' is not a number in 1..64" $spelling
done
certs=(--ca "$work/ca.pem" --cert "$work/s.pem" --key "$work/s.key")
expect 2 "--export: unknown option 'fast'" "${certs[@]}" --export "d=$work/d.img,fast"
expect 2 "size: '12Q' is not a size" "${certs[@]}" --export "d=$work/d.img,size=12Q"
expect 2 "export name 'a b'" "${certs[@]}" --export "a b=$work/d.img"
expect 2 "--rw must follow the --export it applies to" "${certs[@]}" --rw 'CN=x'
expect 2 "export 'd': no identity may use it" "${certs[@]}" --export "d=$work/d.img,size=1M"
expect 2 "no credentials" --export "d=$work/d.img,size=1M" --rw '*'
expect 2 "no export" "${certs[@]}"
expect 2 "max_inline" "${certs[@]}" --max-transfer 8K --max-inline 16K --export "d=$work/d.img" --rw '*'
expect 2 "queue_depth: '257'" "${certs[@]}" --queue-depth 257
expect 2 "queue_depth: '65' is not a number in 1..64" "${certs[@]}" --queue-depth 65
expect 2 "store_threads: '65'" "${certs[@]}" --store-threads 65
expect 2 "busy_poll_us: '10001' is not a number in 0..10000" "${certs[@]}" --busy-poll-us 10001
expect 2 "busy_poll_us: '-1'" "${certs[@]}" --busy-poll-us -1
expect 2 "unexpected argument 'extra'" "${certs[@]}" extra
# --trust-etcd ([trust] etcd) stands in for --ca; a bad spec, or no etcd and no last good copy, stops the start.
tcerts=(--cert "$work/s.pem" --key "$work/s.key" --export "d=$work/d.img,size=1M" --rw '*')
expect 2 "trust-etcd: '127.0.0.1:2379' has no /PREFIX" "${tcerts[@]}" --trust-etcd 127.0.0.1:2379
printf '[trust]\netcd = 127.0.0.1:1/p/\n' >"$work/trust.ini"
expect 2 "prefix '/p/' is not" -f "$work/trust.ini" "${tcerts[@]}"
expect 1 "no good copy on disk" "${tcerts[@]}" --trust-etcd 127.0.0.1:1/p --trust-state-dir "$work/none"
expect 2 "usage:" --no-such-flag
expect 0 "--export NAME=PATH" --help
# A read-only export's file must exist: the target stops before any device.
expect 1 "cannot open '$work/missing.img'" "${certs[@]}" --export "d=$work/missing.img,ro" --ro '*'
# A writable one is created at its size, sparse.
expect 1 "" "${certs[@]}" --export "d=$work/new.img,size=3M" --rw '*' --listen 127.0.0.1:1
[ "$(stat -c %s "$work/new.img")" = 3145728 ] || fail "the export's file was not created at its size"
echo "blkd_cli: ok"
