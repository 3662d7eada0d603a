# SPDX-License-Identifier: MIT
# The asynchronous one-sided API on real rxe, in both poll modes: many
# operations in flight (most unsignaled), completions in posting order, every
# byte written and read back checked, the depth enforced, a bad request in a
# chain refused with the ones before it posted, a blocking call beside posted
# operations, and operations through a revoked grant each reported failed.
. "$(dirname "$0")/common.bash"

check=$build/tests/async_check
[ -x "$check" ] || fail "build async_check first (missing $check)"
"$build/tools/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
check=$1 work=$2
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
GUEST

"$fabric" run --hosts 2 --mem 2048 --timeout 600 -- bash "$work/guest.sh" "$check" "$work" \
	>"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
for mode in event busy; do
	out=$work/client-$mode.out
	echo "--- $mode"
	cat "$out"
	expect_match "$work/run.out" "^client-$mode=0$" "async_check failed ($mode)"
	expect_match "$out" '^RESULT pipelined-write=verified$' "pipelined writes did not land ($mode)"
	expect_match "$out" '^RESULT pipelined-read=verified$' "pipelined reads wrong ($mode)"
	expect_match "$out" '^RESULT in-order=yes$' "completions out of order or with wrong lengths ($mode)"
	expect_match "$out" '^RESULT depth=resource temporarily unavailable after 64$' \
		"posting past max_inflight is not RSEC_E_AGAIN after exactly 64 ($mode)"
	expect_match "$out" '^RESULT bad-wr=value out of range posted=2 completed=2$' \
		"a bad request in a chain was not refused cleanly ($mode)"
	expect_match "$out" '^RESULT mixed=rsec_write succeeded, 4 posted completions$' \
		"a blocking call beside posted operations failed ($mode)"
	expect_match "$out" '^RESULT foreign-region=invalid argument$' "another connection's region was accepted ($mode)"
	expect_match "$out" '^RESULT after-revoke=8 failed, 0 succeeded, then queue pair in error state; in flight 0$' \
		"operations through a revoked grant were not each reported failed ($mode)"
done
expect_match "$work/run.out" '^server=0$' "the server failed"
echo "PASS: asynchronous one-sided operations"
