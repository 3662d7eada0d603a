# SPDX-License-Identifier: MIT
# Authentication holds before any RDMA resource is spent: a client with a
# certificate from another CA, an expired one, or none at all is refused, and
# the server's log, its counters and the kernel's own QP table show that no
# queue pair was created for it. Limits (max clients, per identity) likewise.
# PSK mode works with the right key and fails with a wrong one.
. "$(dirname "$0")/common.bash"

bin=$build/tools
keygen=$bin/keygen/rdmasec-keygen
"$keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$keygen" --ca-name other "$work/other" >/dev/null || fail "rdmasec-keygen (other CA) failed"
# The expired client must come from the server's own CA, or the test would only repeat "other CA".
mkdir -m 700 "$work/expired" && cp "$work/pki/ca.pem" "$work/pki/ca.key" "$work/expired/"
"$keygen" --reuse-ca --expired-client "$work/expired" >/dev/null || fail "cannot issue an expired client from the server's CA"
umask 077
"$keygen" --psk "$work/psk" >/dev/null || fail "rdmasec-keygen --psk failed"
"$keygen" --psk "$work/wrong.psk" >/dev/null || fail "rdmasec-keygen --psk failed"

cat >"$work/guest.sh" <<'EOF'
set -u
bin=$1 work=$2
server=$(fabric ip 1)
client() { fabric on 2 "$bin/client/rdmasec-client" --source "$(fabric ip 2)" -t 20000 "$@" "$server"; }
qps_of() { rdma resource show qp 2>/dev/null | grep -c "pid $1 " ; }

fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$server:7471" \
	--max-per-identity 1 --handshake-timeout 3000 --audit "$work/audit.jsonl" 2>"$work/server.log" &
spid=$!
fabric wait-port 7471 || { cat "$work/server.log"; exit 1; }

client --certs "$work/other" --audit "$work/client-audit.jsonl" -c "send x; quit" >"$work/other.out" 2>&1; echo "other=$?"
client --ca "$work/pki/ca.pem" --cert "$work/expired/client.pem" --key "$work/expired/client.key" \
	-c "send x; quit" >"$work/expired.out" 2>&1; echo "expired=$?"
# No client certificate at all: a plain TLS 1.3 client.
timeout 20 openssl s_client -connect "$server:7471" -tls1_3 -CAfile "$work/pki/ca.pem" \
	</dev/null >"$work/nocert.out" 2>&1; echo "nocert=$?"
# A peer that connects and never speaks TLS: the handshake deadline frees it.
# (--handshake-timeout 3000: wait for its handshake_failed line, at most 15 s.)
exec 3<>"/dev/tcp/$server/7471"
for _ in $(seq 1 150); do grep -q 'event=handshake_failed' "$work/server.log" && break; sleep 0.1; done
exec 3<&-
echo "qps_after_refusals=$(qps_of $spid)"

# One connection per identity: a second concurrent one is refused after
# authentication but before any QP.
# The held client's standard input stays open until $work/release exists (at most 30 s).
fabric on 2 bash -c "for _ in \$(seq 1 300); do [ -e $work/release ] && break; sleep 0.1; done |
	$bin/client/rdmasec-client --certs $work/pki --source $(fabric ip 2) $server" >"$work/hold.out" 2>&1 &
hold=$!
# Its QP is the server's one (at most 15 s).
for _ in $(seq 1 150); do [ "$(qps_of $spid)" -ge 1 ] && break; sleep 0.1; done
echo "qps_while_holding=$(qps_of $spid)"
client --certs "$work/pki" -c "send y; quit" >"$work/second.out" 2>&1; echo "second=$?"
touch "$work/release"
wait $hold
# Commands from standard input, as a user at a prompt would type them.
printf 'send z\nstats\nquit\n' | client --certs "$work/pki" --audit "$work/client-audit.jsonl" >"$work/good.out" 2>&1
echo "good=$?"
kill -USR1 $spid; sleep 0.5
kill -TERM $spid; wait $spid; echo "server=$?"

# PSK mode.
fabric on 1 "$bin/server/rdmasec-server" --psk-file "$work/psk" --psk-identity node-a \
	--listen "$server:7472" 2>"$work/psk-server.log" &
spid=$!
fabric wait-port 7472 || exit 1
client -p 7472 --psk-file "$work/psk" --psk-identity node-a -c "send psk-ok; quit" >"$work/psk.out" 2>&1
echo "psk=$?"
client -p 7472 --psk-file "$work/wrong.psk" --psk-identity node-a -c "send x; quit" >"$work/wrongpsk.out" 2>&1
echo "wrongpsk=$?"
client -p 7472 --psk-file "$work/psk" --psk-identity node-b -c "send x; quit" >"$work/wrongid.out" 2>&1
echo "wrongid=$?"
kill -TERM $spid; wait $spid; echo "pskserver=$?"
EOF

"$fabric" run --hosts 2 --timeout 300 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
for who in other expired nocert second wrongpsk wrongid; do
	grep -q "^$who=0$" "$work/run.out" && { cat "$work/$who.out"; cat "$work/server.log"; fail "$who was not refused"; }
done
# TLS 1.3: the server judges the client's certificate after the client's handshake ended; its alert is the reason.
expect_match "$work/expired.out" 'control channel: TLS failure: .*alert certificate expired' \
	"the expired client was not told why the server refused it"
expect_match "$work/run.out" '^good=0$' "a valid client failed after the refusals"
expect_match "$work/good.out" '^reply: z$' "the valid client got no echo"
expect_match "$work/good.out" '^stats: peer=rdmasec-server .*mac_failures=0 ' "no stats from standard input"
expect_match "$work/run.out" '^qps_after_refusals=0$' "the server holds QPs after refusing every client"
expect_match "$work/run.out" '^qps_while_holding=1$' "the held connection should own exactly one QP"
expect_match "$work/run.out" '^server=0$' "the server did not shut down cleanly"
expect_match "$work/server.log" 'event=refused .*qp_created=no' "no refusal in the server log"
# other CA, expired, no certificate: three authentication refusals; one per-identity refusal; the silent peer times out.
expect_match "$work/server.log" 'event=counters .*established=2 .*refused_auth=3 refused_identity=1 handshake_failed=1 ' \
	"the server's counters do not show 3 auth refusals, 1 identity refusal, 1 timeout and 2 connections"
expect_match "$work/run.out" '^psk=0$' "PSK mode failed with the right key"
expect_match "$work/psk.out" '^reply: psk-ok$' "no echo in PSK mode"
expect_match "$work/run.out" '^pskserver=0$' "the PSK server did not shut down cleanly"
# The audit logs (valid UTF-8 JSON, one object a line): the server's has one record per
# refusal with who and why, the silent peer's timeout, and the accepted connections and
# their ends; the client's has its own refusal of a server from another CA, then the good
# connection with the server's identity.
python3 - "$work/audit.jsonl" "$work/client-audit.jsonl" <<'PY' || fail "audit log check failed"
import json, re, sys
def load(path):
    with open(path, encoding="utf-8", errors="strict") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", "last line not terminated"
    recs = [json.loads(l) for l in lines[:-1]]
    for r in recs:
        assert isinstance(r, dict) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]), r
    return recs
recs, crecs = load(sys.argv[1]), load(sys.argv[2])
by = lambda ev, rs=recs: [r for r in rs if r["event"] == ev]
auth = [r for r in by("auth_failure") if r["peer"] is None and r["peer_addr"].startswith("10.77.0.")]
refuse = [r for r in by("refuse") if r["peer"] == "CN=client1,O=rdmasec-test"]
accept = [r for r in by("accept") if r["peer"] == "CN=client1,O=rdmasec-test" and r.get("local_qpn")]
close = [r for r in by("close") if r["peer"] == "CN=client1,O=rdmasec-test"]
problems = []
if len(auth) != 4: problems.append("%d auth_failure records, want 3 refusals and a timeout" % len(auth))
if sum(r.get("result") == "timed out" for r in auth) != 1: problems.append("no record of the silent peer's timeout")
if len(refuse) != 1: problems.append("%d refuse records, want 1" % len(refuse))
if len(accept) != 2: problems.append("%d accept records, want 2" % len(accept))
if sorted(r["conn"] for r in close) != sorted(r["conn"] for r in accept): problems.append("accepted connections without a close")
if any(r.get("local_qpn") for r in auth + refuse): problems.append("a refused peer had a QP")
if any(r["role"] != "server" for r in recs): problems.append("a server record without role server")
cauth = [r for r in by("auth_failure", crecs) if r["role"] == "client" and r["peer"] is None and r["peer_addr"].endswith(":7471")]
caccept = [r for r in by("accept", crecs) if r["peer"] == "rdmasec-server" and r.get("remote_qpn")]
if len(cauth) != 1: problems.append("the client did not record refusing the other CA's server")
if len(caccept) != 1: problems.append("the client did not record its connection")
if problems:
    print(problems, file=sys.stderr)
    for r in recs + crecs: print(json.dumps(r), file=sys.stderr)
    sys.exit(1)
print("audit: server %d records, client %d; refusals, timeout and connections recorded" % (len(recs), len(crecs)))
for r in [next(r for r in auth if r.get("result") == "timed out"), refuse[0], accept[0], close[0], cauth[0]]:
    print("audit sample:", json.dumps(r))
PY
echo "secure_refuse: ok"
