# SPDX-License-Identifier: MIT
# Identity and revocation on real rxe, one 2-host boot, rdmasec-server with
# --crl (docs/operations.md):
#  (a) a client whose certificate names it only in a URI subjectAltName (a
#      SPIFFE ID, empty subject) authenticates, and the server's log and
#      audit record name it by that URI;
#  (b) a client revoked (rdmasec-keygen revoke) while the server runs is
#      refused at the handshake, the audit record saying why;
#  (c) a client streaming with --resume-grace is revoked, then its TCP
#      connection is cut: its TLS ticket no longer resumes, the full handshake
#      refuses the certificate, and the client fails;
#  (d) authorization (--allow): the SPIFFE client of (a) is under an allowed
#      prefix; one outside it authenticates but is refused, audited with the
#      rules and counted (log, metrics file).
. "$(dirname "$0")/common.bash"

bin=$build/tools
keygen=$bin/keygen/rdmasec-keygen
spiffe=spiffe://example.org/ns/storage/sa/backup
"$keygen" --clients 2 "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$keygen" issue --san "URI:$spiffe" "$work/pki" spiffe >/dev/null || fail "rdmasec-keygen issue failed"
outsider=spiffe://example.org/ns/compute/sa/job
"$keygen" issue --san "URI:$outsider" "$work/pki" outsider >/dev/null || fail "rdmasec-keygen issue failed"
"$keygen" crl "$work/pki" >/dev/null || fail "rdmasec-keygen crl failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 work=$2
s=$(fabric ip 1) c=$(fabric ip 2)
# wait_for FILE REGEX: up to 30 s.
wait_for() { for _ in $(seq 1 300); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
client() { # NAME ARGS...: NAME.pem/NAME.key of the test PKI
	local name=$1
	shift
	fabric on 2 "$bin/client/rdmasec-client" --ca "$work/pki/ca.pem" --cert "$work/pki/$name.pem" \
		--key "$work/pki/$name.key" --source "$c" -t 20000 "$@" "$s"
}
fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --crl "$work/pki/crl.pem" --listen "$s:7471" \
	--resume-grace 4000 --audit "$work/audit.jsonl" --metrics "$work/metrics.prom" \
	--allow 'spiffe://example.org/ns/storage/*' --allow 'CN=client1,O=rdmasec-test' \
	--allow 'CN=client2,O=rdmasec-test' 2>"$work/server.log" &
spid=$!
fabric wait-port 7471 20 || { cat "$work/server.log"; exit 1; }

# (a)
client spiffe -c "send hello; stats; quit" >"$work/a.out" 2>&1; echo "a=$?"
# (d)
client outsider -c "send hello; quit" >"$work/d.out" 2>&1; echo "d=$?"
wait_for "$work/metrics.prom" '^rdmasec_server_refused_authz_total 1$' || echo "refusal not in the metrics (d)"
# (b)
client client2 -c "send before; quit" >"$work/b1.out" 2>&1; echo "b1=$?"
"$bin/keygen/rdmasec-keygen" revoke "$work/pki" client2 >/dev/null || echo "revoke client2 failed"
client client2 -c "send after; quit" >"$work/b2.out" 2>&1; echo "b2=$?"
# (c)
{
	for i in $(seq 1 40); do echo "send msg-$i"; sleep 0.05; done
	echo quit
} | client client --resume-grace 4000 >"$work/c.out" 2>&1 &
cp=$!
wait_for "$work/c.out" '^reply: msg-10$' || echo "no reply 10 (c)"
"$bin/keygen/rdmasec-keygen" revoke "$work/pki" client >/dev/null || echo "revoke client failed"
fabric on 2 ss -K dst "$s" dport = ":7471" >/dev/null 2>&1 || echo "ss -K failed"
wait $cp; echo "c=$?"
kill -TERM $spid; wait $spid; echo "server=$?"
GUEST

"$fabric" run --hosts 2 --timeout 300 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
for f in run.out a.out b2.out c.out d.out server.log audit.jsonl; do
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
# (c) The resumption ticket died with the certificate.
grep -q '^c=0$' "$work/run.out" && fail "(c) the revoked client resumed and finished"
expect_match "$work/c.out" '^reply: msg-10$' "(c) the client never streamed"
expect_match "$work/audit.jsonl" \
	'"event":"auth_failure",.*"reason":"TLS handshake failed: certificate: certificate revoked \(resumption ticket declined: its certificate is revoked\)"' \
	"(c) no audit record of a resumption refused for revocation"
# (d) Authenticated but outside the allowed prefix: refused with a reason, audited with the rules, counted.
grep -q '^d=0$' "$work/run.out" && fail "(d) the client outside the allowed prefix was admitted"
expect_match "$work/d.out" 'refused: identity not authorized' "(d) the client was not told why"
python3 - "$work/audit.jsonl" "$outsider" <<'PY' || fail "(d) no audit record of the refusal naming identity, source and rules"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert any(r["event"] == "refuse" and r["peer"] == sys.argv[2] and r.get("peer_addr")
           and "3 allow rules: spiffe://example.org/ns/storage/* " in r["reason"] for r in recs), recs
PY
expect_match "$work/metrics.prom" '^rdmasec_server_refused_authz_total 1$' "(d) rdmasec_server_refused_authz_total is not 1"
expect_match "$work/server.log" "event=refused conn=[0-9]+ peer=\"?$outsider\"? .*code=\"identity not authorized\"" \
	"(d) the server did not log the refusal"
expect_match "$work/server.log" 'event=counters .* refused_authz=1$' "(d) the counters do not show the refusal"
echo "identity: ok"
