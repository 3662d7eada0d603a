# SPDX-License-Identifier: MIT
# Identity, revocation and rotation on real rxe, one 2-host boot,
# rdmasec-server with --crl (docs/operations.md, "Rotating"):
#  (a) a client whose certificate names it only in a URI subjectAltName (a
#      SPIFFE ID, empty subject) authenticates, and the server's log and
#      audit record name it by that URI;
#  (b) a client revoked (rdmasec-keygen revoke, SIGHUP) while the server runs
#      is refused at the handshake, the audit record saying why;
#  (d) two clients stream sealed messages; a SIGHUP with a broken server
#      certificate fails, is audited and keeps the old one; a SIGHUP with a
#      new certificate (30 days) rotates it: the expiry gauge drops, the audit
#      record names its serial; then one streaming
#      client is revoked and SIGHUP closes it within a second (audited,
#      counted) while the other's stream goes on and loses nothing;
#  (c) a client handshakes with the new certificate and streams with
#      --resume-grace; it is stopped and its TCP
#      connection cut, then it is revoked (SIGHUP): its TLS ticket no longer
#      resumes, the full handshake refuses the certificate, and it fails;
#  (e) authorization (--allow): the SPIFFE client of (a) is under an allowed
#      prefix; one outside it authenticates but is refused, audited with the
#      rules and counted (log, metrics file).
. "$(dirname "$0")/common.bash"

bin=$build/tools
keygen=$bin/keygen/rdmasec-keygen
spiffe=spiffe://example.org/ns/storage/sa/backup
"$keygen" --clients 3 "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$keygen" issue --san "URI:$spiffe" "$work/pki" spiffe >/dev/null || fail "rdmasec-keygen issue failed"
outsider=spiffe://example.org/ns/compute/sa/job
"$keygen" issue --san "URI:$outsider" "$work/pki" outsider >/dev/null || fail "rdmasec-keygen issue failed"
"$keygen" crl "$work/pki" >/dev/null || fail "rdmasec-keygen crl failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 work=$2
s=$(fabric ip 1) c=$(fabric ip 2)
# wait_for FILE REGEX: up to 60 s (the fabric shares two cores with other guests).
wait_for() { for _ in $(seq 1 600); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
client() { # NAME ARGS...: NAME.pem/NAME.key of the test PKI
	local name=$1
	shift
	fabric on 2 "$bin/client/rdmasec-client" --ca "$work/pki/ca.pem" --cert "$work/pki/$name.pem" \
		--key "$work/pki/$name.key" --source "$c" -t 20000 "$@" "$s"
}
fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --crl "$work/pki/crl.pem" --listen "$s:7471" \
	--resume-grace 4000 --handshake-timeout 30000 --audit "$work/audit.jsonl" --metrics "$work/metrics.prom" \
	--allow 'spiffe://example.org/ns/storage/*' --allow 'CN=client1,O=rdmasec-test' \
	--allow 'CN=client2,O=rdmasec-test' --allow 'CN=client3,O=rdmasec-test' 2>"$work/server.log" &
spid=$!
fabric wait-port 7471 20 || { cat "$work/server.log"; exit 1; }
# reload: SIGHUP, then up to 30 s for the server to say how it went.
reload() {
	local n
	n=$(grep -Ec 'event=(reloaded|reload_failed)' "$work/server.log")
	kill -HUP $spid
	for _ in $(seq 1 300); do
		[ "$(grep -Ec 'event=(reloaded|reload_failed)' "$work/server.log")" -gt "$n" ] && return 0
		sleep 0.1
	done
	echo "no reload logged"
}
# expiry_days [NOT]: the gauge, once it differs from NOT (up to 15 s).
expiry_days() {
	local v
	for _ in $(seq 1 150); do
		v=$(awk '$1 == "rdmasec_server_cert_expiry_days" { print $2 }' "$work/metrics.prom" 2>/dev/null)
		[ -n "$v" ] && [ "$v" != "${1:-}" ] && break
		sleep 0.1
	done
	echo "$v"
}
stream() { # NAME: sealed messages 20 ms apart until $work/stop-NAME exists; how many in sent-NAME
	local i=0
	while [ ! -e "$work/stop-$1" ] && [ $i -lt 5000 ]; do
		i=$((i + 1))
		echo "send msg-$1-$i"
		sleep 0.02
	done
	echo $i >"$work/sent-$1"
	echo quit
}

# (a)
client spiffe -c "send hello; stats; quit" >"$work/a.out" 2>&1; echo "a=$?"
# (b)
client client2 -c "send before; quit" >"$work/b1.out" 2>&1; echo "b1=$?"
"$bin/keygen/rdmasec-keygen" revoke "$work/pki" client2 >/dev/null || echo "revoke client2 failed"
reload
client client2 -c "send after; quit" >"$work/b2.out" 2>&1; echo "b2=$?"
# (e)
client outsider -c "send hello; quit" >"$work/e.out" 2>&1; echo "e=$?"
wait_for "$work/metrics.prom" '^rdmasec_server_refused_authz_total 1$' || echo "refusal not in the metrics (e)"
# (d)
stream s | client spiffe >"$work/d-s.out" 2>&1 &
dsp=$!
wait_for "$work/d-s.out" '^reply: msg-s-10$' || echo "no reply 10 (d, spiffe)"
stream t | client client3 >"$work/d-t.out" 2>&1 &
dtp=$!
wait_for "$work/d-t.out" '^reply: msg-t-10$' || echo "no reply 10 (d, client3)"
db=$(expiry_days)
echo "days_before=$db"
cp "$work/pki/server.pem" "$work/server.pem.good"
echo garbage >"$work/pki/server.pem.new" && mv "$work/pki/server.pem.new" "$work/pki/server.pem"
reload
echo "days_failed=$(expiry_days)"
mkdir "$work/pki2" && cp "$work/pki/ca.pem" "$work/pki/ca.key" "$work/pki2/"
"$bin/keygen/rdmasec-keygen" --reuse-ca --days 30 "$work/pki2" >/dev/null || echo "keygen --reuse-ca failed"
mv "$work/pki2/server.key" "$work/pki/server.key" && mv "$work/pki2/server.pem" "$work/pki/server.pem"
reload
echo "days_after=$(expiry_days "$db")"
"$bin/keygen/rdmasec-keygen" revoke "$work/pki" client3 >/dev/null || echo "revoke client3 failed"
reload
wait_for "$work/server.log" 'event=peer_revoked .*CN=client3' || echo "no peer_revoked (d)"
touch "$work/stop-t"
wait $dtp; echo "dt=$?"
touch "$work/stop-s"
wait $dsp; echo "ds=$?"
# (c)
{
	for i in $(seq 1 40); do echo "send msg-$i"; sleep 0.05; done
	echo quit
} | client client --resume-grace 4000 >"$work/c.out" 2>&1 &
cp=$!
wait_for "$work/c.out" '^reply: msg-10$' || echo "no reply 10 (c)"
cpid=$(pgrep -f "rdmasec-client .*/pki/client\.pem") || echo "no client pid (c)"
kill -STOP $cpid
fabric on 2 ss -K dst "$s" dport = ":7471" >/dev/null 2>&1 || echo "ss -K failed"
wait_for "$work/audit.jsonl" '"event":"resume",.*"peer":"CN=client1,.*"result":"lost"' || echo "no session lost (c)"
"$bin/keygen/rdmasec-keygen" revoke "$work/pki" client >/dev/null || echo "revoke client failed"
reload
kill -CONT $cpid
wait $cp; echo "c=$?"
kill -TERM $spid; wait $spid; echo "server=$?"
GUEST

"$fabric" run --hosts 2 --timeout 420 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
for f in run.out a.out b2.out d-t.out c.out e.out server.log audit.jsonl; do
	echo "--- $f"
	grep -v '^reply: msg-' "$work/$f"
done

# (a) Authenticated under its URI, in the server's log, its audit log and the client's own stats.
expect_match "$work/run.out" '^a=0$' "(a) the SPIFFE client failed"
expect_match "$work/server.log" "event=established conn=[0-9]+ peer=\"?$spiffe\"? " "(a) the server did not log the client's URI"
python3 - "$work/audit.jsonl" "$spiffe" <<'PY' || fail "(a) the audit record does not name the client by its URI"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert any(r["event"] == "accept" and r["peer"] == sys.argv[2] for r in recs)
PY
expect_match "$work/a.out" '^stats: peer=rdmasec-server ' "(a) the client does not see the server as rdmasec-server"
# (b) Admitted before its revocation, refused at the handshake after, and audited with the reason.
expect_match "$work/run.out" '^b1=0$' "(b) client2 failed before it was revoked"
grep -q '^b2=0$' "$work/run.out" && fail "(b) the revoked client2 was admitted"
expect_match "$work/audit.jsonl" '"event":"auth_failure",.*"reason":"TLS handshake failed: certificate: certificate revoked"' \
	"(b) no audit record of the revoked certificate"
# (d) A failed reload keeps the old certificate; a good one rotates it with live streams.
grep -q '^no \|failed$' "$work/run.out" && fail "(d) a step of the guest script failed"
before=$(sed -n 's/^days_before=//p' "$work/run.out")
[ "$(sed -n 's/^days_failed=//p' "$work/run.out")" = "$before" ] && [ "${before:-0}" -ge 364 ] ||
	fail "(d) the expiry gauge was ${before:-missing} days, or changed after a failed reload"
expect_match "$work/server.log" 'event=reload_failed what=credentials reason=.*cannot load certificate' \
	"(d) the failed reload was not logged"
expect_match "$work/audit.jsonl" '"event":"reload",.*"result":"failed","reason":"cannot load certificate' \
	"(d) the failed reload was not audited"
after=$(sed -n 's/^days_after=//p' "$work/run.out")
[ "$after" = 29 ] || [ "$after" = 30 ] || fail "(d) the expiry gauge says $after days after the rotation, not 29..30"
serial=$(openssl x509 -in "$work/pki/server.pem" -noout -serial | sed 's/^serial=//')
expect_match "$work/audit.jsonl" "\"event\":\"reload\",.*\"result\":\"ok\",\"reason\":\"certificate identity=rdmasec-server serial=$serial " \
	"(d) no audit record of the new certificate (serial $serial)"
expect_match "$work/run.out" '^ds=0$' "(d) the SPIFFE client's stream failed across the rotation"
sent=$(cat "$work/sent-s")
[ "${sent:-0}" -ge 20 ] || fail "(d) the SPIFFE client sent only ${sent:-no} messages"
for i in $(seq 1 "$sent"); do echo "reply: msg-s-$i"; done >"$work/d-s.want"
grep '^reply: msg-s-' "$work/d-s.out" | cmp -s - "$work/d-s.want" || fail "(d) the stream lost or reordered messages"
grep -q '^dt=0$' "$work/run.out" && fail "(d) the revoked client3 streamed to the end"
python3 - "$work/audit.jsonl" <<'PY' || fail "(d) client3 was not closed and audited within a second of its revocation"
import json, sys
from datetime import datetime
def ms(r): return datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000
recs = [json.loads(l) for l in open(sys.argv[1])]
reloads = [r for r in recs if r["event"] == "reload" and r["result"] == "ok"]
closed = [r for r in recs if r["event"] == "peer_revoked" and r["peer"] == "CN=client3,O=rdmasec-test"]
assert len(reloads) >= 3 and len(closed) == 1, (len(reloads), len(closed))
assert closed[0]["reason"] == "certificate revoked"
assert 0 <= ms(closed[0]) - ms(reloads[2]) <= 1000, ms(closed[0]) - ms(reloads[2])
PY
expect_match "$work/metrics.prom" '^rdmasec_server_closed_revoked_total 1$' "(d) the revoked session was not counted"
expect_match "$work/metrics.prom" '^rdmasec_server_reload_failures_total 1$' "(d) the failed reload was not counted"
# (c) The resumption ticket died with the certificate.
grep -q '^c=0$' "$work/run.out" && fail "(c) the revoked client resumed and finished"
expect_match "$work/c.out" '^reply: msg-10$' "(c) the client never streamed (a handshake with the new certificate)"
expect_match "$work/audit.jsonl" \
	'"event":"auth_failure",.*"reason":"TLS handshake failed: certificate: certificate revoked \(resumption ticket declined: its certificate is revoked\)"' \
	"(c) no audit record of a resumption refused for revocation"
# (e) Authenticated but outside the allowed prefix: refused with a reason, audited with the rules, counted.
grep -q '^e=0$' "$work/run.out" && fail "(e) the client outside the allowed prefix was admitted"
expect_match "$work/e.out" 'refused: identity not authorized' "(e) the client was not told why"
python3 - "$work/audit.jsonl" "$outsider" <<'PY' || fail "(e) no audit record of the refusal naming identity, source and rules"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert any(r["event"] == "refuse" and r["peer"] == sys.argv[2] and r.get("peer_addr")
           and "4 allow rules: spiffe://example.org/ns/storage/* " in r["reason"] for r in recs), recs
PY
expect_match "$work/metrics.prom" '^rdmasec_server_refused_authz_total 1$' "(e) rdmasec_server_refused_authz_total is not 1"
expect_match "$work/server.log" "event=refused conn=[0-9]+ peer=\"?$outsider\"? .*code=\"identity not authorized\"" \
	"(e) the server did not log the refusal"
expect_match "$work/server.log" 'event=counters .* refused_authz=1$' "(e) the counters do not show the refusal"
echo "identity: ok"
