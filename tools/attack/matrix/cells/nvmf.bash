# SPDX-License-Identifier: MIT
# Helpers of the NVMe-oF cells (spoof-request, spoof-response, cnp,
# cm-disconnect-exhaust), sourced after common.bash.

# cell_nvmf_only ATTACK VICTIM: for every victim but nvmf, print the
# not-applicable line at once (no victim started) and return 0.
cell_nvmf_only() {
	[ "$2" = nvmf ] && return 1
	matrix_result "$1" "$2" not-applicable "no NVMe-oF: its RDMA messages carry no NVMe command or response capsules" \
		"$2 speaks its own protocol over RDMA; the attack forges NVMe-oF capsules (nvmf victim only)"
	return 0
}

# cell_nvmf_start ATTACK: victim_start nvmf, or the error line; returns 1 then.
# The victim lives (fio, the kernel-log follower) until victim_stop, at most
# CELL_NVMF_SECONDS (default 90): a loaded machine takes a minute to bring
# NVMe-oF up.
cell_nvmf_start() {
	VICTIM_SECONDS=${CELL_NVMF_SECONDS:-90}
	victim_start nvmf && return 0
	matrix_result "$1" nvmf error "" "victim did not start: $(tail -n 1 "$CELL/victim-errors.log" 2>/dev/null)"
	victim_stop
	return 1
}

# _cell_qps DEV: "QPN RQ_PSN" (decimal) of DEV's connected RC QPs, ascending.
_cell_qps() {
	rdma -d res show qp link "$1/1" 2>/dev/null |
		awk '/ type RC / && / state RTS / {
			for (i = 1; i < NF; i++) { if ($i == "lqpn") q = $(i + 1); if ($i == "rq-psn") p = $(i + 1) }
			print q, p }' | sort -n
}

# cell_nvmf_aim DEV: picks an I/O queue QP of DEV (rxe1: the target's,
# rxe2: the host's; the connection's first QP, the admin queue, left out)
# and the PSN to send at. A queue whose expected PSN stood still for 0.5 s
# gets one exact packet (AIM_SWEEP=PSN:1); else the busiest one a forward
# sweep of 20000 from its PSN, faster than the rate-limited I/O.
# Sets AIM_QPN (0x-hex), AIM_PSN, AIM_SWEEP, AIM_HOW; returns 1 without an I/O queue.
cell_nvmf_aim() {
	local a b q p p2
	a=$(_cell_qps "$1" | tail -n +2)
	sleep 0.5
	b=$(_cell_qps "$1" | tail -n +2)
	[ -n "$a" ] || return 1
	AIM_QPN='' AIM_PSN=''
	while read -r q p; do
		p2=$(awk -v q="$q" '$1 == q {print $2}' <<<"$b")
		if [ "$p2" = "$p" ]; then
			AIM_QPN=$(printf '0x%x' "$q") AIM_PSN=$p AIM_SWEEP=$p:1 AIM_HOW="idle I/O queue, exact PSN"
			return 0
		fi
	done <<<"$a"
	read -r q p <<<"$(tail -n 1 <<<"$b")"
	AIM_QPN=$(printf '0x%x' "$q") AIM_PSN=$p AIM_SWEEP=$p:20000 AIM_HOW="busy I/O queue, 20000-PSN sweep"
}

# cell_nvmf_host_line T0 [REGEX]: the host's first kernel line after
# uptime T0 about the attack (default: bad completions, error recovery,
# reconnects), "[h2] ...". Read from dmesg itself: on a loaded machine the
# victim's log follower may have ended by then.
cell_nvmf_host_line() {
	local l
	l=$(dmesg 2>/dev/null | awk -v t0="$1" '{ t = $0; sub(/^\[ */, "", t); sub(/\].*/, "", t); if (t + 0 > t0 + 0) print }' |
		grep -E 'nvme nvme[0-9]|nvme_rdma' |
		grep -E -m1 -- "${2:-command_id|could not locate|genctr|error recovery|Reconnecting|reconnect|disconnect}") || return 1
	printf '[h2] %s' "$(sed 's/^\[ *[0-9.]*\] //' <<<"$l" | cut -c1-90)"
}

# cell_nvmf_stall T0 T1: the longest stretch without a completed I/O between
# uptimes T0 and T1 (the victim's sampler), in seconds, one decimal; counted
# from the last completion before T0.
cell_nvmf_stall() {
	awk -v a="$1" -v b="$2" '$2 == "gone" { if ($1 > a && $1 <= b && $1 - last > gap) gap = $1 - last; next }
		$1 <= a { if ($2 != n) last = $1; n = $2; next }
		$1 <= b { if ($2 != n) { last = $1; n = $2 } else if ($1 - last > gap) gap = $1 - last }
		END { printf "%.1f\n", gap }' "$VICTIM_NVMF_IO_LOG"
}
