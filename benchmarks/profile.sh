#!/bin/bash
# SPDX-License-Identifier: MIT
# Where rdmasec-bench's time goes, in the emulated fabric: one boot of two
# hosts, the server on host 1 and the client on host 2, each under
# `perf record` (cpu-clock: the guest has no hardware counters), then
# `perf report` here, natively, against the same binaries (the guest runs the
# host's files over 9p) and the guest kernel's symbols.
#
# usage: benchmarks/profile.sh [rdmasec-bench client options, e.g. --op connect -n 20]
#        benchmarks/profile.sh blk [WORKLOAD...]
# Writes BUILD/benchmarks/profile/{client,server}.perf.data and .txt (flat
# profile by shared object and symbol, the top 60 lines printed here).
#
# blk: rdmasec-blkd on host 1 (a 256 MiB export on the RAM disk /dev/ram0, audit
# on) and `rdmasec-blk bench` on host 2, one WORKLOAD after another, each
# twice: under perf record (both ends), then counting (system calls of each
# end, the TLS channel's TCP segments, RoCE packets, busy time). WORKLOAD is
# RW-BS-qdDEPTH (default: randread-4k-qd1 randwrite-4k-qd1 randread-4k-qd32
# randwrite-4k-qd32). Writes BUILD/benchmarks/profile/WORKLOAD/{client,server}.txt
# (top symbols), {client,server}.dso.txt, counts.txt (per I/O) and the
# client's results (perf.json, count-{short,long}.json). PROFILE_DELAY: ms of each
# run perf leaves out (set-up; default 4000).
# PROFILE_RUNTIME: seconds per run (default 12; counts: that run minus one of 2 s).
# RSEC_BUILD_DIR: the build (default build/). PROFILE_FREQ: samples/s (default 2000).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${RSEC_BUILD_DIR:-$top/build}" && pwd) || exit 2
out=$build/benchmarks/profile
freq=${PROFILE_FREQ:-2000}
bench=$build/tools/bench/rdmasec-bench
command -v perf >/dev/null || { echo "profile: perf is missing (apt install linux-perf)" >&2; exit 2; }
[[ $freq =~ ^[1-9][0-9]*$ ]] || { echo "profile: PROFILE_FREQ '$freq' is not a number" >&2; exit 2; }
if [ "${1:-}" = blk ]; then
	shift
	exec bash "$top/benchmarks/profile_blk.sh" "$top" "$build" "$out" "$freq" "$@"
fi
[ -x "$bench" ] || { echo "profile: build rdmasec-bench first (make build)" >&2; exit 2; }
if [ $# = 0 ]; then
	set -- --op send -s 64 -n 2000
fi
rm -rf "$out"
mkdir -p "$out"
"$build/tools/keygen/rdmasec-keygen" "$out/pki" >/dev/null || exit 1

cat >"$out/guest.sh" <<'EOF'
set -u
bench=$1 out=$2 freq=$3
shift 3
s1=$(fabric ip 1)
fabric on 1 perf record -q -F "$freq" -e cpu-clock -g -o "$out/server.perf.data" -- \
	"$bench" --certs "$out/pki" --source "$s1" >"$out/server.out" 2>&1 &
spid=$!
fabric wait-port 7472 120 || { cat "$out/server.out"; exit 1; }
fabric on 2 perf record -q -F "$freq" -e cpu-clock -g -o "$out/client.perf.data" -- \
	"$bench" --certs "$out/pki" --source "$(fabric ip 2)" "$@" "$s1" >"$out/client.out" 2>&1
echo "client=$?"
wait $spid
echo "server=$?"
# The guest kernel's symbols, for perf report out here.
echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null
cat /proc/kallsyms >"$out/kallsyms"
EOF

"$top/fabric/rxe-fabric" run --hosts 2 --mem 2048 --timeout 1800 --share "$out" -- \
	bash "$out/guest.sh" "$bench" "$out" "$freq" "$@" >"$out/run.out" 2>&1
rc=$?
cat "$out/run.out" "$out/client.out"
[ $rc = 0 ] && grep -q '^client=0$' "$out/run.out" || { echo "profile: the run failed" >&2; exit 1; }
for side in client server; do
	perf report -i "$out/$side.perf.data" --kallsyms "$out/kallsyms" --no-children --sort dso,sym --percent-limit 0.5 --stdio \
		2>/dev/null | grep -v '^$' >"$out/$side.txt"
	echo "=== $side: $out/$side.txt"
	grep -E '^ +[0-9]' "$out/$side.txt" | head -n 60
done
