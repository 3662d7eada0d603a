#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs inside one fabric boot (benchmarks/run.sh starts it): perftest and
# rdmasec-bench side by side, server on host 1 and client on host 2, for each
# test (perftest once per size, rdmasec-bench once for all sizes); connection
# set-up (ucmatose against rdmasec-bench --op connect, and --op qp: further
# queue pairs of one connection); then qpn-entropy. Each
# client's output goes to RAW/NAME.txt (rdmasec-bench's JSON to RAW/NAME.json,
# standard error to RAW/NAME.err), each server's to RAW/NAME.server.txt.
#
# usage: guest.sh BIN PKI RAW 'SIZE:ITERS ...' CONNECTIONS TESTS POLL TX_DEPTH CQ_MOD [QPN-ENTROPY ARGS...]
# BIN: rdmasec-bench, qpn-entropy and librdmasec.so.0, copied from the build (benchmarks/run.sh)
# TESTS: comma-separated subset of send_bw,write_bw,write_bw_q4,read_bw,send_lat,write_lat,read_lat,
#   sealed_read_lat,sealed_read_bw,sealed_write_lat,connect,qp,qpn
# POLL: rdmasec-bench --poll for the clients and the send servers (busy: as perftest, which
#   polls its CQ; a write or read server has nothing to poll and sleeps, as perftest's waits
#   in a socket read)
# TX_DEPTH, CQ_MOD: -t and -Q for every bandwidth test, perftest's and rdmasec-bench's
#   (write and read; rdmasec-bench's send window is the receiver's credits)
set -u
bin=$1 pki=$2 raw=$3 sizes=$4 conns=$5 tests=$6 poll=$7 tx_depth=$8 cq_mod=$9
shift 9
bench=$bin/rdmasec-bench
# The copied library, not the build's: it runs as the build was when the bench began.
export LD_LIBRARY_PATH=$bin
s1=$(fabric ip 1)
s2=$(fabric ip 2)
failed=0
PERFTEST_PORT=18515
BENCH_PORT=7472
# A client still running after this long per size is stuck (ib_read_bw at
# 1 MiB has hung on the emulated fabric): it is killed and its row is n/a.
RUN_TIMEOUT=180

wanted() { [[ ",$tests," == *",$1,"* ]]; }

note() { printf 'bench: %-44s %s\n' "$1" "$2"; }

# wait_server NAME PID PORT: the server listens, or died (its output says why).
wait_server() {
	fabric wait-port "$3" 120 && return 0
	kill "$2" 2>/dev/null
	note "$1" "FAILED: the server never listened ($(tail -n 1 "$raw/$1.server.txt" 2>/dev/null))"
	return 1
}

# client NAME SIZES COMMAND...: run the client on host 2 for at most SIZES
# times RUN_TIMEOUT, its wall time in RAW/NAME.wall (ns). Standard error goes
# to NAME.err, so nothing else lands between result rows.
client() {
	local name=$1 limit=$((RUN_TIMEOUT * $2)) t0 rc=0
	shift 2
	t0=$(date +%s%N)
	timeout -k 5 $limit fabric on 2 "$@" >"$raw/$name.txt" 2>"$raw/$name.err" || rc=$?
	[ $rc = 124 ] && echo "killed after ${limit}s" >>"$raw/$name.err"
	echo $(($(date +%s%N) - t0)) >"$raw/$name.wall"
	return $rc
}

# finish NAME START CLIENT_RC SERVER_PID [reference]: a reference tool's
# failure leaves its row n/a without failing the bench.
finish() {
	local src=0
	# A server whose client failed may wait for it forever, as perftest's does.
	[ "$3" = 0 ] || { sleep 3; kill "$4" 2>/dev/null; }
	wait "$4" || src=$?
	if [ "$3" = 0 ] && [ "$src" = 0 ]; then
		note "$1" "ok ($((SECONDS - $2)) s)"
		return 0
	fi
	local why
	why=$(cat "$raw/$1.err" "$raw/$1.txt" | grep -v '^ *$' | tail -n 1)
	# rxe lost large READ responses when a response burst overflowed the
	# fabric's backlog, and retried forever at retry_cnt 7 (ib_read_bw's hangs;
	# plain and sealed rdmasec READs alike: docs/verbs.md, "Large READs"). The
	# fabric's backlog now holds the burst, and rdmasec's QPs give up after 7
	# tries (a lost READ fails the test with a QP error); a READ test whose
	# operations still never complete is taken as the fabric's, its row n/a
	# like perftest's, not a failure of the bench.
	if [[ $1 == rdmasec-read_* || $1 == rdmasec-sealed_read_* ]] && grep -q 'no completion in' "$raw/$1.err"; then
		note "$1" "STUCK (the fabric lost READ responses; later sizes n/a): $(grep 'no completion in' "$raw/$1.err")"
		return 0
	fi
	[ -n "${5:-}" ] || failed=$((failed + 1))
	note "$1" "FAILED${5:+ (reference tool)}: client $3, server $src: $why"
}

# perftest NAME TOOL SIZE ITERS: ib_*_bw/lat, as tests/fabric/write_bw.sh runs them;
# the bandwidth tools with TX_DEPTH and CQ_MOD. TOOL may carry options after commas
# (ib_write_bw,-q,4).
perftest() {
	local name=$1 start=$SECONDS rc=0 spid try
	local cmd="${2//,/ } -d \$FABRIC_DEV -x \$FABRIC_GID_INDEX -s $3 -n $4 -F -p $PERFTEST_PORT"
	[[ ${2%%,*} == *_bw ]] && cmd+=" -t $tx_depth -Q $cq_mod"
	# Under load its clock estimate sometimes fails and every figure reads inf: once more then.
	for try in 1 2; do
		rc=0
		fabric on 1 bash -c "$cmd" >"$raw/$name.server.txt" 2>&1 &
		spid=$!
		wait_server "$name" $spid $PERFTEST_PORT || { wait $spid; return; }
		client "$name" 1 bash -c "$cmd $s1" || rc=$?
		if [ $rc != 0 ] || [ $try = 2 ] || ! grep -Eq '^ *[0-9]+ +[0-9]+ .*inf' "$raw/$name.txt"; then
			break
		fi
		wait $spid
		note "$name" "perftest printed inf; again"
	done
	finish "$name" $start $rc $spid reference
}

# rdmasec NAME SIZES ITERS ARGS... [-- CLIENT ARGS...]: rdmasec-bench, every size
# in one connection (SIZES and ITERS: comma-separated lists, -s and -n); ARGS
# for both sides, CLIENT ARGS for the client only.
rdmasec() {
	local name=$1 size=$2 iters=$3 start=$SECONDS rc=0 spid commas=${2//[^,]/} only=()
	shift 3
	local common=(--certs "$pki" --port "$BENCH_PORT")
	while [ $# -gt 0 ] && [ "$1" != -- ]; do common+=("$1"); shift; done
	[ $# -gt 0 ] && { shift; only=("$@"); }
	[ "$size" != 0 ] && common+=(-s "$size")
	fabric on 1 "$bench" "${common[@]}" -n "$iters" --source "$s1" >"$raw/$name.server.txt" 2>&1 &
	spid=$!
	wait_server "$name" $spid $BENCH_PORT || { wait $spid; failed=$((failed + 1)); return; }
	client "$name" $((${#commas} + 1)) "$bench" "${common[@]}" "${only[@]}" -n "$iters" --source "$s2" \
		--json "$raw/$name.json" "$s1" || rc=$?
	finish "$name" $start $rc $spid
}

# Test name, perftest program, rdmasec-bench options.
run_tests() {
	local t tool opts pair size iters slist nlist
	while read -r t tool opts; do
		wanted "$t" || continue
		slist='' nlist=''
		for pair in $sizes; do
			size=${pair%%:*} iters=${pair#*:}
			perftest "perftest-$t-$size" "$tool" "$size" "$iters"
			slist+=${slist:+,}$size nlist+=${nlist:+,}$iters
		done
		# One process pair for every size: process start and set-up cost
		# seconds each in the emulated guest.
		opts=${opts//POLL/$poll} opts=${opts//DEPTH/$tx_depth}
		# shellcheck disable=SC2086 # opts is a word list
		rdmasec "rdmasec-$t" "$slist" "$nlist" ${opts//CQMOD/$cq_mod}
	done <<'EOF'
send_bw ib_send_bw --op send --poll POLL
write_bw ib_write_bw --op write -t DEPTH -Q CQMOD -- --poll POLL
write_bw_q4 ib_write_bw,-q,4 --op write -q 4 -t DEPTH -Q CQMOD -- --poll POLL
read_bw ib_read_bw --op read -t DEPTH -Q CQMOD -- --poll POLL
send_lat ib_send_lat --op send --lat --poll POLL
write_lat ib_write_lat --op write --lat -- --poll POLL
read_lat ib_read_lat --op read --lat -- --poll POLL
EOF
}

# Connection set-up: ucmatose (rdma_cm) makes CONNECTIONS connections at once;
# rdmasec-bench --op connect makes them one after another. Every client's
# wall time, process start included, is in RAW/NAME.wall.
ucmatose_run() {
	local name=connect-ucmatose start=$SECONDS rc=1 spid try
	fabric on 1 ucmatose -b "$s1" -c "$conns" -C 1 >"$raw/$name.server.txt" 2>&1 &
	spid=$!
	# rdma_cm listens without a TCP socket: nothing to wait for but time.
	for try in 1 2 3 4 5; do
		sleep 2
		client "$name" 1 ucmatose -s "$s1" -b "$s2" -c "$conns" -C 1 && { rc=0; break; }
		grep -q REJECTED "$raw/$name.txt" || break
	done
	finish "$name" $start $rc $spid reference
}

# rdmasec twice: reconnects resuming TLS sessions (the default), then full
# handshakes with certificates every time.
connect_run() {
	ucmatose_run
	rdmasec connect-rdmasec 0 "$conns" --op connect
	rdmasec connect-rdmasec-full 0 "$conns" --op connect -- --no-resume
}

# Further queue pairs of one established connection (rsec_conn_add_qp: no
# handshake), one after another, as many as the connections above (at most
# 250, the lane indices of a connection), against the same ucmatose run.
qp_run() {
	wanted connect || ucmatose_run
	rdmasec connect-rdmasec-qp 0 $((conns < 250 ? conns : 250)) --op qp
}

# Through sealed grants, every size in one connection: reads, posted (READs
# of the whole grant, each opened in place with rsec_region_open) one at a
# time and TX_DEPTH deep, and writes, each with its own grant (granted,
# rsec_write_sealed, opened by the server). benchmarks/report.py sets them against
# ib_read_lat's, ib_read_bw's and ib_write_lat's rows above.
sealed_run() {
	local test=$1 slist='' nlist='' pair op
	for pair in $sizes; do
		slist+=${slist:+,}${pair%%:*} nlist+=${nlist:+,}${pair#*:}
	done
	case $test in
	sealed_read_bw)
		rdmasec "rdmasec-$test" "$slist" "$nlist" --op read --sealed -t "$tx_depth" -Q "$cq_mod" -- \
			--poll "$poll" ;;
	*) op=${test#sealed_} op=${op%_lat}
		rdmasec "rdmasec-$test" "$slist" "$nlist" --op "$op" --lat --sealed -- --poll "$poll" ;;
	esac
}

run_tests
for t in sealed_read_lat sealed_read_bw sealed_write_lat; do
	wanted $t && sealed_run $t
done
wanted connect && connect_run
wanted qp && qp_run
if wanted qpn; then
	note "qpn-entropy $*" "running"
	"$bin/qpn-entropy" "$@" 2>&1 | tee "$raw/qpn-entropy.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || { failed=$((failed + 1)); note qpn-entropy FAILED; }
fi
[ $failed = 0 ] || { echo "bench: $failed runs failed" >&2; exit 1; }
