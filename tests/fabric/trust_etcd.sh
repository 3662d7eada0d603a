# SPDX-License-Identifier: MIT
# Cluster trust through etcd on real rxe, one 3-host boot (docs/operations.md,
# "Cluster trust (etcd)"): a three-member etcd cluster (one member on each
# host) holds the CA, the CRL and the allow rules under /rdmasec/trust; two
# rdmasec-servers (hosts 1 and 2) and an rdmasec-blkd (host 2) follow it
# with --trust-etcd; clients on host 3 stream to both servers under two
# identities (client1, client2), client3 to server 1, and client2 writes to
# the blkd export.
#  (a) revoking client2 in etcd (a new CRL) closes its sessions on both
#      servers and its rdmasec-blk session on the blkd within a few seconds
#      (logged, audited), and dropping client3 from etcd's allow rules closes
#      its session ("no longer allowed"), while client1's streams go on and
#      lose nothing and client1 still opens the export;
#  (b) a malformed entry put at run time is refused by both servers and the
#      blkd (logged, audited), which keep their last good copy;
#  (c) with every etcd member stopped, both servers keep serving from that
#      copy: client1 handshakes anew, client2 and client3 are still refused; a server
#      restarted while etcd is down starts from its copy on disk.
. "$(dirname "$0")/common.bash"

bin=$build/tools
keygen=$bin/keygen/rdmasec-keygen
[ -x "$bin/blk/blkd/rdmasec-blkd" ] && [ -x "$bin/blk/cli/rdmasec-blk" ] || fail "build rdmasec-blkd and rdmasec-blk first"
command -v etcd >/dev/null && command -v etcdctl >/dev/null || fail "etcd and etcdctl are needed (scripts/install-deps)"
"$keygen" --clients 3 "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$keygen" crl "$work/pki" >/dev/null || fail "rdmasec-keygen crl failed"
# rdmasec-blk takes DIR/client.pem: client2's, under that name.
mkdir -p "$work/c2" && cp -p "$work/pki/ca.pem" "$work/c2/" && cp -p "$work/pki/client2.pem" "$work/c2/client.pem" &&
	cp -p "$work/pki/client2.key" "$work/c2/client.key" || fail "cannot make client2's certificate directory"

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 work=$2
export ETCDCTL_API=3
members=$(fabric ip 1):2379,$(fabric ip 2):2379,$(fabric ip 3):2379
prefix=/rdmasec/trust
etcdctl() { command etcdctl --endpoints="$members" --command-timeout=10s "$@"; }
# wait_for FILE REGEX [TENTHS]: up to 60 s by default (the fabric shares two cores with other guests).
wait_for() { for _ in $(seq 1 "${3:-600}"); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# Three members, slow timers: the guest is emulated and shares its cores.
cluster=
for i in 1 2 3; do cluster=$cluster${cluster:+,}e$i=http://$(fabric ip $i):2380; done
epids=()
for i in 1 2 3; do
	ip=$(fabric ip $i)
	fabric on $i etcd --name e$i --data-dir /tmp/etcd-$i --listen-client-urls http://$ip:2379 \
		--advertise-client-urls http://$ip:2379 --listen-peer-urls http://$ip:2380 \
		--initial-advertise-peer-urls http://$ip:2380 --initial-cluster "$cluster" \
		--initial-cluster-state new --initial-cluster-token rdmasec-test \
		--heartbeat-interval 250 --election-timeout 2500 >"$work/etcd-$i.log" 2>&1 &
	epids+=($!)
done
for _ in $(seq 1 120); do etcdctl endpoint health >/dev/null 2>&1 && break; sleep 0.5; done
etcdctl endpoint health >"$work/health.out" 2>&1 || { cat "$work/health.out"; echo "etcd not healthy"; }
etcdctl put $prefix/ca <"$work/pki/ca.pem" >/dev/null || echo "put ca failed"
etcdctl put $prefix/crl <"$work/pki/crl.pem" >/dev/null || echo "put crl failed"
printf '# the test clients\nCN=client1,O=rdmasec-test\nCN=client2,O=rdmasec-test\nCN=client3,O=rdmasec-test\n' |
	etcdctl put $prefix/allow >/dev/null || echo "put allow failed"

server() { # HOST [LOG]: rdmasec-server on HOST following etcd, its log in LOG (default server-HOST.log)
	fabric on $1 "$bin/server/rdmasec-server" --cert "$work/pki/server.pem" --key "$work/pki/server.key" \
		--trust-etcd "$members$prefix" --trust-state-dir "/tmp/trust-$1" --listen "$(fabric ip $1):7471" \
		--handshake-timeout 30000 --audit "$work/audit-$1.jsonl" 2>"$work/${2:-server-$1.log}" &
}
server 1
spid1=$!
server 2
spid2=$!
# rdmasec-blkd on host 2: etcd says who may connect, --rw who may use the export. 4K commands: a
# trickle of 4K writes keeps client2's session alive at almost no cost to the emulated guest.
fabric on 2 "$bin/blk/blkd/rdmasec-blkd" --cert "$work/pki/server.pem" --key "$work/pki/server.key" \
	--trust-etcd "$members$prefix" --trust-state-dir /tmp/blkd-trust-2 --listen "$(fabric ip 2)" \
	--max-transfer 4K --max-inline 4K --export "d=$work/blk.img,size=1M" --rw '*' \
	--audit "$work/audit-blkd.jsonl" 2>"$work/blkd.log" &
bpid=$!
for h in 1 2; do wait_for "$work/server-$h.log" 'event=listening' || echo "server $h not listening"; done
wait_for "$work/blkd.log" 'event=listening' || echo "blkd not listening"
blk() { # CERTDIR COMMAND ARGS...: rdmasec-blk from host 3 to the blkd on host 2
	local dir=$1 cmd=$2
	shift 2
	fabric on 3 "$bin/blk/cli/rdmasec-blk" "$cmd" --server "$(fabric ip 2)" --certs "$dir" --export d \
		--source "$(fabric ip 3)" "$@"
}
# client2 writes 4 KiB a second (one command each) until its session ends.
for _ in $(seq 1 240); do head -c 4096 /dev/zero || break; sleep 1; done |
	blk "$work/c2" write --reconnect 0 --offset 0 >"$work/blk-c2.out" 2>&1 &
bwrite=$!
client() { # NAME HOST ARGS...: NAME.pem/NAME.key of the test PKI, from host 3 to the server on HOST
	local name=$1 host=$2
	shift 2
	fabric on 3 "$bin/client/rdmasec-client" --ca "$work/pki/ca.pem" --cert "$work/pki/$name.pem" \
		--key "$work/pki/$name.key" --source "$(fabric ip 3)" -t 20000 "$@" "$(fabric ip "$host")"
}
stream() { # TAG: sealed messages 50 ms apart until $work/stop exists; how many in sent-TAG
	local i=0
	while [ ! -e "$work/stop" ] && [ $i -lt 5000 ]; do
		i=$((i + 1))
		echo "send msg-$1-$i"
		sleep 0.05
	done
	echo $i >"$work/sent-$1"
	echo quit
}
cpids=()
for h in 1 2; do
	for c in client client2; do
		stream $c-$h | client $c $h >"$work/s-$c-$h.out" 2>&1 &
		cpids+=($!)
	done
done
stream client3-1 | client client3 1 >"$work/s-client3-1.out" 2>&1 &
cpids+=($!)
wait_for "$work/s-client3-1.out" "^reply: msg-client3-1-10$" || echo "no reply 10 (client3 to 1)"
for h in 1 2; do
	for c in client client2; do
		wait_for "$work/s-$c-$h.out" "^reply: msg-$c-$h-10$" || echo "no reply 10 ($c to $h)"
	done
done
wait_for "$work/blkd.log" 'event=open .*CN=client2' || echo "no blk session of client2"

# (a) client2 revoked in etcd, client3 no longer allowed.
"$bin/keygen/rdmasec-keygen" revoke "$work/pki" client2 >/dev/null || echo "revoke client2 failed"
etcdctl put $prefix/crl <"$work/pki/crl.pem" >/dev/null || echo "put crl (revoked) failed"
t0=$SECONDS
printf 'CN=client1,O=rdmasec-test\nCN=client2,O=rdmasec-test\n' | etcdctl put $prefix/allow >/dev/null ||
	echo "put allow (without client3) failed"
# The blkd is watched alongside the servers, so that its time is measured as theirs.
( wait_for "$work/blkd.log" 'event=peer_revoked .*CN=client2' 150 || echo "no peer_revoked on the blkd"
  echo "blk_revoked_after=$((SECONDS - t0))" ) &
bwait=$!
for h in 1 2; do
	wait_for "$work/server-$h.log" 'event=peer_revoked .*CN=client2' 150 || echo "no peer_revoked on server $h"
done
wait_for "$work/server-1.log" 'event=peer_revoked .*CN=client3' 150 || echo "no peer_revoked of client3 on server 1"
echo "revoked_after=$((SECONDS - t0))"
wait $bwait
# client1 opens the export meanwhile (etcd's allow and the export's --rw take it).
blk "$work/pki" info >"$work/blk-c1.out" 2>&1 &
binfo=$!
n1=$(grep -c '^reply:' "$work/s-client-1.out") n2=$(grep -c '^reply:' "$work/s-client-2.out")
wait_for "$work/s-client-1.out" "^reply: msg-client-1-$((n1 + 20))$" || echo "client1's stream to 1 stalled"
wait_for "$work/s-client-2.out" "^reply: msg-client-2-$((n2 + 20))$" || echo "client1's stream to 2 stalled"

# (b) A malformed entry: refused by both, the last good copy stays.
etcdctl put $prefix/allow 'CN=ok
not*a rule' >/dev/null || echo "put bad allow failed"
for h in 1 2; do
	wait_for "$work/server-$h.log" 'event=reload_failed what=trust_etcd ' || echo "bad allow not refused on $h"
done
wait_for "$work/blkd.log" 'event=reload_failed what=trust_etcd ' || echo "bad allow not refused on the blkd"

# (c) etcd gone: the last good copy serves.
kill "${epids[@]}"
wait "${epids[@]}" 2>/dev/null
for h in 1 2; do
	wait_for "$work/server-$h.log" 'event=trust_etcd_unreachable' || echo "server $h did not notice etcd was gone"
done
for h in 1 2; do
	client client $h -c "send hello-$h; quit" >"$work/c-client-$h.out" 2>&1; echo "c_client_$h=$?"
	client client2 $h -c "send hello-$h; quit" >"$work/c-client2-$h.out" 2>&1; echo "c_client2_$h=$?"
done
client client3 1 -c "send hello; quit" >"$work/c-client3.out" 2>&1; echo "c_client3=$?"
touch "$work/stop"
for p in "${cpids[@]}"; do wait $p; done
wait $bwrite; echo "blk_c2=$?"
wait $binfo; echo "blk_c1=$?"
for h in 1 2; do
	for c in client client2; do echo "s_${c}_$h=$(grep -c '^reply:' "$work/s-$c-$h.out")"; done
done
kill -TERM $spid1
wait $spid1; echo "server1=$?"
server 1 server-1b.log
spid1=$!
wait_for "$work/server-1b.log" 'event=listening' || echo "server 1 did not restart"
client client 1 -c "send again; quit" >"$work/r-client.out" 2>&1; echo "r_client=$?"
kill -TERM $spid1 $spid2 $bpid
wait $spid1; echo "server1b=$?"
wait $spid2; echo "server2=$?"
wait $bpid; echo "blkd=$?"
GUEST

"$fabric" run --hosts 3 --timeout 480 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
for f in run.out server-1.log server-2.log server-1b.log audit-1.jsonl blkd.log blk-c2.out blk-c1.out; do
	echo "--- $f"
	cat "$work/$f"
done

grep -q '^no \|failed$\|stalled$\|not \(healthy\|listening\|refused\)\|did not' "$work/run.out" &&
	fail "a step of the guest script failed (run.out above)"
expect_match "$work/run.out" '^server1=0$' "server 1 did not exit cleanly"
expect_match "$work/run.out" '^server2=0$' "server 2 did not exit cleanly"
expect_match "$work/run.out" '^blkd=0$' "rdmasec-blkd did not exit cleanly"
# The blkd: started from etcd; client2's open session closed by the revocation in etcd, audited; its
# bench failed; client1 (etcd's allow, the export's --rw) still opens the export; the bad entry refused.
expect_match "$work/blkd.log" 'event=trust_etcd prefix="/rdmasec/trust" source=etcd ' "the blkd did not start from etcd"
expect_match "$work/blkd.log" 'event=trust_etcd_changed action=reload' "(a) the blkd applied no change"
expect_match "$work/blkd.log" 'event=peer_revoked .*peer="CN=client2,O=rdmasec-test" reason="certificate revoked"' \
	"(a) the blkd did not close client2's session"
# audits_client2_revoked AUDIT: the audit log holds a peer_revoked record of client2.
audits_client2_revoked() {
	python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert any(r["event"] == "peer_revoked" and r["peer"] == "CN=client2,O=rdmasec-test" for r in recs), recs
PY
}
audits_client2_revoked "$work/audit-blkd.jsonl" || fail "(a) the blkd did not audit client2's closing"
grep -q '^blk_c2=0$' "$work/run.out" && fail "(a) client2's rdmasec-blk write ended well after its revocation"
expect_match "$work/blk-c2.out" 'certificate revoked' "(a) client2's rdmasec-blk did not say its session was revoked"
expect_match "$work/run.out" '^blk_c1=0$' "(a) client1 could not open the export after client2's revocation"
expect_match "$work/blkd.log" 'event=reload_failed what=trust_etcd reason="trust-etcd: allow: .*not\*a rule' \
	"(b) the blkd did not say why it refused the bad entry"
blk_revoked_after=$(sed -n 's/^blk_revoked_after=//p' "$work/run.out")
[ "${blk_revoked_after:-99}" -le 15 ] || fail "(a) client2's blk session was closed only after ${blk_revoked_after:-?} s"
for h in 1 2; do
	expect_match "$work/server-$h.log" 'event=trust_etcd prefix="/rdmasec/trust" source=etcd ' \
		"server $h did not start from etcd"
	# (a) Closed and audited on both servers; the revocation came from etcd, not a signal.
	expect_match "$work/server-$h.log" 'event=trust_etcd_changed action=reload' "(a) server $h applied no change"
	expect_match "$work/server-$h.log" 'event=peer_revoked .*peer="?CN=client2,O=rdmasec-test"? reason="certificate revoked"' \
		"(a) server $h did not close client2"
	audits_client2_revoked "$work/audit-$h.jsonl" || fail "(a) server $h did not audit client2's closing"
	grep -q "^reply: msg-client2-$h-" "$work/s-client2-$h.out" || fail "(a) client2 never streamed to $h"
	sent=$(cat "$work/sent-client-$h")
	[ "${sent:-0}" -ge 40 ] || fail "(a) client1 sent only ${sent:-no} messages to $h"
	for i in $(seq 1 "$sent"); do echo "reply: msg-client-$h-$i"; done >"$work/want-$h"
	grep "^reply: msg-client-$h-" "$work/s-client-$h.out" | cmp -s - "$work/want-$h" ||
		fail "(a) client1's stream to $h lost or reordered messages"
	# (b) Refused with the reason, audited, the old copy kept.
	expect_match "$work/server-$h.log" 'event=reload_failed what=trust_etcd reason="trust-etcd: allow: .*not\*a rule' \
		"(b) server $h did not say why it refused the bad entry"
	python3 - "$work/audit-$h.jsonl" <<'PY' || fail "(b) server $h did not audit the refused entry"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert any(r["event"] == "reload" and r["result"] == "failed" and r["reason"].startswith("trust-etcd: allow:")
           for r in recs), recs
PY
	# (c) Serving from the last good copy.
	expect_match "$work/run.out" "^c_client_$h=0$" "(c) client1's new handshake with server $h failed with etcd down"
	expect_match "$work/c-client-$h.out" "^reply: hello-$h$" "(c) server $h did not answer client1 with etcd down"
	grep -q "^c_client2_$h=0$" "$work/run.out" && fail "(c) the revoked client2 was admitted by $h with etcd down"
done
# (a) client3, no longer in etcd's allow: closed and audited, its client told why; (c) still refused.
expect_match "$work/server-1.log" 'event=peer_revoked .*peer="?CN=client3,O=rdmasec-test"? reason="no longer allowed \(2 allow rules: ' \
	"(a) server 1 did not close client3 when etcd's allow dropped it"
python3 - "$work/audit-1.jsonl" <<'PY' || fail "(a) server 1 did not audit client3's closing"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert any(r["event"] == "peer_revoked" and r["peer"] == "CN=client3,O=rdmasec-test"
           and r["reason"].startswith("no longer allowed") for r in recs), recs
PY
grep -q "^reply: msg-client3-1-" "$work/s-client3-1.out" || fail "(a) client3 never streamed to 1"
grep -q '^c_client3=0$' "$work/run.out" && fail "(c) client3, dropped from allow, was admitted with etcd down"
expect_match "$work/c-client3.out" 'identity not authorized' "(c) client3 was not told it is not authorized"
revoked_after=$(sed -n 's/^revoked_after=//p' "$work/run.out")
[ "${revoked_after:-99}" -le 15 ] || fail "(a) client2 was closed only after ${revoked_after:-?} s"
expect_match "$work/server-1b.log" 'event=trust_etcd prefix="/rdmasec/trust" source=last_good ' \
	"(c) the restarted server did not start from its last good copy"
expect_match "$work/run.out" '^r_client=0$' "(c) the restarted server did not admit client1"
echo "trust_etcd: ok (client2 closed on both servers within ${revoked_after} s, on the blkd within ${blk_revoked_after} s)"
