# SPDX-License-Identifier: MIT
# A3 (mem-access) on real rxe, one 3-host boot.
#
# Naive: rdmasec-naive-victim serves several clients from one PD, each with
# its own remote-read/write MR. The legitimate client on host 2 stores a
# secret in its buffer at the server (RDMA WRITE). The attacker on host 3 is
# just another client: from two connections of its own it measures the rkey
# index step and address stride, guesses the legitimate client's rkey (256
# key bytes, one fresh connection per guess) and address, reads the secret
# and writes bytes the victim prints.
#
# rdmasec: the same attack from a second authenticated client (client2)
# reaches nothing: grants are type-2 windows bound to the grantee's QP in a
# per-connection PD, at random addresses. Each refused guess breaks only the
# attacker's own connection; the server logs and audits it; the legitimate
# client's session, started before the attack, still reads its secret back.
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
vic=$bin/attack/rdmasec-naive-victim
[ -x "$atk" ] && [ -x "$vic" ] || fail "build rdmasec-attack and rdmasec-naive-victim first"
"$bin/keygen/rdmasec-keygen" --clients 2 "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

# The scope guard, without the fabric.
"$atk" mem-access --dst 192.0.2.1 --json >"$work/scope.out" 2>"$work/scope.err"
[ $? -eq 2 ] && [ ! -s "$work/scope.out" ] && grep -q 'refusing to target 192\.0\.2\.1' "$work/scope.err" ||
	fail "mem-access did not refuse a target outside the fabric"

cat >"$work/guest.sh" <<'EOF_GUEST'
set -u
bin=$1 work=$2
atk=$bin/attack/rdmasec-attack vic=$bin/attack/rdmasec-naive-victim
ip1=$(fabric ip 1) ip2=$(fabric ip 2) ip3=$(fabric ip 3)
g1=$(fabric gid-index 1) g2=$(fabric gid-index 2) g3=$(fabric gid-index 3)
secret=TOP-SECRET-of-client-1:hunter2

# --- naive victim ---
fabric on 1 "$vic" server -d rxe1 -g "$g1" --clients 48 -t 30 >"$work/naive-server.log" 2>&1 &
vs=$!
fabric wait-port 18516 15 || { echo "naive server not listening"; exit 1; }
fabric on 2 "$vic" client -d rxe2 -g "$g2" -l "$ip2" -w "$secret" -t 26 "$ip1" >"$work/naive-client.log" 2>&1 &
vc=$!
for _ in $(seq 1 100); do grep -q "buffer changed .*$secret" "$work/naive-server.log" && break; sleep 0.1; done
fabric on 3 "$atk" mem-access --dst "$ip1" --source "$ip3" -d rxe3 -g "$g3" --read-len 64 \
	--write WRITTEN-BY-MEMACC --write-offset 40 --max-time 30 --json >"$work/naive-attack.json" 2>"$work/naive-attack.err"
echo "naive-attack=$?"
sleep 0.5 # the victim prints buffer changes every 0.1 s
kill -TERM $vs $vc 2>/dev/null
wait $vs $vc

# --- rdmasec ---
fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$ip1:7471" --handshake-timeout 60000 \
	--audit "$work/audit.jsonl" -v 2>"$work/rsec-server.log" &
rs=$!
fabric wait-port 7471 30 || { echo "rdmasec server not listening"; exit 1; }
{
	echo "write $secret"
	for _ in $(seq 1 400); do [ -e "$work/attack-done" ] && break; sleep 0.1; done
	echo "read"
	echo "send after the attack"
	echo quit
} | fabric on 2 "$bin/client/rdmasec-client" --certs "$work/pki" --source "$ip2" -t 60000 "$ip1" \
	>"$work/rsec-client.log" 2>&1 &
rc=$!
for _ in $(seq 1 300); do grep -q '^write:' "$work/rsec-client.log" && break; sleep 0.1; done
fabric on 3 "$atk" mem-access --victim rdmasec --dst "$ip1" --source "$ip3" --certs "$work/pki" \
	--identity client2 --max-time 14 --json >"$work/rsec-attack.json" 2>"$work/rsec-attack.err"
echo "rsec-attack=$?"
touch "$work/attack-done"
wait $rc
echo "rsec-client=$?"
kill -TERM $rs
wait $rs
echo "rsec-server=$?"
EOF_GUEST

start=$SECONDS
"$fabric" run --hosts 3 --mem 2048 --timeout 240 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "the fabric run failed"; }
echo "fabric run: $((SECONDS - start)) s"
cat "$work/run.out"
for f in naive-server.log naive-client.log naive-attack.json naive-attack.err rsec-client.log rsec-attack.json \
	rsec-attack.err; do
	echo "--- $f"
	cat "$work/$f"
done

# Naive: the secret was read and the victim printed the attacker's bytes next to it.
expect_match "$work/run.out" '^naive-attack=0$' "mem-access found nothing at the naive victim"
python3 - "$work/naive-attack.json" <<'PY' || fail "the naive attack's JSON is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["found"] and r["hits"] >= 1 and r["read_text"].startswith("TOP-SECRET-of-client-1:hunter2"), r
assert r["wrote"] is True and r["tries"] <= 3 * 256 + 16 and r["index_step"] == "+1", r
print("naive: %d guesses in %.2f s (%.1f/s), hit after %.2f s, rkey %s addr %s" %
      (r["tries"], r["sweep_s"], r["rate"], r["hit_s"], r["rkey"], r["addr"]))
PY
expect_match "$work/naive-server.log" \
	'^client 1 buffer changed \([0-9]+ bytes\): TOP-SECRET-of-client-1:hunter2\.+WRITTEN-BY-MEMACC$' \
	"the victim did not print the attacker's bytes in client 1's buffer"
expect_match "$work/naive-server.log" '^client [0-9]+ dropped: ' "the victim did not drop the attacker's broken connections"

# rdmasec: nothing reached, the attacker's own connections failed, the victim's session is intact.
python3 - "$work/rsec-attack.json" <<'PY' || fail "the rdmasec attack's JSON is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["found"] and r["hits"] == 0 and r["tries"] >= 1 and r["misses"] >= 1, r
assert "queue pair in error state" in r["evidence"], r
print("rdmasec: %d guesses in %.2f s (%.2f/s), none reached; own rkeys %s %s (stride %s)" %
      (r["tries"], r["sweep_s"], r["rate"], r["own_rkey"], r["own_rkey2"], r["stride"]))
PY
expect_match "$work/run.out" '^rsec-attack=1$' "mem-access did not report failure against rdmasec"
expect_match "$work/rsec-client.log" "^read: TOP-SECRET-of-client-1:hunter2" "the victim's data did not survive"
expect_match "$work/rsec-client.log" '^reply: after the attack$' "the victim's session broke"
expect_match "$work/run.out" '^rsec-client=0$' "the victim's client failed"
expect_match "$work/rsec-server.log" 'event=closed .*client2.*qp_errors=[1-9]' "the server did not log client2's QP errors"
python3 - "$work/audit.jsonl" <<'PY' || fail "no audit record of the attacker's QP errors"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
errs = [r for r in recs if r["event"] == "qp_error" and "client2" in (r.get("peer") or "")]
assert errs, recs
print("audit:", json.dumps(errs[0]))
PY
echo "attack_mem_access: ok"
