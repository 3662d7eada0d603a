# SPDX-License-Identifier: MIT
# Per-peer counters: the server's metrics file (Prometheus text format) counts
# a refused client under its address and a good client under its identity, and
# the good client's `stats` shows what the server counted about it. The file
# is rewritten by the server's one-second tick after a change, and on SIGUSR1.
. "$(dirname "$0")/common.bash"

bin=$build/tools
keygen=$bin/keygen/rdmasec-keygen
"$keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$keygen" --ca-name other "$work/other" >/dev/null || fail "rdmasec-keygen (other CA) failed"

cat >"$work/guest.sh" <<'EOF'
set -u
bin=$1 work=$2
server=$(fabric ip 1)
client() { fabric on "$1" "$bin/client/rdmasec-client" --source "$(fabric ip "$1")" -t 20000 "${@:2}" "$server"; }

fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$server:7471" \
	--handshake-timeout 20000 --metrics "$work/rdmasec.prom" 2>"$work/server.log" &
spid=$!
fabric wait-port 7471 || { cat "$work/server.log"; exit 1; }
cp "$work/rdmasec.prom" "$work/start.prom"

# From host 3, a certificate from another CA: refused before authentication, counted under its address.
client 3 --certs "$work/other" -c "send x; quit" >"$work/refused.out" 2>&1; echo "refused=$?"
# From host 2, a good client: counted under its identity.
client 2 --certs "$work/pki" -c "send hi; stats; quit" >"$work/good.out" 2>&1; echo "good=$?"
# No signal: the tick rewrites the file within about a second of the last change;
# wait (at most 15 s) until it shows the good client gone, then a second more.
settled() {
	grep -q '^rdmasec_server_clients 0$' "$1" && grep -q '^rdmasec_server_established_total 1$' "$1" &&
		grep -q '^rdmasec_server_refused_auth_total 1$' "$1"
}
for _ in $(seq 1 150); do settled "$work/rdmasec.prom" && break; sleep 0.1; done
sleep 1
cp "$work/rdmasec.prom" "$work/tick.prom"
# Nothing changes now: no rewrite; SIGUSR1 rewrites anyway.
t1=$(stat -c %Y "$work/rdmasec.prom"); sleep 2; t2=$(stat -c %Y "$work/rdmasec.prom")
kill -USR1 $spid
for _ in $(seq 1 50); do [ "$(stat -c %Y "$work/rdmasec.prom")" != "$t2" ] && break; sleep 0.1; done
t3=$(stat -c %Y "$work/rdmasec.prom")
echo "idle_rewrite=$([ "$t1" = "$t2" ] && echo no || echo yes) usr1_rewrite=$([ "$t2" = "$t3" ] && echo no || echo yes)"
cp "$work/rdmasec.prom" "$work/usr1.prom"
ls "$work" | grep -c 'rdmasec\.prom\.tmp' | sed 's/^/tmp_files=/'
kill -TERM $spid; wait $spid; echo "server=$?"

# An audit log on a full file system: every lost record is logged and counted, and the server goes on.
mkdir -p /tmp/full && mount -t tmpfs -o size=64k tmpfs /tmp/full && { head -c 1M /dev/zero >/tmp/full/fill; } 2>/dev/null
fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$server:7472" \
	--audit /tmp/full/audit.jsonl --metrics "$work/full.prom" 2>"$work/full.log" &
spid=$!
fabric wait-port 7472 || { cat "$work/full.log"; exit 1; }
fabric on 2 "$bin/client/rdmasec-client" --source "$(fabric ip 2)" -t 20000 --certs "$work/pki" -c "send hi; quit" \
	-p 7472 "$server" >"$work/full.out" 2>&1; echo "full_client=$?"
# The tick writes the lost records' count within about a second (at most 10 s here).
for _ in $(seq 1 100); do
	awk '$1 == "rdmasec_server_audit_errors_total" && $2 >= 1 {ok=1} END{exit !ok}' "$work/full.prom" 2>/dev/null && break
	sleep 0.1
done
kill -TERM $spid; wait $spid; echo "full_server=$?"
EOF

"$fabric" run --hosts 3 --timeout 300 --share "$build" -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
grep -q '^refused=0$' "$work/run.out" && { cat "$work/refused.out" "$work/server.log"; fail "the other CA's client was not refused"; }
expect_match "$work/run.out" '^good=0$' "the good client failed"
expect_match "$work/run.out" '^server=0$' "the server did not shut down cleanly"
expect_match "$work/run.out" '^tmp_files=0$' "a temporary metrics file was left behind"
expect_match "$work/run.out" '^idle_rewrite=no ' "the file was rewritten although nothing changed"
expect_match "$work/run.out" ' usr1_rewrite=yes$' "SIGUSR1 did not rewrite the file"
expect_match "$work/good.out" '^reply: hi$' "the good client got no echo"
expect_match "$work/good.out" '^stats: peer=rdmasec-server ' "no local stats line"
# The server counts this connection, and the refusal went to host 3's address, not to this identity.
expect_match "$work/good.out" \
	'^server-stats: peer=CN=client1,O=rdmasec-test mac_failures=0 seq_violations=0 qp_errors=0 refused_handshakes=0 connections=1$' \
	"no server-stats line for the client's identity"

# check FILE: a valid exposition with the refused and the good peer in it.
check() {
	local f=$1 bad
	[ -s "$f" ] || fail "$f is empty"
	[ "$(tail -c 1 "$f")" = "" ] || fail "$f does not end with a newline"
	bad=$(grep -v '^#' "$f" | grep -Ev '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [0-9.eE+-]+$') &&
		{ echo "$bad" >&2; fail "$f: lines that are not Prometheus samples"; }
	bad=$(grep '^#' "$f" | grep -Ev '^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .') &&
		{ echo "$bad" >&2; fail "$f: malformed comment lines"; }
	# Every sample's family was declared with # TYPE before it.
	awk '/^# TYPE /{t[$3]=1; next} /^#/{next} {n=$0; sub(/[{ ].*/, "", n); if (!(n in t)) {print; bad=1}} END{exit bad}' \
		"$f" || fail "$f: samples without a # TYPE line"
	awk '$1 == "rdmasec_server_refused_handshakes_total{peer=\"addr:10.77.0.3\"}" && $2 >= 1 {ok=1} END{exit !ok}' "$f" ||
		{ cat "$f" >&2; fail "$f: no refused handshake for addr:10.77.0.3"; }
	awk '$1 == "rdmasec_server_connections_total{peer=\"CN=client1,O=rdmasec-test\"}" && $2 >= 1 {ok=1} END{exit !ok}' "$f" ||
		{ cat "$f" >&2; fail "$f: no connection for CN=client1,O=rdmasec-test"; }
	expect_match "$f" '^rdmasec_server_refused_auth_total 1$' "$f: server-wide refused_auth is not 1"
	expect_match "$f" '^rdmasec_server_established_total 1$' "$f: server-wide established is not 1"
	expect_match "$f" '^rdmasec_server_mac_failures_total\{peer="CN=client1,O=rdmasec-test"\} 0$' \
		"$f: no MAC failure count for the good client"
}
check "$work/tick.prom"
check "$work/usr1.prom"
expect_match "$work/start.prom" '^rdmasec_server_accepted_total 0$' "no metrics file at start-up"
expect_match "$work/usr1.prom" '^rdmasec_server_clients 0$' "clients gauge is not 0 after both clients left"
# The full audit file system.
expect_match "$work/run.out" '^full_client=0$' "a client failed because the audit log could not be written"
expect_match "$work/run.out" '^full_server=0$' "the server with a full audit file system did not shut down cleanly"
expect_match "$work/full.log" 'level=error event=audit_failed records_lost=[1-9]' "no audit_failed event in the log"
expect_match "$work/full.log" 'event=counters .* audit_errors=[1-9]' "the counters do not show the lost records"
awk '$1 == "rdmasec_server_audit_errors_total" && $2 >= 1 {ok=1} END{exit !ok}' "$work/full.prom" ||
	{ cat "$work/full.prom" >&2; fail "the metrics file does not count lost audit records"; }
echo "--- metrics file:"
grep -v '^#' "$work/usr1.prom"
echo "metrics: ok"
