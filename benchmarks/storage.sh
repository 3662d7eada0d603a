# SPDX-License-Identifier: MIT
# make bench's storage rows, inside one fabric boot of 2 hosts (benchmarks/run.sh
# starts it): the kernel's NVMe over Fabrics (nvmet-rdma on host 1, nvme-rdma
# on host 2, fio with libaio on /dev/nvmeXnY) against rdmasec-blk (rdmasec-blkd
# on host 1; on host 2 the direct client `rdmasec-blk bench`, and fio's nbd
# engine through nbdkit and our plugin), all on the same backing store (host
# 1's RAM disk /dev/ram0). The three systems run each workload in turn, round
# after round, so a slow moment of the fabric hits all of them alike.
#
# usage: storage.sh BIN PKI RAW ROUNDS RUNTIME_S RAMP_S [WORKLOAD,...] [BLKD_ARGS] [BLKOLD_ARGS]
#   BIN: the snapshot of the programs (benchmarks/run.sh); RAW: where the results go
#   (RAW/storage/SYSTEM-WORKLOAD-rROUND.json, with RAW/storage/*.cpu: the
#   guest's busy CPU ticks over the run's counted RUNTIME_S, both ends, since all hosts
#   share one kernel: benchmarks/busy.py). Every run first runs RAMP_S seconds it does
#   not count (fio's ramp_time, rdmasec-blk bench's --ramp-time): a new rdmasec session's
#   first seconds carry the library's set-up work (its pool of queue pairs refilled), where
#   the kernel's NVMe-oF connection was made once, before the rounds. With BIN/old (benchmarks/run.sh's copy of BENCH_STORAGE_OLD), that
#   build's target and direct client run too, as system blkold, in the same
#   rounds, and its nbdkit plugin (if it has one) as nbdold: an A/B of two
#   builds against the same kernel reference. WORKLOAD,...:
#   only those rows (names as below; default all). BLKD_ARGS, BLKOLD_ARGS: more
#   options for the target, and for the old one (split at spaces).
set -u
bin=$1 pki=$2 raw=$3 rounds=$4 runtime=$5 ramp=$6 only=${7:-}
read -ra blkd_args <<<"${8:-}"
read -ra blkold_args <<<"${9:-}"
here=$(cd "$(dirname "$0")" && pwd)
out=$raw/storage
s1=$(fabric ip 1) s2=$(fabric ip 2)
port=7473 old_port=7474
sock=/tmp/bench-nbd.sock old_sock=/tmp/bench-nbd-old.sock
mkdir -p "$out"
# The snapshot's librdmasec, for our programs and the plugin nbdkit loads.
export LD_LIBRARY_PATH=$bin

# NAME RW BS DEPTH
workloads=(
	"randread-4k-qd1 randread 4k 1"
	"randread-4k-qd32 randread 4k 32"
	"randwrite-4k-qd1 randwrite 4k 1"
	"randwrite-4k-qd32 randwrite 4k 32"
	"read-128k-qd16 read 128k 16"
	"write-128k-qd16 write 128k 16"
)
if [ -n "$only" ]; then
	kept=()
	for w in "${workloads[@]}"; do
		[[ ",$only," == *",${w%% *},"* ]] && kept+=("$w")
	done
	[ ${#kept[@]} -gt 0 ] || { echo "storage: no workload named in '$only'" >&2; exit 2; }
	workloads=("${kept[@]}")
fi
# Every run covers this much of the export (it is 256 MiB).
span=192M

die() {
	echo "storage: $*" >&2
	exit 1
}

# The guest's busy time, sampled (in the guest's memory, not the 9p share) for each run's window.
busy_log=/tmp/bench-busy.log
python3 "$here/busy.py" sample "$busy_log" &
sampler=$!

# measure FILE CMD...: runs CMD with stdout into FILE.json, and the guest's busy ticks over its counted
# window into FILE.cpu (the window the direct client's JSON names, else the end of the run's).
measure() {
	local file=$1 rc=0 end window
	shift
	"$@" >"$file.json" 2>"$file.err" || rc=$?
	end=$(date +%s%3N)
	window=$(grep -o '"start_ms":[0-9]*,"end_ms":[0-9]*' "$file.json" | tr -dc '0-9,' | awk -F, '{ print $2, $1 }')
	# shellcheck disable=SC2086 # window: END START, two numbers or nothing
	python3 "$here/busy.py" window "$busy_log" "$runtime" ${window:-$end} >"$file.cpu" || rc=1
	[ $rc = 0 ] || echo "storage: $(basename "$file") failed (exit $rc): $(tail -n 2 "$file.err" | tr '\n' ' ')" >&2
	return $rc
}

fio_job() {
	local rw=$1 bs=$2 depth=$3
	shift 3
	timeout $((ramp + runtime + 60)) fio --name=bench --rw="$rw" --bs="$bs" --iodepth="$depth" --size="$span" --runtime="$runtime" --time_based \
		--ramp_time="$ramp" --output-format=json "$@"
}

# The block device is the one kernel's: which host runs fio does not matter.
nvmf_run() {
	fio_job "$@" --filename="$nvme_dev" --ioengine=libaio --direct=1
}

blk_run() {
	local rw=$1 bs=$2 depth=$3
	timeout $((ramp + runtime + 60)) fabric on 2 "$bin/rdmasec-blk" bench --server "$s1:$port" --certs "$pki" --export bench \
		--source "$s2" --rw "$rw" --bs "$bs" --queue-depth "$depth" --size "$span" --runtime "$runtime" --ramp-time "$ramp" --json
}

# An older build's client: --iodepth, the spelling every build knows (newer ones warn that it is --queue-depth).
blkold_run() {
	local rw=$1 bs=$2 depth=$3
	timeout $((ramp + runtime + 60)) fabric on 2 env LD_LIBRARY_PATH="$bin/old" "$bin/old/rdmasec-blk" bench \
		--server "$s1:$old_port" --certs "$pki" --export bench --source "$s2" \
		--rw "$rw" --bs "$bs" --iodepth "$depth" --size "$span" --runtime "$runtime" "${old_ramp[@]}" --json
}

nbd_run() {
	fio_job "$@" --ioengine=nbd --uri="nbd+unix:///?socket=$sock"
}

nbdold_run() {
	fio_job "$@" --ioengine=nbd --uri="nbd+unix:///?socket=$old_sock"
}

start_nvmf() {
	fabric nvmf-target 1 --size 256 >"$out/nvmf-target.txt" || die "the kernel's NVMe-oF target did not start"
	fabric nvmf-connect 2 1 >"$out/nvmf-connect.txt" || die "nvme connect failed"
	nvme_dev=$(awk '$1 == "device" { print $2 }' "$out/nvmf-connect.txt")
	[ -b "$nvme_dev" ] || die "no NVMe-oF block device ($(cat "$out/nvmf-connect.txt"))"
}

# rdmasec-blkd serves the same RAM disk; only one of the systems does I/O at a time. Its audit log goes
# to the guest's own memory (a target's local disk), not the 9p share the raw outputs are on: each write
# there is a trip to the host the kernel's target never makes. Copied to RAW at the end.
audit=/tmp/bench-blkd-audit.jsonl old_audit=/tmp/bench-blkold-audit.jsonl
start_blk() {
	fabric on 1 "$bin/rdmasec-blkd" --certs "$pki" --listen "$s1:$port" --export bench=/dev/ram0 --rw '*' \
		--audit "$audit" --metrics "$out/blkd.prom" "${blkd_args[@]}" 2>"$out/blkd.log" &
	blkd_pid=$!
	fabric wait-port $port 60 || die "rdmasec-blkd did not listen: $(tail -n 3 "$out/blkd.log")"
	if [ -d "$bin/old" ]; then
		fabric on 1 env LD_LIBRARY_PATH="$bin/old" "$bin/old/rdmasec-blkd" --certs "$pki" --listen "$s1:$old_port" \
			--export bench=/dev/ram0 --rw '*' --audit "$old_audit" --metrics "$out/blkold.prom" \
			"${blkold_args[@]}" 2>"$out/blkold.log" &
		blkold_pid=$!
		fabric wait-port $old_port 60 || die "the old rdmasec-blkd did not listen: $(tail -n 3 "$out/blkold.log")"
	fi
	fabric on 2 nbdkit -U "$sock" -P /tmp/bench-nbdkit.pid "$bin/nbdkit-rdmasec-plugin.so" server="$s1:$port" \
		certs="$pki" export=bench source="$s2" 2>"$out/nbdkit.log" || die "nbdkit did not start"
	if [ -f "$bin/old/nbdkit-rdmasec-plugin.so" ]; then
		fabric on 2 env LD_LIBRARY_PATH="$bin/old" nbdkit -U "$old_sock" -P /tmp/bench-nbdkit-old.pid \
			"$bin/old/nbdkit-rdmasec-plugin.so" server="$s1:$old_port" certs="$pki" export=bench source="$s2" \
			2>"$out/nbdkit-old.log" || die "the old nbdkit did not start"
	fi
}

stop_all() {
	kill "$sampler" 2>/dev/null
	[ -f /tmp/bench-nbdkit.pid ] && kill -TERM "$(cat /tmp/bench-nbdkit.pid)" 2>/dev/null
	[ -f /tmp/bench-nbdkit-old.pid ] && kill -TERM "$(cat /tmp/bench-nbdkit-old.pid)" 2>/dev/null
	[ -n "${blkd_pid:-}" ] && kill -TERM "$blkd_pid" 2>/dev/null && wait "$blkd_pid" 2>/dev/null
	[ -n "${blkold_pid:-}" ] && kill -TERM "$blkold_pid" 2>/dev/null && wait "$blkold_pid" 2>/dev/null
	[ -f "$audit" ] && cp "$audit" "$out/blkd-audit.jsonl"
	[ -f "$old_audit" ] && cp "$old_audit" "$out/blkold-audit.jsonl"
	fabric nvmf-disconnect >/dev/null 2>&1
	fabric nvmf-target-stop >/dev/null 2>&1
}

# An older direct client may not know --ramp-time: its runs then count their first seconds too.
old_ramp=()
if [ -d "$bin/old" ]; then
	if LD_LIBRARY_PATH="$bin/old" "$bin/old/rdmasec-blk" bench --help 2>&1 | grep -q -- --ramp-time; then
		old_ramp=(--ramp-time "$ramp")
	else
		echo "storage: BENCH_STORAGE_OLD's rdmasec-blk has no --ramp-time: its runs count their set-up" >&2
	fi
fi

trap stop_all EXIT
start_nvmf
start_blk
rc=0
for round in $(seq 1 "$rounds"); do
	for w in "${workloads[@]}"; do
		read -r name rw bs depth <<<"$w"
		echo "storage: round $round, $name" >&2
		measure "$out/nvmf-$name-r$round" nvmf_run "$rw" "$bs" "$depth" || rc=1
		measure "$out/blk-$name-r$round" blk_run "$rw" "$bs" "$depth" || rc=1
		measure "$out/nbd-$name-r$round" nbd_run "$rw" "$bs" "$depth" || rc=1
		if [ -d "$bin/old" ]; then
			measure "$out/blkold-$name-r$round" blkold_run "$rw" "$bs" "$depth" || rc=1
		fi
		if [ -f "$bin/old/nbdkit-rdmasec-plugin.so" ]; then
			measure "$out/nbdold-$name-r$round" nbdold_run "$rw" "$bs" "$depth" || rc=1
		fi
	done
done
exit $rc
