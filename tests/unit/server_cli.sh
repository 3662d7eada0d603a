#!/bin/bash
# SPDX-License-Identifier: MIT
# rdmasec-server's command line, without a device: the configuration file is
# read however getopt spells its option (each spelling once made the server
# ignore it), flags are checked, --help works. Needs no RDMA device: every
# case fails or exits before the context is created.
set -u
server=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf '[server]\nlisten = 127.0.0.1:7999\nmax_clients = 0\n' >"$work/bad.ini"
for spelling in "--config=$work/bad.ini" "-f$work/bad.ini" "-f $work/bad.ini" "--config $work/bad.ini"; do
	# shellcheck disable=SC2086 # the spelling splits into words on purpose
	"$server" $spelling >"$work/out" 2>&1 && fail "$spelling: accepted a bad configuration"
	grep -q "bad.ini: line 3: max_clients: '0' is not in 1..65536" "$work/out" ||
		fail "$spelling: the file was not read: $(cat "$work/out")"
done
"$server" --max-handshakes-per-source 0 >"$work/out" 2>&1 && fail "--max-handshakes-per-source 0 accepted"
grep -q "max_handshakes_per_source" "$work/out" || fail "no reason for a bad flag: $(cat "$work/out")"
"$server" --verify-timeout 10 >"$work/out" 2>&1 && fail "--verify-timeout 10 accepted"
"$server" --allow 'spiffe://prod.example/storage*' >"$work/out" 2>&1 && fail "a malformed --allow rule was accepted"
grep -q "allow: authorization rule 'spiffe://prod.example/storage\*' has a '\*'" "$work/out" ||
	fail "no reason for a malformed --allow rule: $(cat "$work/out")"
# --trust-etcd: a bad spec, PSK mode, and no etcd with no last good copy all refuse to start.
"$server" --cert x --key y --trust-etcd 127.0.0.1:2379 >"$work/out" 2>&1 && fail "--trust-etcd without a prefix accepted"
grep -q "trust-etcd: '127.0.0.1:2379' has no /PREFIX" "$work/out" || fail "no reason for a bad --trust-etcd: $(cat "$work/out")"
printf '[trust]\netcd = 127.0.0.1:1/p/\n' >"$work/trust.ini"
"$server" -f "$work/trust.ini" --cert x --key y >"$work/out" 2>&1 && fail "[trust] etcd with a trailing / accepted"
grep -q "prefix '/p/' is not" "$work/out" || fail "[trust] etcd was not read: $(cat "$work/out")"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/psk" && chmod 600 "$work/psk"
"$server" --psk-file "$work/psk" --psk-identity x --trust-etcd 127.0.0.1:1/p >"$work/out" 2>&1 &&
	fail "--trust-etcd in PSK mode accepted"
grep -q "trust-etcd needs certificate mode" "$work/out" || fail "no reason for PSK with --trust-etcd: $(cat "$work/out")"
"$server" --cert x --key y --trust-etcd 127.0.0.1:1/p --trust-state-dir "$work/none" >"$work/out" 2>&1
[ $? = 1 ] || fail "--trust-etcd with neither etcd nor a last good copy did not exit 1"
grep -q "etcd unreachable (127.0.0.1:1: .*) and no good copy on disk" "$work/out" ||
	fail "no reason for a start without etcd or a copy: $(cat "$work/out")"
"$server" --no-such-flag >"$work/out" 2>&1 && fail "an unknown flag was accepted"
"$server" --help >"$work/out" 2>&1 || fail "--help failed"
grep -q -- "--handshake-rate" "$work/out" || fail "--help lacks --handshake-rate"
grep -q -- "--trust-etcd" "$work/out" || fail "--help lacks --trust-etcd"
echo "server_cli: ok"
