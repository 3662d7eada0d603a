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
# Then, same boot, the same sweep while fio verifies through /dev/nbd0
# (nbdkit with our plugin, 2 queues, and the kernel's nbd-client; 512-byte
# blocks for the same reason), fio starting again until the sweep is over
# and once more after it:
#  - the target audits a rebuild for a silent data path during the sweep;
#  - every fio run exits 0 with no verify error and no I/O error; the
#    kernel logged no nbd I/O error;
#  - no I/O in flight when the data path was rebuilt waited 2 s or more:
#    the outage (silence, PATH_CHECK, rebuild, commands sent again) is at
#    most the slowest one's wait (fio's latency log, in Unix times on
#    clock_gettime). Printed with it: the slowest I/O during the sweep and
#    of the whole round (on a loaded 2-core machine an emulated guest
#    stalls I/O 1-2 s now and then, attack or not).
# Rounds: up to 3 sweeps each, until one lands (a run's session may end
# between the sniff and the sweep).
# First, same boot, host 3 only listens while a client moves data with pool
# windows of 1 s (docs/blk.md, "Pool windows"): the keys in the target's
# RDMA WRITEs and READs change every second, a WRITE's never is a READ's,
# and never more than two windows of a direction are in use at once.
. "$(dirname "$0")/common.bash"

bin=$build/tools
blkd=$bin/blk/blkd/rdmasec-blkd
cli=$bin/blk/cli/rdmasec-blk
atk=$bin/attack/rdmasec-attack
plugin=$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so
for f in "$blkd" "$cli" "$atk" "$plugin"; do [ -e "$f" ] || fail "build it first (missing $f)"; done
for t in tcpdump nbdkit nbd-client fio; do
	command -v $t >/dev/null || fail "$t is missing (scripts/install-deps installs it)"
done
kroot=${RXE_FABRIC_CACHE:-$repo/build/fabric}/kernel/root
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
echo "sweep-start=$(date +%s.%N)"
"$atk" inject --op write --rkey "$rkey" --va "$va" --dst 10.77.0.2 --src 10.77.0.1 --qpn "$qpn" \
	--psn-sweep "$psn:20000" --iface fab3 --sport 4242 --data FORGED-INTO-THE-POOL --json >"$out.json" ||
	{ echo "inject failed"; exit 1; }
echo "sweep-end=$(date +%s.%N)"
after=$(rdma -d res show qp link rxe2/1 lqpn "$qpn" 2>/dev/null |
	awk '{ for (i = 1; i < NF; i++) if ($i == "rq-psn") print $(i + 1) }')
echo "attacker: qpn $qpn expects psn ${after:-(gone: rebuilt or ended)} after the sweep"
ATTACKER

cat >"$work/guest.sh" <<'GUEST'
set -u
blkd=$1 cli=$2 atk=$3 work=$4 plugin=$5 kroot=$6
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
fabric on 3 timeout 10 tcpdump -i fabbr -tt -nn -x -U \
	'udp dst port 4791 and src host 10.77.0.1 and dst host 10.77.0.2 and (udp[8] == 6 or udp[8] == 10 or udp[8] == 12)' \
	>"$work/windows.txt" 2>"$work/windows.err" &
cpid=$!
sleep 1
timeout 60 fabric on 2 "$cli" bench --server "$server" --certs "$work/pki" --export disk --source "$me" \
	--rw randrw --bs 64k --queue-depth 2 --size 2M --runtime 6 --pool-window-s 1 >"$work/windows.out" 2>&1
echo "windows=$?"
wait $cpid
blk 300 --rw write --queue-depth 16 --size 2M >"$work/pattern.out" 2>&1
echo "pattern=$?"
# A round is judged by the target's audit: a rebuild for a silent data path, or a run that failed
# (the black hole); a sweep that missed (the run's session ended first) and a clean run: again.
for round in 1 2 3; do
	n0=$(silent)
	blk 300 --rw randread --queue-depth 2 --size 2M >"$work/run$round.out" 2>&1 &
	rpid=$!
	timeout 60 fabric on 3 bash "$work/attacker.sh" "$atk" "$work/attack$round" >"$work/attack$round.out" 2>&1
	wait $rpid
	rc=$?
	echo "run$round=$rc"
	cat "$work/attack$round.out"
	[ "$(silent)" -gt "$n0" ] || [ $rc -ne 0 ] && { echo "round=$round"; break; }
done

# The same sweep while fio writes and verifies through /dev/nbd0.
modprobe -d "$kroot" nbd nbds_max=1 || echo "nbd=no module"
fabric on 2 nbdkit -U /tmp/blk.sock -P /tmp/nbdkit.pid "$plugin" server="$server" certs="$work/pki" export=disk \
	source="$me" queues=2 2>"$work/nbdkit.log"
echo "nbdkit=$?"
nbd-client -unix /tmp/blk.sock /dev/nbd0 -b 512 >"$work/nbd-client.out" 2>&1
echo "nbd-client=$?"
fio_run() {
	timeout 120 fio --name=pool --filename=/dev/nbd0 --ioengine=libaio --direct=1 --rw=randwrite --bs=512 \
		--iodepth=8 --offset=16M --size=1M --verify=crc32c --output-format=json --output="$work/$1.json" \
		--write_lat_log="$work/$1" --log_unix_epoch=1 --clocksource=clock_gettime --verify_state_save=0 \
		>"$work/$1.err" 2>&1
	echo "$1=$?"
}
# fio starts again until the sweep is over, then once more: the device must outlive the attack.
for round in 1 2 3; do
	n0=$(silent)
	rm -f /tmp/swept
	(i=0; while [ ! -e /tmp/swept ] && [ $i -lt 60 ]; do i=$((i + 1)); fio_run "fio$round-$i"; done) \
		>"$work/fio$round.out" &
	fpid=$!
	timeout 60 fabric on 3 bash "$work/attacker.sh" "$atk" "$work/nbdattack$round" >"$work/nbdattack$round.out" 2>&1
	touch /tmp/swept
	wait $fpid
	fio_run "fio$round-after" >>"$work/fio$round.out"
	cat "$work/nbdattack$round.out" "$work/fio$round.out"
	[ "$(silent)" -gt "$n0" ] || grep -q '=[1-9]' "$work/fio$round.out" && { echo "nbd-round=$round"; break; }
done
dmesg | grep -E 'nbd0|I/O error' >"$work/dmesg.txt"
nbd-client -d /dev/nbd0 >/dev/null 2>&1
kill -TERM "$(cat /tmp/nbdkit.pid)"
kill -TERM $tpid
wait $tpid
echo "blkd=$?"
GUEST

"$fabric" run --hosts 3 --timeout 900 "${build_share[@]}" -- bash "$work/guest.sh" "$blkd" "$cli" "$atk" "$work" \
	"$plugin" "$kroot" >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "fabric run failed"; }
cat "$work/out.txt"
expect_match "$work/out.txt" '^pattern=0$' "the pattern could not be written"
expect_match "$work/out.txt" '^windows=0$' "the run with 1 s pool windows failed"
python3 - "$work/windows.txt" <<'PY' || { cat "$work/windows.out" "$work/windows.err"; fail "the pool windows on the wire are not what docs/blk.md says"; }
import re, sys
# tcpdump -tt -x: a Unix time, then the IPv4 packet in hex. IPv4 (20) + UDP (8), then BTH (opcode at 0),
# then RETH (va 8, rkey 4, length 4): 6 RDMA WRITE First, 10 WRITE Only, 12 RDMA READ Request.
pkts, cur = [], None
for line in open(sys.argv[1]):
    if re.match(r"^[0-9]+\.[0-9]+ ", line):
        cur = [float(line.split()[0]), ""]
        pkts.append(cur)
    elif cur and re.match(r"^\s+0x[0-9a-f]+:", line):
        cur[1] += "".join(line.split()[1:])
seen = {"write": {}, "read": {}}
for t, h in pkts:
    if len(h) < 104:
        continue
    op = int(h[56:58], 16)
    way = "read" if op == 12 else "write"
    span = seen[way].setdefault(h[96:104], [t, t])
    span[1] = t
for way, keys in seen.items():
    spans = sorted(keys.values())
    print("pool windows on the wire: target %ss through %d rkeys in %.1f s: %s" % (
        way, len(spans), spans[-1][1] - spans[0][0] if spans else 0, ", ".join(sorted(keys, key=keys.get))))
    assert len(spans) >= 3, "fewer than 3 windows in a 6 s run with 1 s windows"
    for a, b in zip(spans, spans[2:]):
        assert a[1] < b[0], "three windows of one direction in use at once"
assert not set(seen["write"]) & set(seen["read"]), "a window the target writes through is also read through"
PY
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
echo "blk_pool_write: bench healed, the slowest command took $max us"

# Through /dev/nbd0.
expect_match "$work/out.txt" '^nbdkit=0$' "nbdkit did not start"
expect_match "$work/out.txt" '^nbd-client=0$' "nbd-client did not attach /dev/nbd0"
round=$(sed -n 's/^nbd-round=//p' "$work/out.txt")
[ -n "$round" ] || { tail -n 30 "$work/blkd.log" "$work/nbdkit.log"; fail "no sweep landed during fio in 3 rounds"; }
tail -n 20 "$work/nbdkit.log"
cat "$work/dmesg.txt"
grep -q 'I/O error' "$work/dmesg.txt" && fail "the kernel logged an I/O error on /dev/nbd0"
python3 - "$work" "$round" <<'PY' || fail "fio through /dev/nbd0 did not come through the sweep clean"
import datetime, json, re, sys
work, rnd = sys.argv[1], sys.argv[2]
runs = open("%s/fio%s.out" % (work, rnd)).read().split()
assert runs and all(r.endswith("=0") for r in runs), ("a fio run failed", runs)
ios, lat = 0, []
for r in runs:
    name = r.split("=")[0]
    job = json.load(open("%s/%s.json" % (work, name)))["jobs"][0]
    assert job["error"] == 0, (name, job["error"])
    ios += job["read"]["total_ios"] + job["write"]["total_ios"]
    # Latency log: completion time (Unix ms), latency (ns), direction (0 read, 1 write), size, offset.
    for line in open("%s/%s_clat.1.log" % (work, name)):
        f = line.split(",")
        done, wait = int(f[0]) / 1e3, int(f[1]) / 1e9
        lat.append((done - wait, done, wait, name, "read" if f[2].strip() == "0" else "write"))
assert ios > 0 and lat, "fio moved nothing"
att = open("%s/nbdattack%s.out" % (work, rnd)).read()
start = float(re.search(r"^sweep-start=([0-9.]+)$", att, re.M).group(1))
end = float(re.search(r"^sweep-end=([0-9.]+)$", att, re.M).group(1))
rebuilt = None
for line in open("%s/audit.jsonl" % work):
    if '"event":"rebuild"' not in line or "data path silent" not in line:
        continue
    t = json.loads(line)["time"]
    at = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if start - 0.001 <= at <= end + 2:
        rebuilt = at
        break
def show(what, io):
    began, done, wait, name, d = io
    print("nbd: %s: a %s of %s waited %.3f s, from %.3f s to %.3f s after the sweep began%s"
          % (what, d, name, wait, began - start, done - start,
             "; the rebuild %.3f s into it" % (rebuilt - began) if rebuilt and began <= rebuilt <= done else ""))
swept = [io for io in lat if io[0] <= end + 2 and io[1] >= start]
print("nbd: %d fio runs, %d I/Os, %d of them in flight during the sweep (%.1f s)" % (len(runs), ios, len(swept), end - start))
assert swept, "no I/O was in flight during the sweep"
assert rebuilt is not None, "no rebuild for a silent data path during the sweep"
print("nbd: rebuild for the silent data path %.3f s after the sweep began" % (rebuilt - start))
healed = [io for io in lat if io[0] <= rebuilt <= io[1]]
assert healed, "no I/O was in flight when the data path was rebuilt"
show("the slowest of the %d in flight at the rebuild" % len(healed), max(healed, key=lambda io: io[2]))
show("the slowest during the sweep", max(swept, key=lambda io: io[2]))
show("the slowest of the round", max(lat, key=lambda io: io[2]))
assert max(io[2] for io in healed) < 2, "an I/O through /dev/nbd0 waited 2 s or more: the data path did not heal within 2 s"
PY
echo "blk_pool_write: ok"
