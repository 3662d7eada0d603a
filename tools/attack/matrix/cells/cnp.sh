# SPDX-License-Identifier: MIT
# NeVerMore 4.2 / 5.2.4 (cnp): the attacker on host 3 sends 5000 forged
# RoCEv2 congestion notification packets (BTH opcode 0x81, BECN) to the
# victim's sending QP, as if from its peer. A NIC running DCQCN would cut
# that QP's rate. rxe has no congestion control: rxe_rcv's header check finds
# a CNP transport on an RC QP and drops the packet before any counter or
# state sees it (drivers/infiniband/sw/rxe/rxe_recv.c, check_type_state), so
# every RoCE victim's cell is not-applicable, with what the fabric showed:
# the QP still connected, the victim still running, and for nvmf the I/O
# rate during the flood against fio's cap.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
. "$(dirname "${BASH_SOURCE[0]}")/nvmf.bash"

CELL_CNP_WHY="rxe has no congestion control (no DCQCN): it drops a CNP (opcode 0x81 on an RC QP) in its header check; nothing to slow down"

# _cnp_ios FROM TO: I/Os the nvmf host completed between uptimes FROM and TO (its sampler's counts).
_cnp_ios() {
	awk -v a="$1" -v b="$2" '$2 != "gone" && $1 >= a && $1 <= b { if (f == "") f = $2; l = $2 } END { print l - f }' \
		"$VICTIM_NVMF_IO_LOG"
}

# _cnp_sender: the QP that sends the victim's requests (on VICTIM_SRC_DEV),
# the peer of the captured request's QP; "0x..".
_cnp_sender() {
	local r
	r=$(rdma -d res show qp link "$VICTIM_DST_DEV/1" lqpn $((WIRE_QPN)) 2>/dev/null | sed -n 's/.* rqpn \([0-9]*\) .*/\1/p')
	[ -n "$r" ] && printf '0x%x' "$r"
}

cell_cnp() {
	local v=$1 qpn t0 t1 secs before during st sent host
	[ "$v" = nvmf ] && VICTIM_SECONDS=90
	victim_start "$v" || { matrix_result cnp "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; return; }
	if [ "$v" = nvmf ]; then
		# The host's busiest I/O queue QP: it sends the write capsules.
		cell_nvmf_aim rxe2 && qpn=$AIM_QPN
	else
		victim_wire_bth && qpn=$(_cnp_sender)
	fi
	if [ -z "${qpn:-}" ]; then
		matrix_result cnp "$v" error "" "no sending QP found (no request captured)"
		victim_stop
		return
	fi
	read -r t0 _ </proc/uptime
	fabric on 3 "$ATK" cnp --dst "$VICTIM_SRC_IP" --src "$VICTIM_DST_IP" --qpn "$qpn" --count 5000 --interval-us 100 \
		--iface fab3 --json >"$CELL/attack.json" 2>"$CELL/attack.err"
	echo "cnp exit $? (qpn $qpn on $VICTIM_SRC_DEV)" >&2
	read -r t1 _ </proc/uptime
	sent=$(sed -n 's/.*"sent":\([0-9]*\).*/\1/p' "$CELL/attack.json")
	st=$(rdma -d res show qp link "$VICTIM_SRC_DEV/1" lqpn $((qpn)) 2>/dev/null | sed -n 's/.* state \([A-Z]*\) .*/\1/p')
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	# fio is capped at NVMF_FIO_IOPS writes and as many reads a second: a slowed host falls below it.
	if [ "$v" = nvmf ]; then
		before=$(_cnp_ios "$(awk -v a="$t0" 'BEGIN { print a - 3 }')" "$t0") during=$(_cnp_ios "$t0" "$t1")
		host=$(cell_nvmf_host_line "$(awk -v a="$t0" 'BEGIN { print a - 3 }')") || host=''
	fi
	victim_attack_done
	# nvmf: the I/O went on; the others: both processes still run.
	if [ "${sent:-0}" -gt 0 ] && [ "$st" = RTS ] &&
		{ [ "${during:-0}" -gt 0 ] || { [ "$v" != nvmf ] && cell_victim_running; }; }; then
		matrix_result cnp "$v" not-applicable "$CELL_CNP_WHY" \
			"$sent CNPs to $VICTIM_SRC_DEV QP $qpn in $secs s: QP still RTS, victim running${during:+; the host completed $during I/Os meanwhile ($(awk -v n="$during" -v s="$secs" 'BEGIN { printf "%.0f", n / (s > 0 ? s : 1) }')/s, fio capped at $((2 * ${NVMF_FIO_IOPS:-60}))/s)}"
	else
		# A host whose I/O had stopped before the flood says nothing about CNPs.
		matrix_result cnp "$v" error "" "sent ${sent:-0} CNPs to QP $qpn: QP state ${st:-gone}, victim running: $(cell_victim_running && echo yes || echo no)${during:+, host I/Os in the 3 s before: $before, during: $during}${host:+; $host}"
	fi
	victim_stop
}
