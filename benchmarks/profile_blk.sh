#!/bin/bash
# SPDX-License-Identifier: MIT
# benchmarks/profile.sh blk: where rdmasec-blk's time goes, per I/O (see
# benchmarks/profile.sh for the usage). One fabric boot; every workload runs
# twice: under perf record (both ends), then under perf stat counting each
# end's system calls (tracepoints: strace's ptrace is too slow for the
# emulated guest, the set-up alone times out), with the guest's TCP
# segments (the TLS control channel: nothing else uses TCP meanwhile) and
# RoCE packets (sealed messages and one-sided transfers) over the run.
#
# usage: profile_blk.sh TOP BUILD OUT FREQ [WORKLOAD...]
set -u
top=$1 build=$2 out=$3 freq=$4
shift 4
runtime=${PROFILE_RUNTIME:-12}
delay=${PROFILE_DELAY:-4000}
[[ $runtime =~ ^[1-9][0-9]*$ && $runtime -gt 2 ]] || { echo "profile: PROFILE_RUNTIME '$runtime' is not a number > 2" >&2; exit 2; }
[[ $delay =~ ^[0-9]+$ ]] || { echo "profile: PROFILE_DELAY '$delay' is not a number" >&2; exit 2; }
for p in tools/blk/blkd/rdmasec-blkd tools/blk/cli/rdmasec-blk tools/keygen/rdmasec-keygen; do
	[ -x "$build/$p" ] || { echo "profile: build $p first (make build)" >&2; exit 2; }
done
[ $# -gt 0 ] || set -- randread-4k-qd1 randwrite-4k-qd1 randread-4k-qd32 randwrite-4k-qd32
for w in "$@"; do
	[[ $w =~ ^(randread|randwrite|read|write)-[0-9]+[kKmM]?-qd[0-9]+$ ]] ||
		{ echo "profile: workload '$w' is not RW-BS-qdDEPTH (e.g. randread-4k-qd1)" >&2; exit 2; }
done
rm -rf "$out"
mkdir -p "$out"
"$build/tools/keygen/rdmasec-keygen" "$out/pki" >/dev/null || exit 1

cat >"$out/guest.sh" <<'GUEST'
set -u
build=$1 out=$2 freq=$3 runtime=$4 delay=$5
shift 5
blkd=$build/tools/blk/blkd/rdmasec-blkd blk=$build/tools/blk/cli/rdmasec-blk
# The build's own librdmasec, also for a copy of a build (its runpath names the original).
export LD_LIBRARY_PATH=$build/lib
s1=$(fabric ip 1) s2=$(fabric ip 2)
# The RAM disk make bench's storage rows use (and the kernel's NVMe-oF serves from).
img=$(fabric ram-disk 256) || exit 1
calls=$(printf 'syscalls:sys_enter_%s,' read write readv writev sendmsg recvmsg sendto recvfrom poll ppoll \
	epoll_wait epoll_pwait ioctl futex clock_nanosleep pwrite64 pread64 preadv2 pwritev2 fdatasync)
calls=${calls%,}
# Without tracefs in the guest, the counting pass counts CPU time alone.
perf stat -e "$calls" -o /dev/null -- true 2>/dev/null || calls=task-clock
# counters FILE: the guest's TCP segments out, RoCE packets sent (every host's rxe), busy ticks.
counters() {
	{
		awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ { print "tcp_segments", $12 }' /proc/net/snmp
		cat /sys/class/infiniband/rxe*/ports/1/hw_counters/sent_pkts | awk '{ n += $1 } END { print "roce_packets", n }'
		awk '$1 == "cpu" { print "busy_ticks", $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
	} >"$1"
}
# run_pass WORKLOAD PASS RUNTIME: the target and the client; PASS perf records both ends from
# DELAY ms after the client started (its set-up and the target's are not what we look at), PASS
# count-* counts each end's system calls and the guest's counters over the client's whole run.
run_pass() {
	local w=$1 pass=$2 secs=$3 d=$out/$1 rw bs qd bpid tpid=
	IFS=- read -r rw bs qd <<<"$w"
	qd=${qd#qd}
	fabric on 1 "$blkd" --certs "$out/pki" --listen "$s1:7472" --export "bench=$img,size=256M" --rw '*' \
		--audit "/tmp/audit-$w-$pass.jsonl" 2>"$d/blkd-$pass.log" &
	bpid=$!
	fabric wait-port 7472 120 || { cat "$d/blkd-$pass.log"; return 1; }
	local -a client_tool
	if [ "$pass" = perf ]; then
		client_tool=(perf record -q -F "$freq" -e cpu-clock -g -D "$delay" -o "$d/client.perf.data" --)
		{ sleep "$((delay / 1000)).$((delay % 1000 / 100))"
		  exec perf record -q -F "$freq" -e cpu-clock -g -p "$bpid" -o "$d/server.perf.data"; } &
		tpid=$!
	else
		client_tool=(perf stat -x, -o "$d/client-$pass.stat" -e "$calls" --)
		perf stat -x, -o "$d/server-$pass.stat" -e "$calls" -p "$bpid" &
		tpid=$!
	fi
	counters "$d/$pass.before"
	fabric on 2 "${client_tool[@]}" "$blk" bench --server "$s1:7472" --certs "$out/pki" --export bench \
		--source "$s2" --rw "$rw" --bs "$bs" --queue-depth "$qd" --size 192M --runtime "$secs" --json \
		>"$d/$pass.json" 2>"$d/client-$pass.err"
	local rc=$?
	counters "$d/$pass.after"
	kill -INT "$tpid"
	wait "$tpid"
	kill -TERM "$bpid"
	wait "$bpid"
	# The audit log on the guest's own memory (storage.sh says why), kept with the run's outputs.
	cp "/tmp/audit-$w-$pass.jsonl" "$d/audit-$pass.jsonl"
	echo "$w $pass client=$rc"
}
for w in "$@"; do
	mkdir -p "$out/$w"
	run_pass "$w" perf "$runtime"
	run_pass "$w" count-short 2
	run_pass "$w" count-long "$runtime"
done
echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null
cat /proc/kallsyms >"$out/kallsyms"
GUEST

"$top/fabric/rxe-fabric" run --hosts 2 --mem 2048 --timeout 2400 --share "$out" -- \
	bash "$out/guest.sh" "$build" "$out" "$freq" "$runtime" "$delay" "$@" >"$out/run.out" 2>&1
rc=$?
cat "$out/run.out"
[ $rc = 0 ] || { echo "profile: the run failed" >&2; exit 1; }

# Per I/O of the count pass: each end's system calls (perf stat), the guest's
# TCP segments, RoCE packets and busy time.
per_io_counts() {
	python3 - "$1" <<'PY2'
import json, os, sys
d = sys.argv[1]
def ios(p):
    r = json.load(open(os.path.join(d, p + ".json")))
    return r["read"]["ios"] + r["write"]["ios"]
def kv(name):
    return {k: int(v) for k, v in (l.split() for l in open(os.path.join(d, name)))}
def calls(name):
    out = {}
    for line in open(os.path.join(d, name)):
        f = line.strip().split(",")
        if len(f) > 2 and f[2].startswith("syscalls:sys_enter_") and f[0].isdigit():
            out[f[2][len("syscalls:sys_enter_"):]] = int(f[0])
    return out
def delta(p):
    b, a = kv(p + ".before"), kv(p + ".after")
    return {k: a[k] - b[k] for k in a}
n = ios("count-long") - ios("count-short")
if n <= 0:
    sys.exit("the long count run did no more I/O than the short one")
hz = os.sysconf("SC_CLK_TCK")
g = {k: delta("count-long")[k] - delta("count-short")[k] for k in ("tcp_segments", "roce_packets", "busy_ticks")}
print(f"# per I/O: the long count run minus the short one ({n} I/Os more), so set-up cancels out")
print(f"{g['tcp_segments'] / n:8.2f}  TCP segments (the TLS control channel, both ways)")
print(f"{g['roce_packets'] / n:8.2f}  RoCE packets (both ways)")
print(f"{g['busy_ticks'] * 1000 / hz / n:8.2f}  ms guest busy time (both ends and the kernel)")
for side in ("client", "server"):
    lo, hi = calls(side + "-count-short.stat"), calls(side + "-count-long.stat")
    for k in sorted(hi, key=lambda k: -(hi[k] - lo.get(k, 0))):
        if (hi[k] - lo.get(k, 0)) / n >= 0.05:
            print(f"{(hi[k] - lo.get(k, 0)) / n:8.2f}  {side} {k}")
PY2
}

for w in "$@"; do
	d=$out/$w
	echo "=== $w: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); d=r["read"] if r["read"]["ios"] else r["write"]; print("IOPS %.0f p50 %.0f us, CPU %.1f us/I/O (client, under perf)" % (d["iops"], d["clat_us"]["p50"], r["cpu"]["us_per_io"]))' "$d/perf.json" 2>/dev/null)"
	for side in client server; do
		perf report -i "$d/$side.perf.data" --kallsyms "$out/kallsyms" --no-children --sort dso --stdio \
			2>/dev/null | grep -E '^ +[0-9]' >"$d/$side.dso.txt"
		perf report -i "$d/$side.perf.data" --kallsyms "$out/kallsyms" --no-children -g none --sort dso,sym \
			--percent-limit 0.5 --stdio 2>/dev/null | grep -E '^ +[0-9]' >"$d/$side.txt"
		echo "--- $side: by shared object"
		head -n 8 "$d/$side.dso.txt"
		echo "--- $side: top symbols"
		head -n 15 "$d/$side.txt"
	done
	per_io_counts "$d" >"$d/counts.txt"
	cat "$d/counts.txt"
done
