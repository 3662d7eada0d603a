# SPDX-License-Identifier: MIT
# make bench's libfabric rows, inside one fabric boot of 2 hosts (benchmarks/run.sh
# starts it): the same untouched programs over libfabric's own verbs provider
# and over rdmasec's (fi_rdmasec(7)), round after round, so a slow moment of
# the fabric hits both alike:
#   pp   fi_pingpong -e msg (server host 1, client host 2): its one-way latency
#        (usec/xfer) and bandwidth (MB/sec) of a ping-pong; over rdmasec only:
#        fi_pingpong takes no source address, and without one rdma_cm resolves
#        a destination on the fabric's one kernel to loopback on its device;
#   mpi  tests/fabric/fi_mpi.c under Open MPI, ofi MTL over PROVIDER;ofi_rxm
#        (rank 0 on host 1, rank 1 on host 2): median one-way latency of a
#        ping-pong, streaming bandwidth (windows of 16 messages), and both
#        ranks' CPU time per message (its own getrusage).
#   lat  the floor under both providers, no libfabric: perftest's ib_send_lat
#        (plain verbs, in the verbs column) and rdmasec-bench --op send --lat
#        --poll busy (librdmasec alone, in the rdmasec column), the send_lat
#        row of the fabric table run in this boot: what a provider adds is its
#        row less this one.
#
# usage: fi.sh FIDIR PKI RAW ROUNDS [SIZE:ITERS ...]
#   FIDIR: the snapshot of the provider and fi_mpi (benchmarks/run.sh; rdmasec-bench
#   in its parent); results in
#   RAW/fi/{pp,mpi,lat}-PROVIDER-SIZE-rROUND.txt; fi_pingpong's each with a .cpu
#   file: the guest's busy CPU ticks over the run and the clock rate (every host
#   shares one kernel: both ends); -base-: one 64-byte round trip, the start-up
#   alone. Default sizes 64:2000 4096:1000 65536:200.
set -u
fidir=$1 pki=$2 raw=$3/fi rounds=$4
shift 4
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64:2000 4096:1000 65536:200)
mkdir -p "$raw"
export FI_PROVIDER_PATH=$fidir FI_RDMASEC_CREDS=$pki
hz=$(getconf CLK_TCK)

busy_ticks() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# Each host's own device: rdmasec by address, verbs by device and interface
# (its default interface prefix is "ib"). FI_UNIVERSE_SIZE for both: rxm sizes
# each core CQ (rx + tx) x the universe size (default 256), past rxe's 32767
# entries, and verbs;ofi_rxm then fails to open.
pp_env() { # PROVIDER HOST
	if [ "$1" = rdmasec ]; then
		echo "FI_UNIVERSE_SIZE=16 FI_RDMASEC_ADDR=$(fabric ip "$2")"
	else
		echo "FI_UNIVERSE_SIZE=16 FI_VERBS_IFACE=fab$2 FI_VERBS_DEVICE_NAME=rxe$2"
	fi
}

# run_pp PROVIDER SIZE ITERS OUT: one fi_pingpong run; 1 if it failed.
run_pp() {
	local prov=$1 size=$2 iters=$3 out=$4 t0 spid rc
	t0=$(busy_ticks)
	# shellcheck disable=SC2046 # the helpers' words, split on purpose
	fabric on 1 env $(pp_env "$prov" 1) timeout 120 fi_pingpong -p "$prov" -e msg \
		-I "$iters" -S "$size" -B 47610 >"$out.server" 2>&1 &
	spid=$!
	fabric wait-port 47610 || { kill $spid 2>/dev/null; return 1; }
	# shellcheck disable=SC2046
	fabric on 2 env $(pp_env "$prov" 2) timeout 120 fi_pingpong -p "$prov" -e msg \
		-I "$iters" -S "$size" -P 47610 "$(fabric ip 1)" >"$out" 2>&1
	rc=$?
	wait $spid || rc=1
	echo "$(($(busy_ticks) - t0)) $hz" >"$out.cpu"
	return $rc
}

# run_mpi PROVIDER SIZE ITERS OUT (fi_mpi prints its ranks' CPU time itself)
run_mpi() {
	local prov=$1 size=$2 iters=$3 out=$4
	# shellcheck disable=SC2046
	timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov;ofi_rxm" -x FI_PROVIDER_PATH -x FI_RDMASEC_CREDS \
		-np 1 fabric on 1 env $(pp_env "$prov" 1) "$fidir/fi_mpi" bench "$size" "$iters" : \
		-np 1 fabric on 2 env $(pp_env "$prov" 2) "$fidir/fi_mpi" bench "$size" "$iters" >"$out" 2>&1
}

# run_lat PROVIDER SIZE ITERS OUT: ib_send_lat (verbs) or rdmasec-bench (rdmasec), one run.
run_lat() {
	local prov=$1 size=$2 iters=$3 out=$4 spid rc port
	local cmd=(ib_send_lat -s "$size" -n "$iters" -F -p 18515)
	port=18515
	if [ "$prov" = rdmasec ]; then
		cmd=("$fidir/../rdmasec-bench" --certs "$pki" --port 7472 --op send --lat --poll busy -s "$size" -n "$iters")
		port=7472
	fi
	# shellcheck disable=SC2016 # expanded on each host, by its own fabric environment
	fabric on 1 bash -c '"$@" $([ "$0" = verbs ] && echo -d "$FABRIC_DEV" -x "$FABRIC_GID_INDEX" || echo --source "$FABRIC_IP")' \
		"$prov" timeout 120 "${cmd[@]}" >"$out.server" 2>&1 &
	spid=$!
	fabric wait-port "$port" || { kill $spid 2>/dev/null; return 1; }
	# shellcheck disable=SC2016
	fabric on 2 bash -c '"$@" $([ "$0" = verbs ] && echo -d "$FABRIC_DEV" -x "$FABRIC_GID_INDEX" || echo --source "$FABRIC_IP") '"$(fabric ip 1)" \
		"$prov" timeout 120 "${cmd[@]}" >"$out" 2>&1
	rc=$?
	wait $spid || rc=1
	return $rc
}

failed=0
for r in $(seq 1 "$rounds"); do
	# fi_pingpong's one 64-byte round trip: start-up and connection set-up alone,
	# subtracted from its runs' CPU time to give CPU per message.
	run_pp rdmasec 64 1 "$raw/pp-rdmasec-base-r$r.txt" ||
		{ echo "fi: fi_pingpong over rdmasec, baseline, round $r failed" >&2; failed=1; }
	for s in "${sizes[@]}"; do
		size=${s%%:*} iters=${s##*:}
		for prov in verbs rdmasec; do
			[ "$prov" = verbs ] ||
				run_pp "$prov" "$size" "$iters" "$raw/pp-$prov-$size-r$r.txt" ||
				{ echo "fi: fi_pingpong over $prov, $size B, round $r failed" >&2; failed=1; }
			run_mpi "$prov" "$size" "$iters" "$raw/mpi-$prov-$size-r$r.txt" ||
				{ echo "fi: fi_mpi over $prov;ofi_rxm, $size B, round $r failed" >&2; failed=1; }
			run_lat "$prov" "$size" "$iters" "$raw/lat-$prov-$size-r$r.txt" ||
				{ echo "fi: the $prov floor (send latency without libfabric), $size B, round $r failed" >&2; failed=1; }
		done
		echo "fi: round $r, $size B done at ${SECONDS}s"
	done
done
exit $failed
