# SPDX-License-Identifier: MIT
# Healing composes (issue 22, findings 2 and 3), one 2-host boot:
# rdmasec-server with --resume-grace and --max-per-identity 1, and
# resume_rebuild_check streaming numbered echoes on one session while its
# control connection is cut five times: once alone; twice after its own
# REBUILD went out (its QP failed), once before the server's answer and once
# after it (unread: the server connected its rebuilt QP, the client did not,
# so they resume one epoch apart); twice right after it connected its rebuilt
# QP and sent REBUILD_READY (a replayed frame made the server start the
# rebuild, as a forged SEND would). Every cut parks the session on both
# sides, it resumes (never refused by the identity limit: the parked session
# is that identity's one connection), the rebuild finishes, and every echo
# comes back once and in order. A second connection of the identity while the
# session lives is refused, and the server's refusal line names the identity.
. "$(dirname "$0")/common.bash"

check=$build/tests/resume_rebuild_check
[ -x "$check" ] || fail "build resume_rebuild_check first (missing $check)"
"$build/tools/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
build=$1 work=$2
s=$(fabric ip 1)
fabric on 1 "$build/tools/server/rdmasec-server" --certs "$work/pki" --listen "$s:7471" --resume-grace 8000 \
	--max-per-identity 1 --rebuilds-per-min 60 --audit "$work/audit.jsonl" 2>"$work/server.log" &
fabric wait-port 7471 20 || echo "server not listening"
fabric on 2 "$build/tests/resume_rebuild_check" "$work/pki" "$s" "$(fabric ip 2)" 7471 >"$work/client.out" 2>&1
echo "client=$?"
sleep 0.5
pkill -TERM -f "listen $s:7471"
wait
GUEST

"$fabric" run --hosts 2 --timeout 300 -- bash "$work/guest.sh" "$build" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out" "$work/client.out"
grep -E 'event=(rebuilt|resumed|refused|closed|handshake_failed)' "$work/server.log"

# Where the cuts landed: in the phase each round asked for (the check's own state at the cut).
expect_each "$work/client.out" "" <<'EOF'
^CUT round=3 state=none	the plain cut did not happen
^CUT round=6 state=sent 	round 6 was not cut with our REBUILD out
^CUT round=14 state=sent 	round 14 was not cut with our REBUILD out
^CUT round=10 state=connected 	round 10 was not cut with our rebuilt QP connected
^CUT round=18 state=connected 	round 18 was not cut with our rebuilt QP connected
^RESULT stream=([0-9]+) of \1 echoed once and in order; rebuilds=[0-9]+ resumes=5;	the stream did not survive whole, once and in order, on one session resumed 5 times
^RESULT second=.*refused: limit reached	a second connection of the identity was not refused by the limit
EOF
expect_match "$work/run.out" '^client=0$' "the client failed"
! grep -q '^MISSED' "$work/client.out" || fail "a cut did not land in the phase asked for"
# Round 14 resumed one epoch apart: the rebuild after it built the epoch after the server's, two past ours.
cut14=$(sed -n 's/^CUT round=14 .* epoch=//p' "$work/client.out")
after14=$(sed -n 's/^RESULT stream=.*round 14: \([0-9]*\).*/\1/p' "$work/client.out")
[ -n "$cut14" ] && [ "$after14" = $((cut14 + 2)) ] ||
	fail "round 14 did not resume one epoch behind the server (epoch $cut14 at the cut, $after14 after)"
# The session is identity "client"'s one connection: its new channels are never refused, the second
# connection is, and its refusal line names the identity.
[ "$(grep -c 'event=resumed .*reason="handed over: the session of connection 1 resumed on it"' "$work/server.log")" = 5 ] ||
	fail "five new channels were not handed to session 1"
[ "$(grep -c 'event=refused' "$work/server.log")" = 1 ] || fail "not exactly one refusal (the second connection)"
expect_match "$work/server.log" 'event=refused conn=[0-9]+ peer="[^"]*client[^"]*" .*code="limit reached"' \
	"the refusal line does not name the identity"
n=$(sed -n 's/^RESULT stream=\([0-9]*\) of .*/\1/p' "$work/client.out")
expect_match "$work/server.log" "event=closed conn=1 .*reason=\"peer disconnected: done\" msgs_in=$n " \
	"session 1 did not end normally with all $n messages"
# Each cut parked the session on the server and it resumed there too.
[ "$(grep -c '"event":"resume","role":"server","conn":1,.*"result":"lost"' "$work/audit.jsonl")" = 5 ] ||
	fail "the server did not park session 1 five times"
[ "$(grep -c '"event":"resume","role":"server","conn":1,.*"result":"ok"' "$work/audit.jsonl")" = 5 ] ||
	fail "the server did not resume session 1 five times"
echo "resume_rebuild: ok"
