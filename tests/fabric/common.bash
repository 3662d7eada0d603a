# SPDX-License-Identifier: MIT
# Shared helpers for fabric tests (sourced). Each test boots the real
# soft-RoCE fabric through rxe-fabric; nothing RDMA is mocked.
set -u
fabric=${RXE_FABRIC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/fabric/rxe-fabric}
build=${RSEC_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build}
work=$(mktemp -d "$build/fabric-test.XXXXXX")
# The guest sees only the repository and --share directories: pass
# "${build_share[@]}" to rxe-fabric run to reach a build directory outside it.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_share=()
case "$build/" in "$repo"/*) ;; *) build_share=(--share "$build") ;; esac
trap 'rm -rf "$work"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect_match FILE REGEX WHAT: FILE must contain a line matching REGEX.
expect_match() {
	grep -Eq "$2" "$1" || { echo "--- $1:" >&2; tail -n 30 "$1" >&2; fail "$3"; }
}

# run_matrix ARGS...: rdmasec-attack matrix over this repository and build,
# ARGS added (attacks, victims, timeouts, outputs), its JSON in $work/m.json;
# prints its progress and table, and fails if it wrote no JSON. Its exit status is left in $rc.
run_matrix() {
	local atk=$build/tools/attack/rdmasec-attack start=$SECONDS
	[ -x "$atk" ] || fail "build rdmasec-attack first ($atk)"
	"$atk" matrix --repo "$repo" --build "$build" "$@" --json "$work/m.json" \
		>"$work/table.txt" 2>"$work/progress.txt"
	rc=$?
	cat "$work/progress.txt" "$work/table.txt"
	echo "matrix exit $rc after $((SECONDS - start)) s"
	[ -s "$work/m.json" ] || fail "no JSON written"
}

# expect_each FILE SUFFIX: each line on standard input is REGEX, a tab, WHAT;
# FILE must match every REGEX (else: fail "WHAT SUFFIX").
expect_each() {
	local re what
	while IFS=$'\t' read -r re what; do
		[ -n "$re" ] && expect_match "$1" "$re" "$what $2"
	done
}

# write_sniffing_attacker FILE ATTACK: a script for the attacker's host that
# watches the bridge for the client's (10.77.0.2) first SEND Only to the
# server (10.77.0.1), touches $work/sniffing once tcpdump listens, reads QPN
# and PSN from that SEND's BTH, then runs ATTACK (in which \$qpn and \$psn are
# set) and touches $work/injected.
write_sniffing_attacker() {
	cat >"$1" <<ATTACKER
set -eu
tcpdump -i fabbr -nn -x -c 1 'udp dst port 4791 and src host 10.77.0.2 and dst host 10.77.0.1 and udp[8] == 4' \
	>/tmp/first.txt 2>/tmp/tcpdump.err &
tp=\$!
for _ in \$(seq 1 100); do grep -q listening /tmp/tcpdump.err 2>/dev/null && break; sleep 0.1; done
touch $work/sniffing
wait \$tp
hex=\$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", \$i }' /tmp/first.txt)
qpn=0x\${hex:66:6} psn=\$((0x\${hex:74:6}))
echo "attacker: saw qpn \$qpn psn \$psn on the wire"
sleep 2
$2
touch $work/injected
ATTACKER
}

# The numbered stream of run_attacked_session: STREAM_BEFORE messages go
# before the attack (the attacker, who saw the first, aims at the next PSN),
# the rest after it.
STREAM_BEFORE=5 STREAM_TOTAL=40

# run_attacked_session [CLIENT_TAIL]: the rdmasec server (certificates in
# $work/pki) on host 1; on host 2, once host 3 is sniffing, a client that
# sends msg-1..msg-$STREAM_BEFORE, waits for $work/injected, sends the rest
# of msg-1..msg-$STREAM_TOTAL (each echoed by the server), then runs the
# shell lines CLIENT_TAIL; host 3 runs $work/attacker.sh. Prints and leaves
# $work/out and $work/server.log.
run_attacked_session() {
	cat >"$work/client.sh" <<CLIENT
set -u
bin=\$1 work=\$2
while [ ! -e "\$work/sniffing" ]; do sleep 0.1; done
fabric wait-port 7471 60
{
	for i in \$(seq 1 $STREAM_BEFORE); do echo "send msg-\$i"; done
	for _ in \$(seq 1 300); do [ -e "\$work/injected" ] && break; sleep 0.1; done
	sleep 2
	for i in \$(seq $((STREAM_BEFORE + 1)) $STREAM_TOTAL); do echo "send msg-\$i"; done
	echo quit
} | "\$bin/client/rdmasec-client" --certs "\$work/pki" --source "\$FABRIC_IP" -t 20000 "\$(fabric ip 1)"
echo "client=\$?"
CLIENT
	printf '%s\n' "${1-}" >>"$work/client.sh"
	local bin=$build/tools
	"$fabric" run --hosts 3 --timeout 300 --capture "$work/wire.pcap" \
		--on 1 "timeout 90 $bin/server/rdmasec-server --certs $work/pki --listen \$FABRIC_IP:7471 2>$work/server.log; true" \
		--on 2 "bash $work/client.sh $bin $work; pkill -TERM rdmasec-server" \
		--on 3 "bash $work/attacker.sh" >"$work/out" 2>&1 || { cat "$work/out"; fail "the fabric run failed"; }
	cat "$work/out"
	cat "$work/server.log"
}

# expect_whole_stream: every message of run_attacked_session's stream came
# back exactly once and in order, and nothing else did.
expect_whole_stream() {
	sed -n 's/^\[h2\] reply: \(msg-[0-9]*\)$/\1/p' "$work/out" >"$work/replies"
	seq 1 "$STREAM_TOTAL" | sed 's/^/msg-/' >"$work/expected"
	diff -u "$work/expected" "$work/replies" >&2 ||
		fail "the stream did not come back whole, once and in order (diff above: expected, got)"
}
