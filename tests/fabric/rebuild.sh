# SPDX-License-Identifier: MIT
# Self-healing on real rxe (rebuild_check): a queue pair failed mid-stream on
# either side, while frames are in flight, costs no message and no
# connection; grants outlive it (bound again, the same handle works), one-sided
# operations in flight end explicitly; the per-minute
# budget and a side that allows no rebuild close the connection as before,
# saying why. Also prints how long recovery takes, beside a round trip and a
# new connection (docs/protocol.md quotes these figures). Both sides renew
# their keys every 256 KiB of messages: the stream's faults strike between and
# during rekeys, and the stream still arrives whole (at least 8 rekeys).
. "$(dirname "$0")/common.bash"

check=$build/tests/rebuild_check
[ -x "$check" ] || fail "build rebuild_check first (missing $check)"
"$build/tools/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
check=$1 work=$2
server=$(fabric ip 1)
fabric on 1 "$check" serve "$work/pki" "$server" 7471 10 >"$work/server.out" 2>&1 &
spid=$!
fabric wait-port 7471 || { cat "$work/server.out"; exit 1; }
fabric on 2 "$check" run "$work/pki" "$server" "$(fabric ip 2)" 7471 >"$work/client.out" 2>&1
echo "client=$?"
wait $spid
echo "server=$?"
# Grants by registration (no windows) are bound again too.
fabric on 1 "$check" serve "$work/pki" "$server" 7472 1 mr >"$work/server-mr.out" 2>&1 &
spid=$!
fabric wait-port 7472 || { cat "$work/server-mr.out"; exit 1; }
fabric on 2 "$check" grants "$work/pki" "$server" "$(fabric ip 2)" 7472 >"$work/client-mr.out" 2>&1
echo "client-mr=$?"
wait $spid
echo "server-mr=$?"
GUEST

"$fabric" run --hosts 2 --timeout 400 -- bash "$work/guest.sh" "$check" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out" "$work/client.out" "$work/server.out" "$work/client-mr.out"
expect_match "$work/run.out" '^client=0$' "the client failed"
expect_match "$work/run.out" '^server=0$' "the server failed"
expect_match "$work/run.out" '^client-mr=0$' "the client failed (grants by registration)"
expect_match "$work/run.out" '^server-mr=0$' "the server failed (grants by registration)"
expect_match "$work/server-mr.out" '^server: grants by mr$' "the second server did not grant by registration"
rekeys=$(sed -n 's/^RESULT stream-rekeys=\([0-9]*\)$/\1/p' "$work/client.out")
[ "${rekeys:-0}" -ge 8 ] || fail "too few rekeys during the stream: ${rekeys:-none}"
expect_each "$work/client.out" "" <<'EOF'
^RESULT stream=288 echoed in order, 8 faults, [8-9] rebuilds, server rebuilds=[8-9], latest: (queue pair error|the peer's side: the queue pair failed)	the stream did not survive the faults whole and in order
^RESULT grants=ok; after a rebuild, the same handle: write ok, check ok, read ok; after the server's: write ok, check ok, read ok; verified read ok, after a rebuild ok; 3 rebuilds; new grant ok$	a grant handle did not keep working through rebuilds, or a new grant failed
^RESULT inflight=48 posted: 48 reported \([1-9][0-9]* failed, 0 other\), 0 in flight; then msg-goes-on, the grant ok$	posted operations were lost at the fault, or the session or its grant did not go on
^RESULT budget=fault 4 closed it after 3 rebuilds: .*rebuilt 3 times in the last minute, the limit\)$	the budget did not close the connection at the 4th fault
^RESULT off=fault 1 closed it after 0 rebuilds: .*not rebuilt: rebuilding is off\)$	a side without rebuilding did not close as before
^RESULT timing=15 rebuilds; recovery median [0-9.]+ ms	no recovery timing
EOF
expect_each "$work/client-mr.out" "(grants by registration)" <<'EOF'
^RESULT grants=ok; after a rebuild, the same handle: write ok, check ok, read ok; after the server's: write ok, check ok, read ok; verified read ok, after a rebuild ok; 3 rebuilds; new grant ok$	a grant handle did not keep working through rebuilds, or a new grant failed
EOF
echo "PASS: rebuilt data paths lose nothing; grants, operations, budget and opt-out behave"
