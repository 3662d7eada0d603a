# SPDX-License-Identifier: MIT
# Resource exhaustion on real rxe, one 3-host boot (rdmasec-attack exhaust).
#
# Local (NeVerMore 4.4), user nobody on host 1's rxe1:
#  (a) without a limit the flood creates QPs until the kernel says no; rxe's
#      own limit (about 1M QPs) is far away: one process stops at
#      vm.max_map_count (each QP maps two queues; set to 16384 here, a
#      quarter of the default, to keep the guest's memory and time in
#      bounds: the mechanism is the same), and another process still
#      creates its QP while the flood holds everything.
#  (b) in an rdma cgroup with rdma.max "rxe1 hca_handle=2 hca_object=16" the
#      flood stops at 14 QPs (its PD and CQ count too) with EAGAIN, another
#      process in the same cgroup is refused, one outside it is not.
# Remote (ReDMArk A4), the attacker on host 3, the service on host 1; the QPs
# the service spent are counted with rdma(8) while the attacker holds:
#  (c) rdmasec-naive-victim --clients 8: 8 unauthenticated exchanges cost 8
#      QPs and the legitimate client is refused; rping -s: one half-open
#      rdma_cm connection takes the server's only connection (its QP) and a
#      real rping client fails; rdmasec-server: 64 connections that never
#      start TLS cost no QP and a legitimate client is served; with
#      --max-clients 16 the extra connections are refused at accept
#      (qp_created=no) and the held ones are dropped at the handshake deadline.
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
[ -x "$atk" ] && [ -x "$bin/attack/rdmasec-naive-victim" ] && [ -x "$bin/server/rdmasec-server" ] ||
	fail "build rdmasec-attack, rdmasec-naive-victim and rdmasec-server first"
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

# Usage errors, without the fabric.
"$atk" exhaust --remote --dst 192.0.2.1 --port 1 --proto tcp >/dev/null 2>"$work/scope.err"
[ $? -eq 2 ] && grep -q 'refusing to target 192\.0\.2\.1' "$work/scope.err" ||
	fail "exhaust did not refuse a target outside the fabric"
"$atk" exhaust --local --remote >/dev/null 2>&1
[ $? -eq 2 ] || fail "exhaust accepted --local with --remote"

cat >"$work/guest.sh" <<'EOF_GUEST'
set -u
bin=$1 work=$2
atk=$bin/attack/rdmasec-attack vic=$bin/attack/rdmasec-naive-victim
nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
g1=$(fabric gid-index 1)
# QPs on rxe1 (the service's host), QP1 aside, from rdma(8)'s summary (a full
# listing of tens of thousands of QPs does not come back).
svc_qps() { echo $(($(rdma res show | sed -n 's/^[0-9]*: rxe1: .* qp \([0-9]*\) .*/\1/p') - 1)); }
# wait_for FILE REGEX [TENTHS]
wait_for() { for _ in $(seq 1 "${3:-300}"); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# stage NAME: where the run is, on the console too (a guest that hangs prints nothing else).
stage() { echo "stage $1 at $(cut -d' ' -f1 /proc/uptime)s, $(sed -n 's/^MemAvailable: *//p' /proc/meminfo) available" | tee /dev/console >&2; }

stage a
# (a) no limit but the per-process mapping limit, lowered (see the top).
sysctl -qw vm.max_map_count=16384 || echo "cannot set vm.max_map_count"
$nobody "$atk" exhaust --local -d rxe1 --max 100000 --hold 4 --json >"$work/a.json" 2>"$work/a.err" &
p=$!
wait_for "$work/a.err" holding 400
stage a-holding
echo "a-qps-held=$(svc_qps)"
$nobody "$atk" exhaust --one-qp -d rxe1 >"$work/a-other.txt"
echo "a-other-rc=$?"
wait $p; echo "a-rc=$?"
echo "a-qps-after=$(svc_qps)"

stage b
# (b) the rdma cgroup.
cg=/sys/fs/cgroup/rsec-flood
echo +rdma >/sys/fs/cgroup/cgroup.subtree_control && mkdir -p $cg &&
	echo "rxe1 hca_handle=2 hca_object=16" >$cg/rdma.max || echo "cgroup set-up failed"
cat $cg/rdma.max >"$work/b-max.txt"
(echo "$BASHPID" >$cg/cgroup.procs && exec $nobody "$atk" exhaust --local -d rxe1 --hold 3 --json) \
	>"$work/b.json" 2>"$work/b.err" &
p=$!
wait_for "$work/b.err" holding
cat $cg/rdma.current >"$work/b-current.txt"
$nobody "$atk" exhaust --one-qp -d rxe1 >"$work/b-outside.txt"
echo "b-outside-rc=$?"
wait $p; echo "b-rc=$?"

stage c-naive
# (c) naive victim, 8 client slots.
fabric on 1 timeout 25 "$vic" server -d rxe1 -g "$g1" --clients 8 -t 20 >"$work/naive.log" 2>&1 &
vs=$!
fabric wait-port 18516 15 || echo "naive server not listening"
echo "naive-qps-before=$(svc_qps)"
fabric on 3 "$atk" exhaust --remote --dst 10.77.0.1 --port 18516 --proto naive --source 10.77.0.3 \
	--connections 8 --timeout-ms 2000 --hold 3 --json >"$work/naive.json" 2>"$work/naive.err" &
p=$!
wait_for "$work/naive.err" holding
echo "naive-qps-held=$(svc_qps)"
wait $p
kill $vs 2>/dev/null; wait $vs

stage c-rping
# (c) rping -s.
fabric on 1 timeout 30 rping -s -v -a 10.77.0.1 -S 64 >"$work/rping-server.log" 2>&1 &
rs=$!
for _ in $(seq 1 100); do rdma res show cm_id | grep -q 'state LISTEN .*10.77.0.1:7174' && break; sleep 0.1; done
echo "rping-qps-before=$(svc_qps)"
fabric on 3 "$atk" exhaust --remote --dst 10.77.0.1 --port 7174 --proto rdma_cm --source 10.77.0.3 \
	--connections 1 --timeout-ms 2000 --hold 6 --json >"$work/rping.json" 2>"$work/rping.err" &
p=$!
wait_for "$work/rping.err" 'answered with a QP'

echo "rping-qps-held=$(svc_qps)"
fabric on 2 timeout 5 rping -c -v -a 10.77.0.1 -I 10.77.0.2 -S 64 -C 3 >"$work/rping-client.log" 2>&1
echo "rping-client-rc=$?"
echo "rping-client-said=$(grep -m1 -E 'REJECTED|error|fail' "$work/rping-client.log")"
echo "rping-server-said=$(grep -m1 -E 'REJECTED|error|fail' "$work/rping-server.log")"
wait $p
kill $rs 2>/dev/null; wait $rs

stage c-rdmasec
# (c) rdmasec-server, default limits but per source (hostile_flood.sh tests those): 64 connections
# that never start TLS, then the legitimate client from the same host.
fabric on 1 timeout 40 "$bin/server/rdmasec-server" --certs "$work/pki" --listen 10.77.0.1:7471 \
	--max-handshakes-per-source 1024 --handshake-rate 1000 >"$work/rsec.log" 2>&1 &
ss1=$!
fabric wait-port 7471 15 || echo "rdmasec server not listening"
echo "rsec-qps-before=$(svc_qps)"
fabric on 3 "$atk" exhaust --remote --dst 10.77.0.1 --port 7471 --proto rdmasec --source 10.77.0.3 \
	--connections 64 --no-probe --hold 2 --json >"$work/rsec.json" 2>"$work/rsec.err" &
p=$!
wait_for "$work/rsec.err" holding
echo "rsec-qps-held=$(svc_qps)"
wait $p
# The legitimate client (its connection fills the server's QP pool).
fabric on 3 "$atk" exhaust --remote --dst 10.77.0.1 --port 7471 --proto rdmasec --source 10.77.0.3 \
	--connections 64 --certs "$work/pki" --hold 0 --json >"$work/rsec2.json" 2>"$work/rsec2.err"
kill $ss1 2>/dev/null; wait $ss1

stage c-limits
# (c) rdmasec-server --max-clients 16 --handshake-timeout 2000.
fabric on 1 timeout 40 "$bin/server/rdmasec-server" --certs "$work/pki" --listen 10.77.0.1:7471 \
	--max-clients 16 --handshake-timeout 2000 >"$work/rsec-lim.log" 2>&1 &
ss2=$!
fabric wait-port 7471 15 || echo "rdmasec server not listening"
fabric on 3 "$atk" exhaust --remote --dst 10.77.0.1 --port 7471 --proto rdmasec --source 10.77.0.3 \
	--connections 32 --certs "$work/pki" --timeout-ms 1000 --hold 3 --json >"$work/rsec-lim.json" 2>"$work/rsec-lim.err"
echo "rsec-lim-qps=$(svc_qps)"
# After the handshake deadline freed the slots.
fabric on 3 "$atk" exhaust --remote --dst 10.77.0.1 --port 7471 --proto rdmasec --source 10.77.0.3 \
	--connections 1 --certs "$work/pki" --hold 0 --json >"$work/rsec-lim2.json" 2>"$work/rsec-lim2.err"
kill $ss2 2>/dev/null; wait $ss2
stage done
EOF_GUEST

"$fabric" run --hosts 3 --timeout 240 -- bash "$work/guest.sh" "$bin" "$work" >"$work/out" 2>&1 ||
	{ cat "$work/out"; fail "the fabric run failed"; }
cat "$work/out"
for f in a.json b.json naive.json rping.json rsec.json rsec2.json rsec-lim.json rsec-lim2.json; do
	echo "$f: $(cat "$work/$f" 2>/dev/null)"
done
num() { sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" "$work/$1"; }
val() { sed -n "s/^$1=//p" "$work/out"; }

# (a) A flood as nobody: thousands of QPs, stopped by the per-process mapping limit (ENOMEM)
# and not by rxe; the other process still got its QP; all of them visible to rdma(8) and gone after.
created=$(num a.json qp_created) maps=$(num a.json maps) maxmaps=$(num a.json max_map_count)
[ -n "$created" ] && [ "$created" -ge $((${maxmaps%.*} / 2 - 512)) ] || fail "(a) the flood created ${created:-no} QPs"
expect_match "$work/a.json" '"uid":65534,.*"qp_errno":"ENOMEM"' "(a) the flood did not run as nobody or did not stop at ENOMEM"
[ "${maps%.*}" -ge $((${maxmaps%.*} - 64)) ] || fail "(a) $maps mappings: not at vm.max_map_count ($maxmaps)"
expect_match "$work/a.json" '"victim":"created-qp"' "(a) the other process (same user) was refused"
expect_match "$work/a-other.txt" '^one-qp: created$' "(a) a separate process could not create a QP"
[ "$(val a-qps-held)" -ge "$created" ] || fail "(a) rdma res showed $(val a-qps-held) QPs while $created were held"
[ "$(val a-qps-after)" -eq 0 ] || fail "(a) $(val a-qps-after) QPs left after the flood"

# (b) rdma.max: 16 objects = PD + CQ + 14 QPs, EAGAIN; same cgroup refused, outside served.
expect_match "$work/b-max.txt" '^rxe1 hca_handle=2 hca_object=16' "(b) rdma.max was not set"
expect_match "$work/b.json" '"cgroup":"/rsec-flood","rdma_max":"hca_handle=2 hca_object=16"' "(b) the flood did not run in the cgroup"
expect_match "$work/b.json" '"qp_created":14,"qp_stop":"error","qp_errno":"EAGAIN"' "(b) the flood was not stopped at 14 QPs by EAGAIN"
expect_match "$work/b-current.txt" '^rxe1 hca_handle=1 hca_object=16' "(b) rdma.current did not show the cgroup at its limit"
expect_match "$work/b.json" '"victim":"refused","victim_step":"pd","victim_errno":"EAGAIN"' "(b) a process in the same cgroup was not refused"
expect_match "$work/b-outside.txt" '^one-qp: created$' "(b) a process outside the cgroup was refused"

# (c) naive: 8 unauthenticated exchanges, 8 QPs of the service, the legitimate client refused.
expect_match "$work/naive.json" '"connected":8,"service_qps_seen":8,' "(c) naive: the service did not answer 8 exchanges"
expect_match "$work/naive.json" '"legit":"refused".*"verdict":"exhausted"' "(c) naive: the legitimate client was served"
expect_match "$work/naive.log" '^refused a client: 8 clients connected' "(c) naive: the victim did not refuse the probe"
[ $(($(val naive-qps-held) - $(val naive-qps-before))) -eq 8 ] ||
	fail "(c) naive: rdma res showed $(val naive-qps-before) -> $(val naive-qps-held) QPs, not 8 more"

# (c) rping: the half-open connection got the server's reply (its QP), the real client failed.
expect_match "$work/rping.json" '"service_qps_seen":1,"service_qpns":\["0x[0-9a-f]+"\]' "(c) rping: no CM reply to a half-open connection"
[ $(($(val rping-qps-held) - $(val rping-qps-before))) -ge 1 ] || fail "(c) rping: no QP spent on the attacker"
[ "$(val rping-client-rc)" != 0 ] || fail "(c) rping: the legitimate client was served"

# (c) rdmasec: 64 connections without TLS, no QP; the legitimate client served; the limits.
expect_match "$work/rsec.json" '"connected":64,"service_qps_seen":0,' "(c) rdmasec: the 64 connections were not accepted"
[ "$(val rsec-qps-held)" -eq "$(val rsec-qps-before)" ] ||
	fail "(c) rdmasec: QPs went from $(val rsec-qps-before) to $(val rsec-qps-held) before authentication"
expect_match "$work/rsec2.json" '"legit":"served"' "(c) rdmasec: the legitimate client was refused"
! grep -q 'qp_created=yes' "$work/rsec.log" || fail "(c) rdmasec: a QP for an unauthenticated peer"
expect_match "$work/rsec.log" 'event=counters .*established=1 qps_created=1 ' "(c) rdmasec: not exactly one QP (the legitimate client's)"
expect_match "$work/rsec-lim.json" '"connected":32,.*"closed_by_service":(1[6-9]|2[0-9]|3[0-2]),' "(c) rdmasec: max_clients did not close the extra connections"
expect_match "$work/rsec-lim.log" 'event=refused addr="[0-9.:]+" reason="max_clients reached" clients=16 qp_created=no' "(c) rdmasec: no max_clients refusal logged"
expect_match "$work/rsec-lim.json" '"legit":"refused"' "(c) rdmasec: served while all 16 slots were held (expected: refused until the deadline)"
expect_match "$work/rsec-lim.log" 'event=handshake_failed .*code="timed out" .*qp_created=no' "(c) rdmasec: held connections not dropped at the handshake deadline"
[ "$(val rsec-lim-qps)" -eq 0 ] || fail "(c) rdmasec: $(val rsec-lim-qps) QPs with only unauthenticated peers"
expect_match "$work/rsec-lim2.json" '"legit":"served"' "(c) rdmasec: not served after the handshake deadline"
echo "attack_exhaust: ok"
