# SPDX-License-Identifier: MIT
# rdmasec-blk under faults, one boot, three hosts (docs/blk.md, rdmasec-blkd(8)):
#  - kill -9 of rdmasec-blkd while host 2 streams writes (a loop of
#    rdmasec-blk write, each chunk followed by its FLUSH, plus a bench on
#    another export): restarted on the same backing files, every chunk whose
#    write and FLUSH completed reads back byte for byte, and a verify pattern
#    written and flushed before the kill checks clean, and each of those
#    chunks' writes has its audit record (written before its completion);
#  - while bench --verify runs in a loop on host 2, host 3 reads the target's
#    data QPN and PSN off the bridge at a session's start and sends a sweep of RDMA WRITEs with an
#    rkey never issued (QP error), then forged SENDs (they fail
#    authentication): the target audits data-path rebuilds, and every bench
#    run ends clean (no I/O error, no verify error, the session went on).
#    A forged SEND that lands between the packets of a multi-packet SEND
#    makes rxe fail the QP instead (about one sweep in thirty): that heals
#    too, and the sweep is repeated until one fails authentication;
#  - a store that fills up (a file on a 1 MiB tmpfs): the client's writes get
#    errors (bench exits 1, errors counted, no timeout), while a verify run on
#    another export at the same time is clean;
#  - a client killed -9 mid-stream: the target closes its session (log,
#    audit), the sessions gauge is back at 0, and host 1's rxe holds no more
#    QPs and MRs than before the session (nothing of it left to reach).
# Every step runs under a timeout.
. "$(dirname "$0")/common.bash"

bin=$build/tools
blkd=$bin/blk/blkd/rdmasec-blkd
cli=$bin/blk/cli/rdmasec-blk
atk=$bin/attack/rdmasec-attack
for f in "$blkd" "$cli" "$atk"; do [ -x "$f" ] || fail "build it first (missing $f)"; done
command -v tcpdump >/dev/null || fail "tcpdump is missing"
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
mkdir -p "$work/chunks"
for i in $(seq 1 40); do head -c 262144 /dev/urandom >"$work/chunks/$i"; done

cat >"$work/guest.sh" <<'GUEST'
set -u
blkd=$1 cli=$2 atk=$3 work=$4
server=$(fabric ip 1) me=$(fabric ip 2)
step() { echo "== $* at $SECONDS s"; }
mkdir -p /tmp/small && mount -t tmpfs -o size=1m tmpfs /tmp/small || exit 1
truncate -s 64M /tmp/disk.img
truncate -s 16M /tmp/scratch.img
start_target() {
	fabric on 1 "$blkd" --certs "$work/pki" --listen "$server" --audit "$work/audit.jsonl" \
		--metrics "$work/metrics.prom" --rebuilds-per-min 30 --store-threads 2 \
		--export disk=/tmp/disk.img,size=64M --rw '*' \
		--export scratch=/tmp/scratch.img,size=16M --rw '*' \
		--export full=/tmp/small/full.img,size=8M --rw '*' 2>>"$work/blkd.log" &
	tpid=$!
	fabric wait-port 7472 30 || { tail "$work/blkd.log"; exit 1; }
}
blk() { local t=$1 x=$2 cmd=$3; shift 3
	timeout "$t" fabric on 2 "$cli" "$cmd" --server "$server" --certs "$work/pki" --export "$x" --source "$me" \
		-t 10000 "$@"; }
rdma_count() { rdma res show $1 | grep -c "$2"; } # $1: what, split into words

step kill-9
start_target
blk 120 disk bench --rw randwrite --bs 4k --queue-depth 16 --size 1M --verify --seed 5 --json >"$work/before.json" 2>&1
echo "before=$?"
# Its writes completed; a FLUSH (rdmasec-blk write ends with one) makes them stable.
head -c 4096 /dev/zero | blk 30 disk write --offset $((60 * 1048576)) >/dev/null 2>&1; echo "flush=$?"
blk 120 scratch bench --rw randwrite --bs 64k --queue-depth 16 --queues 2 --runtime 60 >"$work/load.out" 2>&1 &
lpid=$!
: >"$work/acked"
( for i in $(seq 1 40); do
	blk 20 disk write --reconnect 0 --offset $((8 * 1048576 + (i - 1) * 262144)) --length 262144 <"$work/chunks/$i" \
		>/dev/null 2>>"$work/writes.err" || break
	echo "$i" >>"$work/acked"
done ) &
wpid=$!
for _ in $(seq 1 300); do [ "$(wc -l <"$work/acked")" -ge 3 ] && break; sleep 0.1; done
kill -9 $tpid
wait $tpid 2>/dev/null
echo "killed: $(wc -l <"$work/acked") chunks acked"
wait $wpid
wait $lpid
echo "load=$?"
start_target
for i in $(cat "$work/acked"); do
	blk 20 disk read --offset $((8 * 1048576 + (i - 1) * 262144)) --length 262144 >/tmp/back 2>>"$work/reads.err" &&
		cmp -s /tmp/back "$work/chunks/$i" && echo "same $i" || echo "lost $i"
done >"$work/readback"
echo "readback: $(grep -c '^same' "$work/readback") of $(wc -l <"$work/acked") same"
# ... and every write the client got a completion for has its audit record (written before the completion).
for i in $(cat "$work/acked"); do
	grep -q "\"op\":\"write\",.*\"offset\":$((8 * 1048576 + (i - 1) * 262144)),.*\"result\":\"ok\"" "$work/audit.jsonl" &&
		echo "audited $i" || echo "unaudited $i"
done >"$work/audited"
echo "audited: $(grep -c '^audited' "$work/audited") of $(wc -l <"$work/acked")"
blk 120 disk bench --rw randread --bs 4k --queue-depth 16 --size 1M --verify --seed 5 --json >"$work/after.json" 2>&1
echo "after=$?"

step attack
# The verify loop on host 2, until told to stop. 64 KiB writes are pulled
# by the target, so the client's requests are one SEND per I/O: a sweep
# from the PSN seen on the wire outruns it even on a loaded machine (with
# 4 KiB writes inline, 5 packets each, a sweep slowed by the duplicates it
# sends never caught up with the client).
( n=0; while [ ! -e "$work/stop" ] && [ $n -lt 40 ]; do
	n=$((n + 1))
	blk 120 scratch bench --rw randwrite --bs 64k --queue-depth 8 --size 8M --verify --seed $n --json \
		>"$work/loop-$n.json" 2>&1
	echo "run $n=$?"
done ) >"$work/loop.out" &
vpid=$!
sniff() { # QPN and PSN of one client->target RC request (a command SEND), off the bridge
	local hex
	timeout 10 tcpdump -i fabbr -nn -x -c 1 \
		"udp dst port 4791 and src host $me and dst host $server and udp[8] < 13" >/tmp/bth.txt 2>/dev/null
	hex=$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", $i }' /tmp/bth.txt)
	[ ${#hex} -ge 80 ] || return 1
	qpn=0x${hex:66:6} psn=$((0x${hex:74:6}))
}
rebuilds() { grep -c '"event":"rebuild"' "$work/audit.jsonl"; }
healed() { grep -c "\"event\":\"rebuild\".*$1" "$work/audit.jsonl"; } # rebuilds for reason $1
forged=0000000000000001000000100000030041545441434b45522d4259544553212121$(printf '%030x' 0)
sleep 2
r0=$(rebuilds)
# Rounds: a sweep aimed at a session that ended meanwhile (each verify run is a session) hits nothing.
for kind in qp-error inject; do
	case $kind in
	qp-error) args=(--kind rkey --rkey 0x1234) why='queue pair' ;;
	inject) args=(--data-hex "$forged") why='authentication failed' ;;
	esac
	h0=$(healed "$why")
	for round in 1 2 3 4; do
		# From a session's start: one seen near its end is gone before a
		# loaded guest has started the sweep.
		o0=$(grep -c 'event=open .*export="scratch"' "$work/blkd.log")
		for _ in $(seq 1 100); do
			[ "$(grep -c 'event=open .*export="scratch"' "$work/blkd.log")" -gt "$o0" ] && break
			sleep 0.1
		done
		sniff || { echo "$kind: no RoCE request seen"; continue; }
		echo "$kind: round $round, sweep starts at $(date -u +%T.%3N)"
		timeout 30 fabric on 3 "$atk" "$kind" --dst "$server" --src "$me" --qpn "$qpn" \
			--psn-sweep "$(((psn + 1) & 0xffffff)):20000" --iface fab3 --sport 4242 "${args[@]}" --json \
			>"$work/$kind.json" 2>"$work/$kind.err"
		echo "$kind=$? qpn=$qpn psn=$psn"
		for _ in $(seq 1 30); do [ "$(healed "$why")" -gt "$h0" ] && break; sleep 0.1; done
		[ "$(healed "$why")" -gt "$h0" ] && break
	done
	echo "$kind: rebuilds $r0 -> $(rebuilds) after $round rounds;" \
		"last $(grep '"event":"rebuild"' "$work/audit.jsonl" | tail -n 1 | grep -o '"time":"[^"]*"')"
	r0=$(rebuilds)
	sleep 3
done
# The run the attacks hit must end, and a second one must have run: on a
# loaded machine one verify run outlasts both attacks.
runs_now() { grep -c '^run [0-9]*=' "$work/loop.out"; }
k=$(runs_now)
for _ in $(seq 1 300); do
	n=$(runs_now)
	[ "$n" -gt "$k" ] && [ "$n" -ge 2 ] && break
	kill -0 $vpid 2>/dev/null || break
	sleep 0.5
done
touch "$work/stop"
wait $vpid

step full-store
blk 120 full bench --rw randwrite --bs 64k --queue-depth 4 --size 8M --verify --json >"$work/full.json" 2>"$work/full.err" &
fpid=$!
blk 120 disk bench --rw randread --bs 4k --queue-depth 16 --size 1M --verify --seed 5 --json >"$work/beside.json" 2>&1
echo "beside=$?"
wait $fpid
echo "full=$?"

step vanish
sleep 2 # the metrics file is written at most once a second
qp0=$(rdma_count "qp link rxe1/1" "type RC") mr0=$(rdma_count "mr dev rxe1" mrn)
echo "idle: qps=$qp0 mrs=$mr0 $(grep '^rdmasec_blkd_sessions{export="disk"}' "$work/metrics.prom")"
fabric on 2 "$cli" bench --server "$server" --certs "$work/pki" --export disk --source "$me" \
	--rw randwrite --bs 4k --queue-depth 32 --queues 2 --runtime 60 >/dev/null 2>&1 &
cpid=$!
sleep 3
echo "streaming: qps=$(rdma_count "qp link rxe1/1" "type RC") mrs=$(rdma_count "mr dev rxe1" mrn)"
c0=$(grep -c 'event=close' "$work/blkd.log")
kill -9 $cpid
wait $cpid 2>/dev/null
t0=$SECONDS
for _ in $(seq 1 300); do
	[ "$(rdma_count "qp link rxe1/1" "type RC")" -le "$qp0" ] && [ "$(rdma_count "mr dev rxe1" mrn)" -le "$mr0" ] && break
	sleep 0.1
done
sleep 2
echo "vanished: after $((SECONDS - t0)) s qps=$(rdma_count "qp link rxe1/1" "type RC") mrs=$(rdma_count "mr dev rxe1" mrn)" \
	"$(grep '^rdmasec_blkd_sessions{export="disk"}' "$work/metrics.prom")"
echo "closes: $c0 -> $(grep -c 'event=close' "$work/blkd.log")"
kill -TERM $tpid
wait $tpid
echo "blkd=$?"
GUEST

start=$SECONDS
"$fabric" run --hosts 3 --mem 2048 --timeout 420 -- bash "$work/guest.sh" "$blkd" "$cli" "$atk" "$work" \
	>"$work/run.out" 2>&1 || { cat "$work/run.out"; tail -n 30 "$work/blkd.log"; fail "fabric run failed"; }
cat "$work/run.out"
echo "fabric run: $((SECONDS - start)) s"
echo "--- loop"
cat "$work/loop.out"
echo "--- blkd.log (tail)"
tail -n 15 "$work/blkd.log"
jq_num() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# kill -9: what was flushed is there.
expect_match "$work/run.out" '^before=0$' "the verify pattern before the kill failed"
expect_match "$work/run.out" '^flush=0$' "the FLUSH before the kill failed"
acked=$(wc -l <"$work/acked")
[ "$acked" -ge 3 ] || fail "only $acked chunks were written and flushed before the kill"
[ "$acked" -lt 40 ] || fail "the kill came after the whole stream"
expect_match "$work/run.out" "^readback: $acked of $acked same$" "a write flushed before the kill -9 is lost"
expect_match "$work/run.out" "^audited: $acked of $acked$" "a write completed before the kill -9 has no audit record"
expect_match "$work/run.out" '^after=0$' "the pattern flushed before the kill does not verify after the restart"
[ "$(jq_num "$work/after.json" 'd["verify_errors"]')" = 0 ] || fail "verify errors after the restart"
expect_match "$work/run.out" '^load=1$' "the stream on the other export did not fail with the target"

# Forged packets and a QP error: the data path healed, verification stayed clean.
expect_match "$work/run.out" '^qp-error=0 ' "the qp-error sweep did not run"
expect_match "$work/run.out" '^inject=0 ' "the inject sweep did not run"
for kind in qp-error inject; do
	line=$(grep "^$kind: rebuilds" "$work/run.out")
	[[ $line =~ rebuilds\ ([0-9]+)\ -\>\ ([0-9]+) ]] && [ "${BASH_REMATCH[2]}" -gt "${BASH_REMATCH[1]}" ] ||
		fail "$kind: the target did not rebuild its data path ($line)"
done
rebuilt=$(grep '"event":"rebuild"' "$work/audit.jsonl" | grep -o '"reason":"[^"]*"')
grep -q 'queue pair' <<<"$rebuilt" || fail "no rebuild after the QP error in the audit log; rebuilds: $rebuilt"
grep -q 'authentication failed' <<<"$rebuilt" || fail "no rebuild after a forged SEND in the audit log; rebuilds: $rebuilt"
runs=$(grep -c '^run [0-9]*=' "$work/loop.out")
[ "$runs" -ge 2 ] || fail "the verify loop ran $runs times"
bad=$(grep -vc '^run [0-9]*=0$' "$work/loop.out")
[ "$bad" = 0 ] || fail "$bad of $runs verify runs failed during the attacks"
for f in "$work"/loop-*.json; do
	[ "$(jq_num "$f" 'd["errors"] + d["verify_errors"]')" = 0 ] || fail "errors in $f"
	[ "$(jq_num "$f" 'd["session_ended"]')" = False ] || fail "the session ended in $f"
done
echo "attack: $runs verify runs clean; longest write $(for f in "$work"/loop-*.json; do jq_num "$f" 'd["write"]["clat_us"]["max"]'; done | sort -n | tail -1) us"

# A full store: errors, no hang, the other export goes on.
expect_match "$work/run.out" '^full=1$' "writes to a full store did not fail (or hung)"
[ "$(jq_num "$work/full.json" 'd["errors"]')" -gt 0 ] || fail "no errors counted on the full store"
expect_match "$work/run.out" '^beside=0$' "the other export's session did not go on"
expect_match "$work/metrics.prom" '^rdmasec_blkd_errors_total\{export="full",status="no space"\} [1-9]' \
	"the target did not count the no-space errors"
echo "full store: $(jq_num "$work/full.json" 'd["errors"]') errors of $(jq_num "$work/full.json" 'd["write"]["ios"]') writes;" \
	"$(grep -o 'status="no space"} [0-9]*' "$work/metrics.prom")"

# A vanished client: its session closed, nothing of it left.
expect_match "$work/run.out" '^streaming: qps=[1-9]' "the streaming client had no queue pair"
idle=$(grep '^idle:' "$work/run.out") gone=$(grep '^vanished:' "$work/run.out")
[[ $idle =~ qps=([0-9]+)\ mrs=([0-9]+) ]] && q0=${BASH_REMATCH[1]} m0=${BASH_REMATCH[2]} || fail "no idle counts"
[[ $gone =~ qps=([0-9]+)\ mrs=([0-9]+) ]] || fail "no counts after the client vanished"
[ "${BASH_REMATCH[1]}" -le "$q0" ] && [ "${BASH_REMATCH[2]}" -le "$m0" ] ||
	fail "the vanished client's queue pairs or memory regions are still there ($gone; idle $idle)"
expect_match "$work/run.out" '^vanished: .*rdmasec_blkd_sessions\{export="disk"\} 0$' "the sessions gauge is not back at 0"
[[ $(grep '^closes:' "$work/run.out") =~ ([0-9]+)\ -\>\ ([0-9]+) ]] && [ "${BASH_REMATCH[2]}" -gt "${BASH_REMATCH[1]}" ] ||
	fail "the target logged no close of the vanished client's session"
expect_match "$work/run.out" '^blkd=0$' "rdmasec-blkd did not exit cleanly"
echo "blk_faults: ok"
