# SPDX-License-Identifier: MIT
# Victims for the attack matrix (sourced inside the fabric guest by run.sh).
#
# Fabric layout: host 1 (10.77.0.1) runs the victim's server, host 2
# (10.77.0.2) its client, host 3 (10.77.0.3) is free for the attacker.
#
# Environment the caller provides: BIN (the build's tools/ directory), REPO,
# CELL (a fresh scratch directory for this cell). Optional: VICTIM_SECONDS
# (each victim process's life, default 14), VICTIM_MODE (see victim_start),
# VICTIM_SEND_BW_RATE (ib_send_bw's client sends at most this many messages
# per second, perftest's software rate limiter; default: unlimited).
#
# API
#   victim_names
#       Prints the nine default victim names: pingpong send_bw write_bw rping
#       ucmatose naive rdmasec nvmf rdmasec-blk (mpi-verbs and mpi-rdmasec
#       run when named: their cells are inject, qp-error, cm-disconnect and sniff).
#   victim_start NAME
#       Starts NAME's server on host 1, waits for its port, starts a capture of
#       the first RoCE request on the bridge (client to server; ucmatose:
#       server to client), then starts
#       NAME's client on host 2, and waits (150 looks, 15 s idle) until that request was
#       seen: traffic flows. Returns 1 (and says why on stderr) if not.
#       (A VICTIM_SECONDS over 45 waits a third of it for that request.)
#       An ib_send_bw client whose software rate limiter failed (it then runs
#       unlimited) is started again, up to 6 times.
#       Logs: $CELL/victim-server.log, $CELL/victim-client.log.
#       Exports VICTIM, VICTIM_SERVER_IP, VICTIM_CLIENT_IP, VICTIM_PORT,
#       the attacked direction VICTIM_DST_IP/VICTIM_DST_DEV (the QP that
#       receives the requests: the server's, except for ucmatose, whose server
#       sends the bulk of the data to its client, and ib_write_bw, whose
#       server QP's PSN races ahead while the client's own responder waits at
#       the PSN the plaintext exchange told) and VICTIM_SRC_IP/
#       VICTIM_SRC_DEV/VICTIM_SRC_HOST (its legitimate peer, whose address a
#       forger spoofs and on whose host impersonate runs),
#       VICTIM_SERVER_PID, VICTIM_CLIENT_PID, VICTIM_SERVER_LOG,
#       VICTIM_CLIENT_LOG, and for rdmasec VICTIM_AUDIT (the server's audit
#       log, JSON lines) and VICTIM_PKI.
#       The naive victim's client sends "hello" once connected; rdmasec's
#       client sends "send before the attack", then waits until the cell calls
#       victim_attack_done (at most VICTIM_SECONDS), then sends "send after
#       the attack" and quits. So for both, the first request's PSN + 1 is
#       exactly the PSN the server expects next while the attacker works.
#       Streaming victims (pingpong, perftest, rping, ucmatose) keep sending;
#       use a forward PSN sweep from the seen PSN.
#       With VICTIM_MODE=sniff-exchange, the plaintext TCP exchange of
#       pingpong/perftest is routed across the bridge (it would go through lo
#       on the one guest kernel), so an observer there can read it.
#       nvmf (the kernel's NVMe over Fabrics, no user process on the data
#       path): host 1 runs the target (fabric nvmf-target, namespace on the
#       RAM disk VICTIM_NVMF_BACKING, NVMF_SIZE_MIB MiB, default 16, filled
#       with the known pattern of fabric nvmf-pattern), host 2 the kernel host
#       (fabric nvmf-connect: controller VICTIM_NVMF_CTRL, block device
#       VICTIM_NVMF_DEV; reconnect delay 1 s, controller loss after 60 s,
#       I/O timeout NVMF_IO_TIMEOUT s if set, else the kernel's 30 s),
#       and on it fio writes and verifies (randwrite, 4 KiB, crc32c,
#       verify_backlog, at most NVMF_FIO_IOPS=60 writes and reads a second)
#       the first NVMF_FIO_MIB MiB (default 4) for VICTIM_SECONDS; every
#       block past them keeps the pattern. VICTIM_SERVER_PID follows the
#       kernel log: VICTIM_SERVER_LOG gets the target's new lines (nvmet),
#       VICTIM_NVMF_HOST_LOG the host's (nvme nvmeN: ..., nvme_rdma),
#       VICTIM_KERNEL_LOG all of them; VICTIM_CLIENT_PID is fio,
#       VICTIM_CLIENT_LOG its output (verify errors included);
#       VICTIM_NVMF_IO_LOG samples the device's completed I/Os every 0.2 s
#       ("UPTIME COUNT", "UPTIME gone" without a device). The attacked
#       direction is the target's I/O queue QPs, which receive the command
#       capsules (DST host 1); the captured request (victim_wire_bth, also
#       --now) is one to an I/O queue, never the admin queue. Exports
#       VICTIM_NVMF_NQN. victim_stop also stops fio, disconnects the host and
#       removes the target.
#       rdmasec-blk: host 1 runs rdmasec-blkd (port 7472, audit log
#       VICTIM_AUDIT, certificates VICTIM_PKI) serving the export "disk", a
#       BLK_SIZE_MIB (default 16) MiB file in the guest's tmpfs
#       (VICTIM_BLK_BACKING, 512-byte blocks) filled with the known pattern of
#       fabric nvmf-pattern; host 2 runs rdmasec-blk bench in a loop, each run
#       a session that writes the first BLK_IO_KIB (default 4096) KiB in 4 KiB
#       blocks and reads every block back with --verify (its JSON in
#       $CELL/bench-N.json, one line "run N after=0|1 rc=R errors=E
#       verify_errors=V session_ended=B" each in VICTIM_CLIENT_LOG; after=1:
#       it ended after victim_attack_done). The loop ends with the first run
#       that ends after victim_attack_done, or after VICTIM_SECONDS; the
#       target lives VICTIM_SECONDS + 60 s. The first BLK_IO_MIB (4) MiB are
#       the client's, the next one the cells' own (sniff writes there);
#       every block past them keeps the pattern. The attacked direction is the target's
#       queue pair (DST host 1).
#       mpi-verbs, mpi-rdmasec: an untouched MPI program, tests/fabric/fi_mpi.c's
#       victim mode, under Open MPI (ofi MTL over verbs;ofi_rxm or
#       rdmasec;ofi_rxm): rank 1 (host 2) sends rank 0 (host 1) a 64-byte text
#       every 10 ms, rank 0 returns it, both check every byte; once
#       victim_attack_done (or after VICTIM_SECONDS) 20 more round trips, then
#       each rank prints its "victim:" line (mpi_victim_line). One mpirun is
#       both VICTIM_SERVER_PID and VICTIM_CLIENT_PID (its output in
#       $CELL/mpirun.log); VICTIM_SERVER_LOG and VICTIM_CLIENT_LOG are rank 0's
#       and rank 1's. The attacked direction is rank 0's QP (DST host 1).
#       mpi-rdmasec: VICTIM_PKI, and rank 0's provider audits to VICTIM_AUDIT.
#   victim_wire_bth [--now]
#       After victim_start: reads the captured request's BTH (with --now, of
#       a request captured now, for a current PSN of a streaming victim). Sets (and
#       exports) WIRE_QPN (0x-hex, the receiving QP), WIRE_PSN (decimal),
#       WIRE_OPCODE (decimal). Returns 1 if nothing was captured.
#   victim_exchange
#       pingpong, send_bw, write_bw: sets EXCH_QPN, EXCH_PSN, EXCH_RKEY,
#       EXCH_VA for the attacked QP from what the plaintext exchange told (as
#       the client printed it). See the function.
#   victim_attack_done
#       Tells the victim the attack was sent (the rdmasec client then goes on).
#   victim_wait [SECONDS]
#       Waits up to SECONDS (default VICTIM_SECONDS + 5) for both processes to
#       end by themselves (once one has ended, the other gets 2 s), then
#       stops what is left. Sets VICTIM_SERVER_RC and
#       VICTIM_CLIENT_RC (124 or 143 when it had to be stopped).
#   victim_stop
#       Stops both processes now (TERM, then KILL after 2 s) and the capture;
#       sets VICTIM_SERVER_RC / VICTIM_CLIENT_RC. Safe to call twice.
#   victim_grep FILE REGEX
#       Prints the first line of FILE matching REGEX (ERE), cut to 200 chars,
#       without its trailing newline; returns 1 if none.
#   victim_nvmf_target
#       nvmf: only the target and the kernel log's follower (a cell that
#       connects a host itself sets NVMF_HOST_UP=1 so victim_stop
#       disconnects it).
#   nvmf_io_queue_qp
#       nvmf: the target's I/O queue QPs now (rxe1, RTS; the admin queue's,
#       the first of the connection, left out), one "QPN RQ_PSN" line each
#       (0x-hex QPN, decimal PSN the QP expects next), ascending.
#   nvmf_backing_read LBA COUNT
#       nvmf: COUNT 512-byte blocks of the target's backing store from LBA,
#       read past any cache, on stdout.
#   nvmf_backing_hash [LBA COUNT]
#       nvmf: the SHA-256 (hex) of those blocks (default: the whole store).
#   nvmf_pattern LBA COUNT
#       The known content of those blocks (fabric nvmf-pattern).
#   nvmf_host_log [REGEX]
#       nvmf: the host's kernel lines since victim_start (those matching the
#       ERE REGEX); returns 1 if none.
#   nvmf_io_gap
#       nvmf: the longest stretch without a completed I/O on the device,
#       from its first I/O to the last sample: prints "SECONDS UPTIME" (one
#       decimal; the guest uptime at which it began), e.g. "7.4 123.5".
#       A device that disappeared counts as without I/O. Returns 1 if no
#       I/O completed.
#   matrix_result ATTACK VICTIM OUTCOME MECHANISM EVIDENCE
#       Prints the one MATRIX line of a cell, JSON-escaped (evidence cut to 200
#       characters, control characters dropped). OUTCOME: succeeded | blocked |
#       detected | not-applicable | error.
#
# run.sh runs each cell in its own session and kills that whole process group
# afterwards, so a cell that forgets something does not disturb the next one;
# still, a cell must stop everything it started (victim_stop does the victim).

VICTIM_SECONDS=${VICTIM_SECONDS:-14}
VICTIM_SERVER_IP=10.77.0.1
VICTIM_CLIENT_IP=10.77.0.2
export VICTIM_SERVER_IP VICTIM_CLIENT_IP

victim_names() {
	echo pingpong send_bw write_bw rping ucmatose naive rdmasec nvmf rdmasec-blk
}

victim_grep() {
	local line
	line=$(grep -E -m1 -- "$2" "$1" 2>/dev/null) || return 1
	printf '%s' "${line:0:200}"
}

# JSON string body of $1: escape \ and ", drop other control characters.
_matrix_json_str() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=$(printf '%s' "$s" | tr -d '\000-\037\177')
	printf '%s' "$s"
}

matrix_result() {
	local ev=${5:0:200}
	printf 'MATRIX {"attack":"%s","victim":"%s","outcome":"%s","mechanism":"%s","evidence":"%s"}\n' \
		"$(_matrix_json_str "$1")" "$(_matrix_json_str "$2")" "$(_matrix_json_str "$3")" \
		"$(_matrix_json_str "$4")" "$(_matrix_json_str "$ev")"
}

_gid() { fabric gid-index "$1"; }

# The server and client commands of each victim ($1 = name, $2 = server|client).
_victim_cmd() {
	local n=$1 side=$2 s=$VICTIM_SECONDS g1 g2
	g1=$(_gid 1) g2=$(_gid 2)
	case "$n:$side" in
	pingpong:server) echo "ibv_rc_pingpong -d rxe1 -g $g1 -s 64 -n 10000000" ;;
	pingpong:client) echo "ibv_rc_pingpong -d rxe2 -g $g2 -s 64 -n 10000000 $VICTIM_SERVER_IP" ;;
	send_bw:server) echo "ib_send_bw -d rxe1 -x $g1 -s 64 -D $((s - 4)) -F" ;;
	send_bw:client)
		echo "ib_send_bw -d rxe2 -x $g2 -s 64 -D $((s - 4)) -F${VICTIM_SEND_BW_RATE:+ --rate_limit=$VICTIM_SEND_BW_RATE --rate_units=p --rate_limit_type=SW} $VICTIM_SERVER_IP"
		;;
	write_bw:server) echo "ib_write_bw -d rxe1 -x $g1 -s 4096 -D $((s - 4)) -F" ;;
	write_bw:client) echo "ib_write_bw -d rxe2 -x $g2 -s 4096 -D $((s - 4)) -F $VICTIM_SERVER_IP" ;;
	rping:server) echo "rping -s -v -a $VICTIM_SERVER_IP -S 64" ;;
	rping:client) echo "rping -c -v -a $VICTIM_SERVER_IP -I $VICTIM_CLIENT_IP -S 64 -C 1000000" ;;
	ucmatose:server) echo "ucmatose -b $VICTIM_SERVER_IP -C 2000 -S 65536" ;;
	ucmatose:client) echo "ucmatose -s $VICTIM_SERVER_IP -b $VICTIM_CLIENT_IP -C 2000 -S 65536" ;;
	naive:server) echo "$BIN/attack/rdmasec-naive-victim server -d rxe1 -g $g1 -t $s" ;;
	naive:client) echo "$BIN/attack/rdmasec-naive-victim client -d rxe2 -g $g2 -l $VICTIM_CLIENT_IP -t $((s - 2)) -m hello $VICTIM_SERVER_IP" ;;
	rdmasec:server)
		echo "$BIN/server/rdmasec-server --certs $VICTIM_PKI --listen $VICTIM_SERVER_IP:7471 --handshake-timeout 60000 --audit $VICTIM_AUDIT"
		;;
	rdmasec:client) echo "bash $CELL/rdmasec-client.sh" ;;
	*) return 1 ;;
	esac
}

_victim_port() {
	case "$1" in
	pingpong | send_bw | write_bw) echo 18515 ;;
	rping) echo 7174 ;;
	ucmatose | rdmasec) echo 7471 ;;
	naive) echo 18516 ;;
	nvmf) echo 4420 ;;
	rdmasec-blk) echo 7472 ;;
	*) return 1 ;;
	esac
}

# rdmasec's client: one round trip, hold the connection while the attacker works, one more.
# That last reply is what shows the session went on after the attack (a rebuilt data path).
_victim_rdmasec_client() {
	cat >"$CELL/rdmasec-client.sh" <<EOF
set -u
{
	echo "send before the attack"
	for _ in \$(seq 1 $((VICTIM_SECONDS * 10))); do [ -e "$CELL/attack-done" ] && break; sleep 0.1; done
	sleep 2
	echo "send after the attack"
	echo quit
} | "$BIN/client/rdmasec-client" --certs "$VICTIM_PKI" --source $VICTIM_CLIENT_IP -t $((VICTIM_SECONDS > 45 ? 60000 : 20000)) $VICTIM_SERVER_IP
EOF
}

# rping and ucmatose listen through rdma_cm, invisible to ss: ask rdma(8).
_victim_wait_listen() {
	case "$VICTIM" in
	rping | ucmatose)
		for _ in $(seq 1 150); do
			rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr $VICTIM_SERVER_IP:$1" &&
				return 0
			sleep 0.1
		done
		return 1
		;;
	# 15 s, or a third of a life over 45 s (a loaded guest starts a server slowly).
	*) fabric wait-port "$1" $((VICTIM_SECONDS > 45 ? VICTIM_SECONDS / 3 : 15)) 2>>"$CELL/victim-errors.log" ;;
	esac
}

# _victim_capture_start: a capture of the first request (BTH opcode < 0x0d:
# SEND, WRITE or READ request) from _wire_src to _wire_dst, into
# $CELL/wire-first.txt (VICTIM_TCPDUMP_PID); listening when it returns.
_victim_capture_start() {
	tcpdump -i fabbr -nn -x -c 1 \
		"udp dst port 4791 and src host $_wire_src and dst host $_wire_dst and udp[8] < 13${_wire_extra:-}" \
		>"$CELL/wire-first.txt" 2>"$CELL/tcpdump.err" &
	VICTIM_TCPDUMP_PID=$!
	for _ in $(seq 1 100); do grep -q listening "$CELL/tcpdump.err" 2>/dev/null && break; sleep 0.1; done
}

victim_start() {
	local try
	for try in 1 2 3 4 5 6; do
		_victim_start_once "$1" || return 1
		_victim_rate_unmet || return 0
		echo "victims: ib_send_bw's rate limiter could not measure the guest's clock (try $try of 6)" >&2
		victim_stop
	done
	echo "victims: ib_send_bw's rate limiter could not measure the guest's clock in 6 tries" >&2
	return 1
}

# perftest's software rate limiter times itself against the TSC; under
# emulation that fit sometimes fails and the client runs unlimited, which
# makes a different victim (a stream faster than a PSN sweep).
_victim_rate_unmet() {
	[ "$VICTIM" = send_bw ] && [ -n "${VICTIM_SEND_BW_RATE:-}" ] &&
		grep -q "couldn't acquire cpu frequency" "$VICTIM_CLIENT_LOG"
}

_victim_start_once() {
	local n=$1 scmd ccmd i
	[ "$n" = nvmf ] && { _victim_nvmf_start; return; }
	[ "$n" = rdmasec-blk ] && { _victim_blk_start; return; }
	case "$n" in mpi-verbs | mpi-rdmasec) _victim_mpi_start "$n"; return ;; esac
	VICTIM=$n
	VICTIM_PORT=$(_victim_port "$n") || { echo "victims: unknown victim '$n'" >&2; return 1; }
	VICTIM_SERVER_LOG=$CELL/victim-server.log VICTIM_CLIENT_LOG=$CELL/victim-client.log
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_SERVER_RC='' VICTIM_CLIENT_RC='' VICTIM_TCPDUMP_PID=''
	WIRE_QPN='' WIRE_PSN='' WIRE_OPCODE='' _wire_extra=''
	case "$n" in
	ucmatose | write_bw)
		VICTIM_DST_IP=$VICTIM_CLIENT_IP VICTIM_DST_DEV=rxe2 VICTIM_SRC_IP=$VICTIM_SERVER_IP VICTIM_SRC_DEV=rxe1 VICTIM_SRC_HOST=1
		;;
	*) VICTIM_DST_IP=$VICTIM_SERVER_IP VICTIM_DST_DEV=rxe1 VICTIM_SRC_IP=$VICTIM_CLIENT_IP VICTIM_SRC_DEV=rxe2 VICTIM_SRC_HOST=2 ;;
	esac
	# The wire carries requests one way: ucmatose's server streams to its
	# client, everyone else's client sends to its server.
	if [ "$n" = ucmatose ]; then
		_wire_src=$VICTIM_SERVER_IP _wire_dst=$VICTIM_CLIENT_IP
	else
		_wire_src=$VICTIM_CLIENT_IP _wire_dst=$VICTIM_SERVER_IP
	fi
	export VICTIM_DST_IP VICTIM_DST_DEV VICTIM_SRC_IP VICTIM_SRC_DEV VICTIM_SRC_HOST
	export VICTIM VICTIM_PORT VICTIM_SERVER_LOG VICTIM_CLIENT_LOG
	rm -f "$CELL/attack-done"
	if [ "$n" = rdmasec ]; then
		VICTIM_PKI=${MATRIX_PKI:-$CELL/pki} VICTIM_AUDIT=$CELL/audit.jsonl
		export VICTIM_PKI VICTIM_AUDIT
		[ -e "$VICTIM_PKI/ca.pem" ] || "$BIN/keygen/rdmasec-keygen" "$VICTIM_PKI" >/dev/null ||
			{ echo "victims: rdmasec-keygen failed" >&2; return 1; }
		_victim_rdmasec_client
	fi
	# pingpong and perftest cannot choose their TCP source: on the one kernel
	# host 2's exchange would go through lo. Host 2's table (102) sends it out
	# of fab2, across the bridge, as between two machines.
	if [ "${VICTIM_MODE:-}" = sniff-exchange ] && [ "$VICTIM_PORT" = 18515 ]; then
		ip rule show pref 90 | grep -q . ||
			ip rule add pref 90 iif lo to $VICTIM_SERVER_IP ipproto tcp dport 18515 lookup 102
	fi
	scmd=$(_victim_cmd "$n" server) && ccmd=$(_victim_cmd "$n" client) || return 1
	# exec: the recorded PID is timeout's, and timeout passes TERM on.
	# shellcheck disable=SC2086 # the commands are word lists without globs
	fabric on 1 timeout "$VICTIM_SECONDS" stdbuf -oL -eL $scmd >"$VICTIM_SERVER_LOG" 2>&1 &
	VICTIM_SERVER_PID=$!
	if ! _victim_wait_listen "$VICTIM_PORT"; then
		echo "victims: $n's server does not listen on $VICTIM_PORT" >&2
		victim_stop
		return 1
	fi
	_victim_capture_start
	# shellcheck disable=SC2086
	fabric on 2 timeout "$VICTIM_SECONDS" stdbuf -oL -eL $ccmd >"$VICTIM_CLIENT_LOG" 2>&1 &
	VICTIM_CLIENT_PID=$!
	export VICTIM_SERVER_PID VICTIM_CLIENT_PID
	# 150 looks (15 s idle), or a third of a longer life: on a loaded guest
	# rdmasec's handshake alone took 26 s.
	local looks=$((VICTIM_SECONDS > 45 ? VICTIM_SECONDS * 10 / 3 : 150)) t0=$SECONDS
	for i in $(seq 1 "$looks"); do
		grep -q '^[[:space:]]*0x0010:' "$CELL/wire-first.txt" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "victims: no RoCE traffic from $n's client within $((SECONDS - t0)) s" >&2
	return 1
}

victim_wire_bth() {
	local hex
	if [ "${1:-}" = --now ]; then
		# nvmf's capsules flow all along: only a loaded machine's slow tcpdump start-up needs the longer wait.
		timeout "$([ "${VICTIM:-}" = nvmf ] && echo 30 || echo 8)" tcpdump -i fabbr -nn -x -c 1 \
			"udp dst port 4791 and src host $_wire_src and dst host $_wire_dst and udp[8] < 13$_wire_extra" \
			>"$CELL/wire-first.txt" 2>"$CELL/tcpdump.err"
	fi
	for _ in $(seq 1 50); do
		grep -q '^[[:space:]]*0x0020:' "$CELL/wire-first.txt" 2>/dev/null && break
		sleep 0.1
	done
	hex=$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", $i }' "$CELL/wire-first.txt")
	# IPv4 (20) + UDP (8) bytes, then the BTH: opcode at byte 28, DestQP 33..35, PSN 37..39.
	[ ${#hex} -ge 80 ] || { echo "victims: no BTH captured" >&2; return 1; }
	WIRE_OPCODE=$((0x${hex:56:2})) WIRE_QPN=0x${hex:66:6} WIRE_PSN=$((0x${hex:74:6}))
	export WIRE_OPCODE WIRE_QPN WIRE_PSN
}

#   victim_exchange
#       For pingpong, send_bw and write_bw: what the plaintext TCP exchange
#       told about the attacked QP (DST), as the client printed it. Sets
#       EXCH_QPN (DST's QP), EXCH_PSN (the PSN DST expects: its peer's initial
#       one), EXCH_RKEY and EXCH_VA (DST's buffer; perftest only), all 0x-hex.
victim_exchange() {
	local mine theirs
	mine=$(grep -m1 'local address' "$VICTIM_CLIENT_LOG") && theirs=$(grep -m1 'remote address' "$VICTIM_CLIENT_LOG") ||
		{ echo "victims: no exchange printed by the client" >&2; return 1; }
	[ "$VICTIM_DST_IP" = "$VICTIM_CLIENT_IP" ] || { local t=$mine; mine=$theirs theirs=$t; }
	EXCH_QPN=$(sed -n 's/.*QPN \(0x[0-9a-f]*\).*/\1/p' <<<"$mine")
	EXCH_PSN=$(sed -n 's/.*PSN \(0x[0-9a-f]*\).*/\1/p' <<<"$theirs")
	EXCH_RKEY=$(sed -n 's/.*RKey \(0x[0-9a-f]*\).*/\1/p' <<<"$mine")
	EXCH_VA=$(sed -n 's/.*VAddr \(0x[0-9a-f]*\).*/\1/p' <<<"$mine")
	export EXCH_QPN EXCH_PSN EXCH_RKEY EXCH_VA
	[ -n "$EXCH_QPN" ] && [ -n "$EXCH_PSN" ]
}

victim_attack_done() {
	touch "$CELL/attack-done"
}


victim_wait() {
	local limit=${1:-$((VICTIM_SECONDS + 5))} i s c grace=0
	for i in $(seq 1 $((limit * 10))); do
		s=0 c=0
		{ [ -z "$VICTIM_SERVER_PID" ] || ! kill -0 "$VICTIM_SERVER_PID" 2>/dev/null; } && s=1
		{ [ -z "$VICTIM_CLIENT_PID" ] || ! kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null; } && c=1
		[ $s = 1 ] && [ $c = 1 ] && break
		# rdmasec-blkd is a daemon, which never ends by itself: its client's end is the victim's.
		[ "${VICTIM:-}" = rdmasec-blk ] && [ $c = 1 ] && break
		# One side is gone: the other (a server waiting for clients, a client
		# retrying into a dead QP) gets 2 s to finish.
		if [ $s = 1 ] || [ $c = 1 ]; then
			grace=$((grace + 1))
			[ $grace -ge 20 ] && break
		fi
		sleep 0.1
	done
	victim_stop
}

victim_stop() {
	local p
	[ "${VICTIM:-}" = nvmf ] && _victim_nvmf_stop
	for p in $VICTIM_SERVER_PID $VICTIM_CLIENT_PID $VICTIM_TCPDUMP_PID; do
		kill -TERM "$p" 2>/dev/null
	done
	for _ in $(seq 1 20); do
		p=0
		for x in $VICTIM_SERVER_PID $VICTIM_CLIENT_PID $VICTIM_TCPDUMP_PID; do
			kill -0 "$x" 2>/dev/null && p=1
		done
		[ $p = 0 ] && break
		sleep 0.1
	done
	for p in $VICTIM_SERVER_PID $VICTIM_CLIENT_PID $VICTIM_TCPDUMP_PID; do
		kill -KILL "$p" 2>/dev/null
	done
	# wait in this shell: a command substitution could not reap our children.
	if [ -n "$VICTIM_SERVER_PID" ]; then wait "$VICTIM_SERVER_PID" 2>/dev/null; VICTIM_SERVER_RC=$?; fi
	if [ -n "$VICTIM_CLIENT_PID" ]; then wait "$VICTIM_CLIENT_PID" 2>/dev/null; VICTIM_CLIENT_RC=$?; fi
	[ -z "$VICTIM_TCPDUMP_PID" ] || wait "$VICTIM_TCPDUMP_PID" 2>/dev/null
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_TCPDUMP_PID=''
	export VICTIM_SERVER_RC VICTIM_CLIENT_RC
	return 0
}

# ---- mpi-verbs, mpi-rdmasec: an untouched MPI program (fi_mpi victim) ----

# The two ranks under one mpirun (its PID is both VICTIM_SERVER_PID and
# VICTIM_CLIENT_PID; its own output in $CELL/mpirun.log), Open MPI's ofi MTL
# over PROVIDER;ofi_rxm: rank 0 on host 1 (its output VICTIM_SERVER_LOG),
# rank 1 on host 2 (VICTIM_CLIENT_LOG), whose requests the attacker aims at
# rank 0's QP. rdmasec's provider authenticates with VICTIM_PKI and rank 0
# audits to VICTIM_AUDIT.
_victim_mpi_start() {
	local n=$1 prov=${1#mpi-} fidir=$BIN/../fi looks t0 r
	VICTIM=$n VICTIM_PORT=''
	VICTIM_SERVER_LOG=$CELL/victim-server.log VICTIM_CLIENT_LOG=$CELL/victim-client.log
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_SERVER_RC='' VICTIM_CLIENT_RC='' VICTIM_TCPDUMP_PID=''
	WIRE_QPN='' WIRE_PSN='' WIRE_OPCODE='' _wire_extra=''
	VICTIM_DST_IP=$VICTIM_SERVER_IP VICTIM_DST_DEV=rxe1 VICTIM_SRC_IP=$VICTIM_CLIENT_IP VICTIM_SRC_DEV=rxe2 VICTIM_SRC_HOST=2
	_wire_src=$VICTIM_CLIENT_IP _wire_dst=$VICTIM_SERVER_IP
	export VICTIM VICTIM_PORT VICTIM_SERVER_LOG VICTIM_CLIENT_LOG
	export VICTIM_DST_IP VICTIM_DST_DEV VICTIM_SRC_IP VICTIM_SRC_DEV VICTIM_SRC_HOST
	rm -f "$CELL/attack-done"
	[ -x "$fidir/fi_mpi" ] && command -v mpirun >/dev/null ||
		{ echo "victims: $n needs $fidir/fi_mpi and mpirun (libfabric-dev, libopenmpi-dev, openmpi-bin)" >&2; return 1; }
	# Each host's own device and address (benchmarks/fi.sh); rxm sizes its CQs by FI_UNIVERSE_SIZE.
	local env1=(FI_UNIVERSE_SIZE=16) env2=(FI_UNIVERSE_SIZE=16)
	if [ "$prov" = rdmasec ]; then
		VICTIM_PKI=${MATRIX_PKI:-$CELL/pki} VICTIM_AUDIT=$CELL/audit.jsonl
		export VICTIM_PKI VICTIM_AUDIT
		[ -e "$VICTIM_PKI/ca.pem" ] || "$BIN/keygen/rdmasec-keygen" "$VICTIM_PKI" >/dev/null ||
			{ echo "victims: rdmasec-keygen failed" >&2; return 1; }
		env1+=(FI_PROVIDER_PATH="$fidir" FI_RDMASEC_CREDS="$VICTIM_PKI" FI_RDMASEC_ADDR="$VICTIM_SERVER_IP"
			FI_RDMASEC_AUDIT="$VICTIM_AUDIT")
		env2+=(FI_PROVIDER_PATH="$fidir" FI_RDMASEC_CREDS="$VICTIM_PKI" FI_RDMASEC_ADDR="$VICTIM_CLIENT_IP")
	else
		env1+=(FI_VERBS_IFACE=fab1 FI_VERBS_DEVICE_NAME=rxe1)
		env2+=(FI_VERBS_IFACE=fab2 FI_VERBS_DEVICE_NAME=rxe2)
	fi
	_victim_capture_start
	# Each rank's output to its own log (exec: the rank is the process Open MPI started).
	# shellcheck disable=SC2016 # expanded by the rank's own shell
	r='exec "$0" victim "$1" "$2" >"$3" 2>&1'
	timeout $((VICTIM_SECONDS + 30)) mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov;ofi_rxm" \
		-np 1 fabric on 1 env "${env1[@]}" bash -c "$r" "$fidir/fi_mpi" "$VICTIM_SECONDS" "$CELL/attack-done" \
		"$VICTIM_SERVER_LOG" : \
		-np 1 fabric on 2 env "${env2[@]}" bash -c "$r" "$fidir/fi_mpi" "$VICTIM_SECONDS" "$CELL/attack-done" \
		"$VICTIM_CLIENT_LOG" >"$CELL/mpirun.log" 2>&1 &
	VICTIM_SERVER_PID=$! VICTIM_CLIENT_PID=$!
	export VICTIM_SERVER_PID VICTIM_CLIENT_PID
	# MPI's start-up and (rdmasec) the handshake come first: 30 s, or a third of a longer life.
	looks=$((VICTIM_SECONDS > 90 ? VICTIM_SECONDS * 10 / 3 : 300)) t0=$SECONDS
	for _ in $(seq 1 "$looks"); do
		grep -q '^[[:space:]]*0x0010:' "$CELL/wire-first.txt" 2>/dev/null && return 0
		kill -0 "$VICTIM_SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "victims: no RoCE traffic from $n's rank 1 within $((SECONDS - t0)) s: $(tail -n 1 "$CELL/mpirun.log")" >&2
	return 1
}

# mpi_victim_line: the victim's verdict on itself, "[h1] ...; [h2] ..." (each
# rank's "victim:" or first "corrupted" line, else its last line); returns 1
# unless both ranks finished every round trip they began, none corrupted.
mpi_victim_line() {
	local a b
	a=$(victim_grep "$VICTIM_SERVER_LOG" 'victim: rank 0|corrupted') || a=$(tail -n 1 "$VICTIM_SERVER_LOG" 2>/dev/null)
	b=$(victim_grep "$VICTIM_CLIENT_LOG" 'victim: rank 1|corrupted') || b=$(tail -n 1 "$VICTIM_CLIENT_LOG" 2>/dev/null)
	printf '[h1] %s; [h2] %s' "${a:-no output}" "${b:-no output}"
	grep -q '^victim: rank 0: ' "$VICTIM_SERVER_LOG" 2>/dev/null && grep -q '^victim: rank 1: .* [1-9][0-9]* after the attack' "$VICTIM_CLIENT_LOG" 2>/dev/null
}

# ---- nvmf: the kernel's NVMe over Fabrics (target host 1, host host 2) ----

NVMF_SIZE_MIB=${NVMF_SIZE_MIB:-16}
NVMF_FIO_MIB=${NVMF_FIO_MIB:-4}
NVMF_FIO_IOPS=${NVMF_FIO_IOPS:-60}

# _victim_nvmf_follow T0: the kernel's lines after uptime T0, split into the
# target's, the host's and all (a pipeline in the background; its last
# process, the splitter, is VICTIM_SERVER_PID). It outlives fio (the set-up
# comes first), and victim_wait ends it 2 s after fio.
_victim_nvmf_follow() {
	# A shell loop, not awk: Debian's mawk reads a pipe in blocks, so its
	# lines would arrive late. Timestamps compare as integers (µs).
	# The reader's PID is kept: victim_stop ends the pipeline from its first
	# process, else dmesg -w (idle kernel, nothing to write) keeps the cell's
	# output open until its timeout.
	{ echo "$BASHPID" >"$CELL/follower.pid" && exec timeout $((VICTIM_SECONDS + 60)) stdbuf -oL dmesg -w 2>/dev/null; } | {
		local l t us0=$((10#${1/./}))
		while IFS= read -r l; do
			[[ "$l" =~ ^\[\ *([0-9]+)\.([0-9]{6})\] ]] || continue
			t=$((10#${BASH_REMATCH[1]}${BASH_REMATCH[2]}))
			[ "$t" -gt "$us0" ] || continue
			printf '%s\n' "$l" >>"$VICTIM_KERNEL_LOG"
			case "$l" in
			*nvmet*) printf '%s\n' "$l" >>"$VICTIM_SERVER_LOG" ;;
			*"nvme nvme"[0-9]* | *nvme_rdma* | *nvme_fabrics* | *nvme-fabrics*) printf '%s\n' "$l" >>"$VICTIM_NVMF_HOST_LOG" ;;
			esac
		done
	} &
	VICTIM_SERVER_PID=$!
}

# _victim_nvmf_sample CTRL DEV: "UPTIME COMPLETED-I/Os" every 0.2 s into
# VICTIM_NVMF_IO_LOG. With native multipath the head disk (DEV) counts
# nothing: the controller's path disk (nvme0c0n1) does.
_victim_nvmf_sample() {
	local st up f
	while :; do
		read -r up _ </proc/uptime
		f=/sys/block/${2#/dev/}/stat
		for f in /sys/class/nvme/"$1"/nvme*c*n*/stat "$f"; do [ -e "$f" ] && break; done
		if read -r -a st <"$f" 2>/dev/null; then
			echo "$up $((st[0] + st[4]))"
		else
			echo "$up gone"
		fi
		sleep 0.2
	done >"$VICTIM_NVMF_IO_LOG" &
	NVMF_SAMPLER_PID=$!
}

# victim_nvmf_target: the first half of victim_start nvmf (for a cell that
# starts the host itself): the kernel log's follower and the target on host 1.
victim_nvmf_target() {
	local t0
	VICTIM_DST_IP=$VICTIM_SERVER_IP VICTIM_DST_DEV=rxe1 VICTIM_SRC_IP=$VICTIM_CLIENT_IP VICTIM_SRC_DEV=rxe2 VICTIM_SRC_HOST=2
	_wire_src=$VICTIM_CLIENT_IP _wire_dst=$VICTIM_SERVER_IP _wire_extra=''
	VICTIM=nvmf VICTIM_PORT=4420 VICTIM_SERVER_LOG=$CELL/victim-server.log VICTIM_CLIENT_LOG=$CELL/victim-client.log
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_SERVER_RC='' VICTIM_CLIENT_RC='' VICTIM_TCPDUMP_PID=''
	WIRE_QPN='' WIRE_PSN='' WIRE_OPCODE=''
	VICTIM_NVMF_HOST_LOG=$CELL/nvmf-host.log VICTIM_KERNEL_LOG=$CELL/kernel.log VICTIM_NVMF_IO_LOG=$CELL/nvmf-io.log
	VICTIM_NVMF_NQN=nqn.2026-11.io.rdmasec.fabric:nvmf VICTIM_NVMF_BACKING='' VICTIM_NVMF_DEV='' VICTIM_NVMF_CTRL=''
	NVMF_SAMPLER_PID='' NVMF_TARGET_UP='' NVMF_HOST_UP=''
	export VICTIM_DST_IP VICTIM_DST_DEV VICTIM_SRC_IP VICTIM_SRC_DEV VICTIM_SRC_HOST VICTIM VICTIM_PORT
	export VICTIM_SERVER_LOG VICTIM_CLIENT_LOG VICTIM_NVMF_HOST_LOG VICTIM_KERNEL_LOG VICTIM_NVMF_IO_LOG VICTIM_NVMF_NQN
	: >"$VICTIM_SERVER_LOG"
	: >"$VICTIM_NVMF_HOST_LOG"
	: >"$VICTIM_KERNEL_LOG"
	: >"$VICTIM_CLIENT_LOG"
	rm -f "$CELL/attack-done"
	# A cell stopped by its timeout leaves the host and the target behind.
	if [ -e "/sys/kernel/config/nvmet/subsystems/$VICTIM_NVMF_NQN" ]; then
		fabric nvmf-disconnect >>"$CELL/victim-errors.log" 2>&1
		fabric nvmf-target-stop >>"$CELL/victim-errors.log" 2>&1
	fi
	read -r t0 _ </proc/uptime
	# /proc/uptime has hundredths, dmesg microseconds.
	_victim_nvmf_follow "${t0}0000"
	NVMF_TARGET_UP=1
	fabric on 1 fabric nvmf-target 1 --size "$NVMF_SIZE_MIB" >"$CELL/nvmf-target.txt" 2>>"$CELL/victim-errors.log" ||
		{ echo "victims: nvmf-target failed: $(tail -n 1 "$CELL/victim-errors.log")" >&2; return 1; }
	VICTIM_NVMF_BACKING=$(awk '$1 == "device" {print $2}' "$CELL/nvmf-target.txt")
	export VICTIM_NVMF_BACKING VICTIM_SERVER_PID
}

_victim_nvmf_start() {
	local admin qpns
	victim_nvmf_target || return 1
	NVMF_HOST_UP=1
	fabric on 2 fabric nvmf-connect 2 1 --reconnect-delay 1 --ctrl-loss-tmo 60 ${NVMF_IO_TIMEOUT:+--io-timeout "$NVMF_IO_TIMEOUT"} \
		>"$CELL/nvmf-connect.txt" \
		2>>"$CELL/victim-errors.log" ||
		{ echo "victims: nvmf-connect failed: $(tail -n 1 "$CELL/victim-errors.log")" >&2; return 1; }
	VICTIM_NVMF_DEV=$(awk '$1 == "device" {print $2}' "$CELL/nvmf-connect.txt")
	VICTIM_NVMF_CTRL=$(awk '$1 == "controller" {print $2}' "$CELL/nvmf-connect.txt")
	export VICTIM_NVMF_DEV VICTIM_NVMF_CTRL
	_victim_nvmf_sample "$VICTIM_NVMF_CTRL" "$VICTIM_NVMF_DEV"
	# fio's verify state would go to its working directory: not wanted.
	fabric on 2 timeout -k 5 $((VICTIM_SECONDS + 30)) fio --name=nvmf-victim --filename="$VICTIM_NVMF_DEV" \
		--ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=4 --size="${NVMF_FIO_MIB}M" \
		--verify=crc32c --verify_backlog=16 --verify_state_save=0 --rate_iops="$NVMF_FIO_IOPS,$NVMF_FIO_IOPS" \
		--time_based --runtime="$VICTIM_SECONDS" --eta=never >"$VICTIM_CLIENT_LOG" 2>&1 &
	VICTIM_CLIENT_PID=$!
	export VICTIM_SERVER_PID VICTIM_CLIENT_PID
	# The request to capture: one to an I/O queue (the admin queue's QP is the connection's first).
	qpns=$(_nvmf_target_qps | awk '{print $1}')
	admin=$(head -n 1 <<<"$qpns")
	[ -n "$admin" ] && [ "$(wc -l <<<"$qpns")" -ge 2 ] ||
		{ echo "victims: the target has no I/O queue QPs: $(rdma res show qp link rxe1/1 2>&1 | head -n 3)" >&2; return 1; }
	_wire_extra=" and (udp[12:4] & 0xffffff) != $((admin))"
	tcpdump -i fabbr -nn -x -c 1 \
		"udp dst port 4791 and src host $_wire_src and dst host $_wire_dst and udp[8] < 13$_wire_extra" \
		>"$CELL/wire-first.txt" 2>"$CELL/tcpdump.err" &
	VICTIM_TCPDUMP_PID=$!
	for _ in $(seq 1 150); do
		grep -q '^[[:space:]]*0x0010:' "$CELL/wire-first.txt" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "victims: no command capsule to the target's I/O queues within 15 s: $(tail -n 1 "$VICTIM_CLIENT_LOG")" >&2
	return 1
}

# _nvmf_target_qps: "0xQPN RQ_PSN" of the target's connected QPs (rxe1, RC, RTS), ascending.
_nvmf_target_qps() {
	rdma -d res show qp link rxe1/1 2>/dev/null |
		awk '/ type RC / && / state RTS / {
			for (i = 1; i < NF; i++) { if ($i == "lqpn") q = $(i + 1); if ($i == "rq-psn") p = $(i + 1) }
			print q, p }' | sort -n | awk '{ printf "0x%x %d\n", $1, $2 }'
}

nvmf_io_queue_qp() {
	_nvmf_target_qps | tail -n +2
}

_victim_nvmf_stop() {
	[ -s "$CELL/follower.pid" ] && kill -TERM "$(cat "$CELL/follower.pid")" 2>/dev/null
	rm -f "$CELL/follower.pid"
	[ -n "${NVMF_SAMPLER_PID:-}" ] && kill "$NVMF_SAMPLER_PID" 2>/dev/null && wait "$NVMF_SAMPLER_PID" 2>/dev/null
	NVMF_SAMPLER_PID=''
	[ -n "${VICTIM_CLIENT_PID:-}" ] && kill -TERM "$VICTIM_CLIENT_PID" 2>/dev/null
	# A host stuck reconnecting holds fio's I/O: the disconnect fails it.
	if [ -n "${NVMF_HOST_UP:-}" ]; then
		fabric on 2 fabric nvmf-disconnect >>"$CELL/victim-errors.log" 2>&1
		NVMF_HOST_UP=''
	fi
	if [ -n "${NVMF_TARGET_UP:-}" ]; then
		fabric on 1 fabric nvmf-target-stop >>"$CELL/victim-errors.log" 2>&1
		NVMF_TARGET_UP=''
	fi
}

nvmf_backing_read() {
	dd if="$VICTIM_NVMF_BACKING" bs=512 skip="$1" count="$2" iflag=direct status=none
}

nvmf_backing_hash() {
	if [ $# -ge 2 ]; then
		nvmf_backing_read "$1" "$2" | sha256sum | cut -d' ' -f1
	else
		dd if="$VICTIM_NVMF_BACKING" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1
	fi
}

nvmf_pattern() {
	fabric nvmf-pattern "$1" "$2"
}

nvmf_host_log() {
	grep -E -- "${1:-.}" "$VICTIM_NVMF_HOST_LOG" 2>/dev/null
}

nvmf_io_gap() {
	# t: when I/O last completed (the count moved); a sample without progress measures the stretch since.
	awk 'function stretch() { if (t != "" && $1 - t > gap) { gap = $1 - t; at = t } }
		$2 == "gone" { stretch(); next }
		last == "" { last = $2; next }
		$2 != last { t = $1; last = $2; next }
		{ stretch() }
		END { if (t == "") exit 1; printf "%.1f %.1f\n", gap, at }' "$VICTIM_NVMF_IO_LOG"
}

# ---- rdmasec-blk: rdmasec-blkd (host 1) and rdmasec-blk bench --verify in a loop (host 2) ----

BLK_SIZE_MIB=${BLK_SIZE_MIB:-16}
# The client's region; its runs write the first BLK_IO_KIB of it: a few seconds of I/O per session, so
# that a session a cell aims at still runs when the forger's sweep arrives (at 512 KiB the queue pair
# lived half a second of a two-second run on a fast machine, and sweeps missed it).
BLK_IO_MIB=4
BLK_IO_KIB=${BLK_IO_KIB:-4096}
BLK_DIR=/tmp/rdmasec-blk-matrix

# _victim_blk_start: victim_start rdmasec-blk (see there).
_victim_blk_start() {
	VICTIM=rdmasec-blk VICTIM_PORT=7472 VICTIM_SERVER_LOG=$CELL/victim-server.log VICTIM_CLIENT_LOG=$CELL/victim-client.log
	VICTIM_DST_IP=$VICTIM_SERVER_IP VICTIM_DST_DEV=rxe1 VICTIM_SRC_IP=$VICTIM_CLIENT_IP VICTIM_SRC_DEV=rxe2 VICTIM_SRC_HOST=2
	_wire_src=$VICTIM_CLIENT_IP _wire_dst=$VICTIM_SERVER_IP _wire_extra=''
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_SERVER_RC='' VICTIM_CLIENT_RC='' VICTIM_TCPDUMP_PID=''
	WIRE_QPN='' WIRE_PSN='' WIRE_OPCODE=''
	export VICTIM_DST_IP VICTIM_DST_DEV VICTIM_SRC_IP VICTIM_SRC_DEV VICTIM_SRC_HOST
	export VICTIM VICTIM_PORT VICTIM_SERVER_LOG VICTIM_CLIENT_LOG
	rm -f "$CELL/attack-done"
	_victim_blk_prepare || return 1
	fabric on 1 timeout $((VICTIM_SECONDS + 60)) stdbuf -oL -eL "$BIN/blk/blkd/rdmasec-blkd" --config "$CELL/blkd.conf" \
		>"$VICTIM_SERVER_LOG" 2>&1 &
	VICTIM_SERVER_PID=$!
	if ! fabric wait-port 7472 30 2>>"$CELL/victim-errors.log"; then
		echo "victims: rdmasec-blkd does not listen on 7472: $(tail -n 1 "$VICTIM_SERVER_LOG")" >&2
		return 1
	fi
	_victim_capture_start
	fabric on 2 timeout $((VICTIM_SECONDS + 30)) bash "$CELL/blk-client.sh" >"$VICTIM_CLIENT_LOG" 2>&1 &
	VICTIM_CLIENT_PID=$!
	export VICTIM_SERVER_PID VICTIM_CLIENT_PID
	for _ in $(seq 1 300); do
		grep -q '^[[:space:]]*0x0010:' "$CELL/wire-first.txt" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "victims: no RoCE traffic from rdmasec-blk within 30 s: $(tail -n 1 "$CELL/bench-1.err" 2>/dev/null)" >&2
	return 1
}

# _victim_blk_prepare: the backing file (the pattern, fresh for every cell;
# made once a boot, then copied), the target's configuration and the
# client's loop.
_victim_blk_prepare() {
	VICTIM_PKI=${MATRIX_PKI:-$CELL/pki} VICTIM_AUDIT=$CELL/audit.jsonl VICTIM_BLK_BACKING=$BLK_DIR/disk.img
	export VICTIM_PKI VICTIM_AUDIT VICTIM_BLK_BACKING
	[ -e "$VICTIM_PKI/ca.pem" ] || "$BIN/keygen/rdmasec-keygen" "$VICTIM_PKI" >/dev/null ||
		{ echo "victims: rdmasec-keygen failed" >&2; return 1; }
	mkdir -p "$BLK_DIR" || return 1
	if [ ! -s "$BLK_DIR/pattern-$BLK_SIZE_MIB.img" ]; then
		fabric nvmf-pattern 0 $((BLK_SIZE_MIB * 2048)) >"$BLK_DIR/pattern.tmp" &&
			mv "$BLK_DIR/pattern.tmp" "$BLK_DIR/pattern-$BLK_SIZE_MIB.img" ||
			{ echo "victims: cannot write the pattern" >&2; return 1; }
	fi
	cp "$BLK_DIR/pattern-$BLK_SIZE_MIB.img" "$VICTIM_BLK_BACKING" || return 1
	# A file, not flags: the identity '*' must not meet the shell's globbing.
	cat >"$CELL/blkd.conf" <<CONF
[target]
listen = $VICTIM_SERVER_IP:7472
audit_log = $VICTIM_AUDIT
rebuilds_per_min = 30

[tls]
ca = $VICTIM_PKI/ca.pem
cert = $VICTIM_PKI/server.pem
key = $VICTIM_PKI/server.key

[export disk]
path = $VICTIM_BLK_BACKING
size = ${BLK_SIZE_MIB}M
block_size = 512
rw = *
CONF
	cat >"$CELL/blk-client.sh" <<CLIENT
set -u
n=0 end=\$((SECONDS + $VICTIM_SECONDS))
while [ \$SECONDS -lt \$end ]; do
	n=\$((n + 1)) after=0
	timeout 60 "$BIN/blk/cli/rdmasec-blk" bench --server $VICTIM_SERVER_IP --certs "$VICTIM_PKI" --export disk \\
		--source $VICTIM_CLIENT_IP -t 10000 --rw randwrite --bs 4k --queue-depth 2 --size ${BLK_IO_KIB}K --verify \\
		--seed \$n --json >"$CELL/bench-\$n.json" 2>"$CELL/bench-\$n.err"
	rc=\$?
	[ -e "$CELL/attack-done" ] && after=1
	j=\$(cat "$CELL/bench-\$n.json")
	echo "run \$n after=\$after rc=\$rc errors=\$(sed -n 's/.*"errors":\([0-9]*\).*/\1/p' <<<"\$j")" \\
		"verify_errors=\$(sed -n 's/.*"verify_errors":\([0-9]*\).*/\1/p' <<<"\$j")" \\
		"session_ended=\$(sed -n 's/.*"session_ended":\([a-z]*\).*/\1/p' <<<"\$j")" \\
		"\$(head -c 120 "$CELL/bench-\$n.err" | tr '\n' ' ')"
	[ \$after = 1 ] && break
done
CLIENT
}

# _blk_hash FILE LBA COUNT: the SHA-256 of those 512-byte blocks of FILE, read
# a MiB at a time (a read per block costs seconds in the emulated guest).
_blk_hash() {
	dd if="$1" bs=1M iflag=skip_bytes,count_bytes skip=$(($2 * 512)) count=$(($3 * 512)) status=none |
		sha256sum | cut -d' ' -f1
}

# blk_backing_hash LBA COUNT: the SHA-256 of those 512-byte blocks of the backing file.
blk_backing_hash() {
	_blk_hash "$VICTIM_BLK_BACKING" "$1" "$2"
}

# blk_pattern_hash LBA COUNT: the SHA-256 of their known content (hashed once a boot: every cell asks for the same).
blk_pattern_hash() {
	local f=$BLK_DIR/pattern-$BLK_SIZE_MIB-$1-$2.sha256
	[ -s "$f" ] || { _blk_hash "$BLK_DIR/pattern-$BLK_SIZE_MIB.img" "$1" "$2" >"$f.tmp" && mv "$f.tmp" "$f"; }
	cat "$f"
}

# blk_untouched: "LBA A-B sha XXXXXXXX": the blocks nobody but an attacker
# writes (past the client's MiB and the cells' own); returns 1 unless they
# still hold the pattern.
blk_untouched() {
	local a=$(((BLK_IO_MIB + 1) * 2048)) n h
	n=$((BLK_SIZE_MIB * 2048 - a))
	h=$(blk_backing_hash "$a" "$n")
	printf 'LBA %d-%d sha %s' "$a" $((a + n - 1)) "${h:0:8}"
	[ "$h" = "$(blk_pattern_hash "$a" "$n")" ]
}

# blk_runs: sets BLK_RUNS, a summary of the client's runs: "R verify runs
# (A after), V verify errors, E I/O errors, F failed" (A: ended after the attack),
# BLK_RUNS_VERIFY (V), BLK_RUNS_FAILED (F) and BLK_RUNS_AFTER (A).
blk_runs() {
	local r a v e f
	r=$(grep -c '^run ' "$VICTIM_CLIENT_LOG")
	a=$(grep -c '^run [0-9]* after=1 ' "$VICTIM_CLIENT_LOG")
	v=$(sed -n 's/^run .* verify_errors=\([0-9]*\).*/\1/p' "$VICTIM_CLIENT_LOG" | awk '{ s += $1 } END { print s + 0 }')
	e=$(sed -n 's/^run .* errors=\([0-9]*\) .*/\1/p' "$VICTIM_CLIENT_LOG" | awk '{ s += $1 } END { print s + 0 }')
	f=$(grep -c '^run .* rc=[1-9]' "$VICTIM_CLIENT_LOG")
	# shellcheck disable=SC2034 # the cells read them
	BLK_RUNS_VERIFY=$v BLK_RUNS_FAILED=$f BLK_RUNS_AFTER=$a
	BLK_RUNS=$(printf '%d verify runs (%d after), %d verify errors, %d I/O errors, %d failed' \
		"$r" "$a" "$v" "$e" "$f")
}

# blk_audit EVENTS: the target's first audit record whose event is one of
# EVENTS (an ERE alternative, e.g. "mac_failure|qp_error"), as "EVENT:
# REASON" (REASON: the record's reason, else its result); returns 1 if none.
# grep, not a JSON parser: cells poll it, and python takes a second to
# start on a loaded guest; json-c writes the members in a fixed order.
blk_audit() {
	local l
	l=$(grep -m1 -E "\"event\":\"($1)\"" "$VICTIM_AUDIT" 2>/dev/null) || return 1
	printf '%s: %s' "$(sed -n 's/.*"event":"\([a-z_]*\)".*/\1/p' <<<"$l")" \
		"$(sed -n 's/.*"reason":"\([^"]*\)".*/\1/p; t; s/.*"result":"\([^"]*\)".*/\1/p' <<<"$l")"
}
