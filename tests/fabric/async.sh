# SPDX-License-Identifier: MIT
# The asynchronous one-sided API on real rxe, in both poll modes: many
# operations in flight (most unsignaled), completions in posting order, every
# byte written and read back checked, the depth enforced, a bad request in a
# chain refused with the ones before it posted, a blocking call beside posted
# operations, operations through a revoked grant each reported failed, and a
# reply the server posts just before it closes still received. In the same
# boot, further queue pairs under one session (lanes_check: rsec_conn_add_qp).
. "$(dirname "$0")/common.bash"

check=$build/tests/async_check
lanes=$build/tests/lanes_check
[ -x "$check" ] || fail "build async_check first (missing $check)"
[ -x "$lanes" ] || fail "build lanes_check first (missing $lanes)"
"$build/tools/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
check=$1 work=$2 lanes=$3
server=$(fabric ip 1)
# Two client runs of two connections each.
fabric on 1 "$check" serve "$work/pki" "$server" 7471 4 >"$work/server.out" 2>&1 &
spid=$!
fabric wait-port 7471 || { cat "$work/server.out"; exit 1; }
for mode in event busy; do
	fabric on 2 "$check" run "$work/pki" "$server" "$(fabric ip 2)" 7471 $mode >"$work/client-$mode.out" 2>&1
	echo "client-$mode=$?"
done
wait $spid
echo "server=$?"
for mode in event busy; do
	fabric on 1 "$lanes" serve "$work/pki" "$server" 7472 1 >"$work/lanes-server-$mode.out" 2>&1 &
	spid=$!
	fabric wait-port 7472 || { cat "$work/lanes-server-$mode.out"; exit 1; }
	fabric on 2 "$lanes" run "$work/pki" "$server" "$(fabric ip 2)" 7472 $mode >"$work/lanes-$mode.out" 2>&1
	echo "lanes-$mode=$?"
	wait $spid
	echo "lanes-server-$mode=$?"
done
GUEST

"$fabric" run --hosts 2 --mem 2048 --timeout 600 -- bash "$work/guest.sh" "$check" "$work" "$lanes" \
	>"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
# check NAME MODE: NAME-MODE.out (NAME's client in MODE) says what each line below says.
check() {
	local out=$work/$1-$2.out
	echo "--- $1, $2"
	cat "$out"
	expect_match "$work/run.out" "^$1-$2=0$" "$1 failed ($2)"
	expect_each "$out" "($2)"
}
for mode in event busy; do
	check client $mode <<'EOF'
^RESULT pipelined-write=verified$	pipelined writes did not land
^RESULT pipelined-read=verified$	pipelined reads wrong
^RESULT in-order=yes$	completions out of order or with wrong lengths
^RESULT depth=resource temporarily unavailable after 64$	posting past max_inflight is not RSEC_E_AGAIN after exactly 64
^RESULT bad-wr=value out of range posted=2 completed=2$	a bad request in a chain was not refused cleanly
^RESULT mixed=rsec_write succeeded, 4 posted completions$	a blocking call beside posted operations failed
^RESULT foreign-region=invalid argument$	another connection's region was accepted
^RESULT after-revoke=8 failed, 0 succeeded; in flight 0; then ok after 1 rebuild$	operations through a revoked grant were not each reported failed, or the session did not go on
^RESULT last-words=last words, then connection closed$	a reply posted just before the peer closed was lost
EOF
	check lanes $mode <<'EOF'
^RESULT opened=3 further	three further queue pairs did not open
^RESULT qpns=distinct$	queue pairs share a QPN
^RESULT over-limit=limit reached, none; session goes on$	a queue pair past the server's max_qps was not refused cleanly
^RESULT striped=4 of 4 verified$	striped WRITEs did not land on their own queue pairs
^RESULT cross-lane=queue pair in error state; the others work$	another queue pair's grant worked, or its failure spread
^RESULT lane-close=the others work$	closing a queue pair broke the others
^RESULT root-free=closed, connection closed$	freeing the first connection left the others open
EOF
	expect_match "$work/run.out" "^lanes-server-$mode=0$" "the lanes server failed ($mode)"
done
expect_match "$work/run.out" '^server=0$' "the server failed"
echo "PASS: asynchronous one-sided operations, further queue pairs"
