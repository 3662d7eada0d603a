#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench: rdmasec against the plain-verbs tools, side by side.
#
#  1. One fabric boot (2 hosts): perftest (ib_send_bw, ib_write_bw, ib_read_bw,
#     ib_send_lat, ib_write_lat, ib_read_lat) and rdmasec-bench with the same
#     sizes and iterations; connection set-up, ucmatose (rdma_cm) against
#     rdmasec-bench --op connect; then qpn-entropy (QPN guessing, docs/qpn.md).
#     A second boot (2 hosts) for storage: the kernel's NVMe-oF with fio against
#     rdmasec-blk (its direct client, and fio through nbdkit), benchmarks/storage.sh.
#     A third (2 hosts) for libfabric: fi_pingpong and an MPI ping-pong (Open MPI's ofi
#     MTL over rxm) over libfabric's verbs provider against rdmasec's, benchmarks/fi.sh.
#  2. Natively: seal-speed (rsec_seal_frame/rsec_open_frame per AEAD and size)
#     against `openssl speed -evp` and `openssl speed -aead -evp`.
#  3. benchmarks/report.py: one table of ratios, BUILD/benchmarks/results.json and
#     BUILD/benchmarks/results.svg. docs/bench.md explains the table.
#
# Environment:
#   BENCH_ARGS         options for qpn-entropy (e.g. '--trials 500 --pool 128:16')
#   BENCH_SIZES        'SIZE:ITERS ...' (default '64:1000 4096:500 65536:100 1048576:10')
#   BENCH_CONNECTIONS  connections for the set-up test (default 20)
#   BENCH_POLL         rdmasec-bench --poll for its clients and send servers: busy (default; perftest
#                      polls too) or event
#   BENCH_TX_DEPTH     -t of every bandwidth test, perftest's and rdmasec-bench's write and read
#                      (default 128, perftest's)
#   BENCH_CQ_MOD       -Q of the same tests (default 100, perftest's)
#   BENCH_TESTS        subset of send_bw,write_bw,write_bw_q4,read_bw,send_lat,write_lat,read_lat,
#                      sealed_read_lat,sealed_read_bw,sealed_write_lat,connect,qp,qpn,seal,storage,fi
#                      (default: all)
#   BENCH_STORAGE      'ROUNDS:SECONDS[:RAMP]' of the storage rows (default 3:4:3: three interleaved
#                      rounds, four seconds counted per run after three that are not)
#   BENCH_FI           rounds of the libfabric rows (default 3, interleaved: verbs, then rdmasec, per size)
#   BENCH_FI_SIZES     'SIZE:ITERS ...' of the libfabric rows (default '64:2000 4096:1000 65536:200')
#   BENCH_STORAGE_ROWS only these storage rows, comma-separated (randread-4k-qd1, randread-4k-qd32,
#                      randwrite-4k-qd1, randwrite-4k-qd32, read-128k-qd16, write-128k-qd16; default all)
#   BENCH_STORAGE_OLD  another build directory (e.g. of an older commit): its rdmasec-blkd and
#                      direct client run in the storage rounds too, as system blkold, and its
#                      nbdkit plugin (if built) as nbdold (an A/B)
#   BENCH_BLKD_ARGS    more rdmasec-blkd options for the storage rows (e.g. --busy-poll-us 2000),
#   BENCH_BLKOLD_ARGS  ... for BENCH_STORAGE_OLD's: an A/B of one build's options, with
#                      BENCH_STORAGE_OLD naming the same build
#   RSEC_BUILD_DIR     the build (default build/)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${RSEC_BUILD_DIR:-$top/build}" && pwd) || exit 2
out=$build/benchmarks
raw=$out/raw
bin=$out/bin
sizes=${BENCH_SIZES:-64:1000 4096:500 65536:100 1048576:10}
conns=${BENCH_CONNECTIONS:-20}
poll=${BENCH_POLL:-busy}
tx_depth=${BENCH_TX_DEPTH:-128}
cq_mod=${BENCH_CQ_MOD:-100}
all_tests=send_bw,write_bw,write_bw_q4,read_bw,send_lat,write_lat,read_lat,sealed_read_lat,sealed_read_bw,sealed_write_lat,connect,qp,qpn,seal,storage,fi
tests=${BENCH_TESTS:-$all_tests}
storage=${BENCH_STORAGE:-3:4:3}
read -r -a qpn_args <<<"${BENCH_ARGS:-}"

die() {
	echo "bench: $*" >&2
	exit 2
}

check_inputs() {
	local p
	for p in tools/bench/rdmasec-bench tools/keygen/rdmasec-keygen benchmarks/qpn-entropy benchmarks/seal-speed; do
		[ -x "$build/$p" ] || die "$build/$p is not built (make build)"
	done
	for p in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat ucmatose openssl python3; do
		command -v "$p" >/dev/null || die "$p is missing (scripts/install-deps)"
	done
	local pair
	for pair in $sizes; do
		[[ $pair =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || die "BENCH_SIZES: '$pair' is not SIZE:ITERS"
	done
	[[ $conns =~ ^[1-9][0-9]*$ ]] || die "BENCH_CONNECTIONS: '$conns' is not a positive number"
	[[ $poll =~ ^(busy|event)$ ]] || die "BENCH_POLL: '$poll' is not busy or event"
	# rdmasec-bench's range (the library's RSEC_MAX_INFLIGHT)
	local v
	for v in "BENCH_TX_DEPTH $tx_depth" "BENCH_CQ_MOD $cq_mod"; do
		if ! [[ ${v#* } =~ ^[1-9][0-9]{0,3}$ ]] || [ "${v#* }" -gt 4096 ]; then
			die "${v%% *}: '${v#* }' is not in 1..4096"
		fi
	done
	[[ $storage =~ ^[1-9][0-9]?:[1-9][0-9]{0,2}(:[0-9]{1,2})?$ ]] ||
		die "BENCH_STORAGE: '$storage' is not ROUNDS:SECONDS or ROUNDS:SECONDS:RAMP"
	[[ $storage == *:*:* ]] || storage=$storage:3
	s_secs=${storage#*:}
	[ "${s_secs%%:*}" -ge 2 ] ||
		die "BENCH_STORAGE: '$storage': runs of at least 2 s (fio's CPU is taken over all but a run's last second)"
	if wanted storage; then
		for p in tools/blk/blkd/rdmasec-blkd tools/blk/cli/rdmasec-blk tools/blk/nbdkit/nbdkit-rdmasec-plugin.so; do
			[ -f "$build/$p" ] || die "$build/$p is not built (make build)"
		done
		for p in fio nvme nbdkit; do
			command -v "$p" >/dev/null || die "$p is missing (scripts/install-deps)"
		done
	fi
	if wanted fi; then
		[[ ${BENCH_FI:-3} =~ ^[1-9][0-9]?$ ]] || die "BENCH_FI: '${BENCH_FI}' is not a number of rounds (1..99)"
		for pair in ${BENCH_FI_SIZES:-}; do
			[[ $pair =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || die "BENCH_FI_SIZES: '$pair' is not SIZE:ITERS"
		done
		for p in fi/librdmasec-fi.so fi/fi_mpi; do
			[ -f "$build/$p" ] || die "$build/$p is not built (needs libfabric-dev and libopenmpi-dev; make build)"
		done
		for p in fi_pingpong mpirun; do
			command -v "$p" >/dev/null || die "$p is missing (scripts/install-deps)"
		done
	fi
	local t
	for t in ${tests//,/ }; do
		[[ ,$all_tests, == *,$t,* ]] || die "BENCH_TESTS: '$t' is not one of $all_tests"
	done
}

wanted() { [[ ",$tests," == *",$1,"* ]]; }

# The programs as built now: a rebuild during the run (another make) must not
# swap them, or their library, under it.
snapshot() {
	rm -rf "$bin"
	mkdir -p "$bin"
	cp "$build/tools/bench/rdmasec-bench" "$build/benchmarks/qpn-entropy" "$build/benchmarks/seal-speed" \
		"$build/lib/librdmasec.so.0" "$bin/" || die "cannot copy the programs into $bin"
	if wanted fi; then
		mkdir -p "$bin/fi"
		cp "$build/fi/librdmasec-fi.so" "$build/fi/fi_mpi" "$bin/fi/" ||
			die "cannot copy the libfabric provider and fi_mpi (they need libfabric-dev and libopenmpi-dev)"
	fi
	if wanted storage; then
		cp "$build/tools/blk/blkd/rdmasec-blkd" "$build/tools/blk/cli/rdmasec-blk" \
			"$build/tools/blk/nbdkit/nbdkit-rdmasec-plugin.so" "$bin/" || die "cannot copy the storage programs"
		if [ -n "${BENCH_STORAGE_OLD:-}" ]; then
			local old=$BENCH_STORAGE_OLD
			mkdir -p "$bin/old"
			cp -L "$old/tools/blk/blkd/rdmasec-blkd" "$old/tools/blk/cli/rdmasec-blk" "$old/lib/librdmasec.so.0" \
				"$bin/old/" || die "BENCH_STORAGE_OLD: cannot copy rdmasec-blkd, rdmasec-blk and librdmasec from $old"
			if [ -f "$old/tools/blk/nbdkit/nbdkit-rdmasec-plugin.so" ]; then
				cp -L "$old/tools/blk/nbdkit/nbdkit-rdmasec-plugin.so" "$bin/old/" ||
					die "BENCH_STORAGE_OLD: cannot copy its nbdkit plugin"
			fi
		fi
	fi
}

fabric_part() {
	# Every test but seal, which runs natively.
	local fabric_tests='' t
	for t in ${tests//,/ }; do
		[ "$t" = seal ] || [ "$t" = storage ] || [ "$t" = fi ] || fabric_tests+=${fabric_tests:+,}$t
	done
	[ -n "$fabric_tests" ] || return 0
	"$build/tools/keygen/rdmasec-keygen" "$out/pki" >/dev/null || die "rdmasec-keygen failed"
	echo "== on the fabric (one boot): perftest and rdmasec-bench side by side"
	"$top/fabric/rxe-fabric" run --hosts 2 --timeout 3600 --share "$out" -- \
		bash "$top/benchmarks/guest.sh" "$bin" "$out/pki" "$raw" "$sizes" "$conns" "$fabric_tests" \
		"$poll" "$tx_depth" "$cq_mod" "${qpn_args[@]}"
}

# The storage rows take a boot of their own: the kernel's NVMe-oF target and
# rdmasec-blkd share its RAM disk.
storage_part() {
	wanted storage || return 0
	[ -f "$out/pki/ca.pem" ] || "$build/tools/keygen/rdmasec-keygen" "$out/pki" >/dev/null || die "rdmasec-keygen failed"
	local s_rounds s_secs s_ramp
	IFS=: read -r s_rounds s_secs s_ramp <<<"$storage"
	echo "== on the fabric (a second boot): the kernel's NVMe-oF and rdmasec-blk side by side"
	"$top/fabric/rxe-fabric" run --hosts 2 --timeout 3600 --share "$out" -- \
		bash "$top/benchmarks/storage.sh" "$bin" "$out/pki" "$raw" "$s_rounds" "$s_secs" "$s_ramp" \
		"${BENCH_STORAGE_ROWS:-}" "${BENCH_BLKD_ARGS:-}" "${BENCH_BLKOLD_ARGS:-}"
}

# The libfabric rows take a boot of their own: two providers, two programs, interleaved.
fi_part() {
	wanted fi || return 0
	[ -f "$out/pki/ca.pem" ] || "$build/tools/keygen/rdmasec-keygen" "$out/pki" >/dev/null || die "rdmasec-keygen failed"
	echo "== on the fabric (a third boot): libfabric's verbs provider and rdmasec's, side by side"
	local sizes_fi
	read -r -a sizes_fi <<<"${BENCH_FI_SIZES:-}"
	"$top/fabric/rxe-fabric" run --hosts 2 --timeout 3600 --share "$out" -- \
		env LD_LIBRARY_PATH="$bin" bash "$top/benchmarks/fi.sh" "$bin/fi" "$out/pki" "$raw" "${BENCH_FI:-3}" "${sizes_fi[@]}"
}

# openssl speed prints the CPU time it spent; seal-speed measures CPU time too.
native_part() {
	wanted seal || return 0
	echo "== natively: sealing against openssl speed"
	"$bin/seal-speed" --json --seconds 1 >"$raw/seal.json" || return 1
	local aead size
	for aead in aes-256-gcm chacha20-poly1305; do
		for size in 64 4096 65536; do
			openssl speed -seconds 1 -bytes $size -evp $aead >"$raw/openssl-evp-$aead-$size.txt" 2>&1 || return 1
			openssl speed -seconds 1 -bytes $size -aead -evp $aead >"$raw/openssl-aead-$aead-$size.txt" 2>&1 || return 1
		done
	done
}

write_meta() {
	python3 -c 'import json, sys; json.dump(dict(zip(sys.argv[1::2], sys.argv[2::2])), sys.stdout)' \
		sizes "$sizes" connections "$conns" tests "$tests" poll "$poll" tx_depth "$tx_depth" cq_mod "$cq_mod" \
		qpn_args "${BENCH_ARGS:-}" \
		started "$(date -u +%FT%TZ)" host_cpus "$(nproc)" kernel "$(uname -r)" \
		openssl "$(openssl version)" perftest "$(dpkg-query -W -f '${Version}' perftest 2>/dev/null)" \
		>"$raw/meta.json"
}

check_inputs
snapshot
rm -rf "$raw"
mkdir -p "$raw"
write_meta
start=$SECONDS
rc=0
fabric_part || rc=1
storage_part || { echo "bench: the storage part failed" >&2; rc=1; }
fi_part || { echo "bench: the libfabric part failed" >&2; rc=1; }
native_part || { echo "bench: the native part failed" >&2; rc=1; }
python3 "$top/benchmarks/report.py" "$out" || rc=1
echo "bench: done in $((SECONDS - start)) s"
exit $rc
