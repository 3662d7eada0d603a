# SPDX-License-Identifier: MIT
# Helpers shared by the matrix's cells (sourced by them after victims.bash).

ATK=$BIN/attack/rdmasec-attack

# cell_time_left: seconds this cell may still spend attacking: run.sh kills
# it CELL_TIMEOUT s after its start; the last CELL_MARGIN (a sixth, at least
# 10 s: every process start costs on a loaded emulated guest) are for
# stopping the victim and judging.
CELL_MARGIN=${CELL_MARGIN:-$((${CELL_TIMEOUT:-40} / 6 > 10 ? ${CELL_TIMEOUT:-40} / 6 : 10))}
cell_time_left() {
	echo $((${CELL_TIMEOUT:-40} - CELL_MARGIN - SECONDS))
}

# cell_victim_for_the_cell: the victim lives as long as the cell may (a
# victim whose life ran out mid-attack decides nothing, and a loaded
# machine can take most of a fixed life to start it); the cell stops it
# once the attack is judged.
cell_victim_for_the_cell() {
	VICTIM_SECONDS=${CELL_TIMEOUT:-40}
	[ "$VICTIM_SECONDS" -ge 14 ] || VICTIM_SECONDS=14
	CELL_RESTART=1
}

# cell_victim_start NAME: victim_start; after cell_victim_for_the_cell,
# tried again (after victim_stop) while cell_time_left allows, 3 times at
# most: a loaded guest can outlast a start-up's waits (a server not yet
# listening, a handshake past the client's timeout).
cell_victim_start() {
	local try
	for try in 1 2 3; do
		victim_start "$1" && return 0
		echo "cells: $1 did not start (try $try) at $SECONDS s" >&2
		[ -n "${CELL_RESTART:-}" ] && [ "$(cell_time_left)" -gt 0 ] || return 1
		victim_stop
	done
	return 1
}

# cell_exact_rounds CHECK ATTACK ARGS...: for a victim that holds still at
# the PSN after the request seen on the wire (naive, rdmasec): ATTACK from
# host 3 as one packet at WIRE_PSN + 1 (ARGS added), sent again while CHECK
# (a function; prints the evidence, returns 0 once the hit shows) fails
# for 4 s after a packet (one lost to a loaded guest or a pending ARP
# decides nothing; one more at a PSN already taken is a duplicate rxe drops),
# until the victim is gone or cell_time_left runs out. Sets CELL_EVIDENCE
# (CHECK's output), CELL_HIT (1 on a hit, else '') and CELL_SENT (packets
# sent); returns 1 without a hit.
cell_exact_rounds() {
	local check=$1 attack=$2 e
	shift 2
	CELL_EVIDENCE='' CELL_SENT=0 CELL_HIT=''
	while [ "$(cell_time_left)" -gt 0 ] && cell_victim_running; do
		fabric on 3 "$ATK" "$attack" --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
			--psn-sweep "$(((WIRE_PSN + 1) & 0xffffff)):1" --iface fab3 --sport 4242 "$@" \
			--json >"$CELL/attack.json" 2>>"$CELL/attack.err" && CELL_SENT=$((CELL_SENT + 1))
		echo "$attack: packet at psn $(((WIRE_PSN + 1) & 0xffffff)) of qp $WIRE_QPN at $SECONDS s" >&2
		for _ in $(seq 1 20); do
			e=$($check) && { CELL_EVIDENCE=$e CELL_HIT=1; return 0; }
			sleep 0.2
		done
	done
	e=$($check) && { CELL_EVIDENCE=$e CELL_HIT=1; return 0; }
	return 1
}

# cell_stream_rounds CHECK ATTACK COUNT ARGS...: for a streaming victim,
# whose PSN moves on while the attacker works: rounds of a request captured
# now, then ATTACK from host 3 sweeping COUNT PSNs on from it (ARGS added),
# CHECK (as for cell_exact_rounds) polled while the sweep runs, until CHECK
# passes, the victim is gone or cell_time_left runs out. A round can miss
# (a capture that came late, the packet at the expected PSN lost or refused
# for want of a receive, and the rest run ahead of the QP): the next one
# starts from the PSN seen then. Sets CELL_EVIDENCE (CHECK's output, or its
# last complaint), CELL_HIT (as cell_exact_rounds) and CELL_ROUNDS ("N
# round(s) of COUNT PSNs"); returns 1 without a hit.
cell_stream_rounds() {
	local check=$1 attack=$2 n=$3 r=0 ap e='' hit=''
	shift 3
	while [ -z "$hit" ] && [ "$(cell_time_left)" -gt 0 ] && cell_victim_running; do
		# No request now: the victim may have stopped, broken by the last round.
		victim_wire_bth --now || { e=$($check) && hit=1; continue; }
		r=$((r + 1))
		echo "$attack round $r: qp $WIRE_QPN psn $WIRE_PSN at $SECONDS s" >&2
		fabric on 3 "$ATK" "$attack" --dst "$VICTIM_DST_IP" --src "$VICTIM_SRC_IP" --qpn "$WIRE_QPN" \
			--psn-sweep "$(((WIRE_PSN + 1) & 0xffffff)):$n" --iface fab3 --sport 4242 "$@" \
			--json >"$CELL/attack.json" 2>>"$CELL/attack.err" &
		ap=$!
		while kill -0 $ap 2>/dev/null && [ "$(cell_time_left)" -gt 0 ]; do
			sleep 0.5
			e=$($check) && { hit=1; break; }
		done
		kill $ap 2>/dev/null
		wait $ap 2>/dev/null
		# The hit can show just after the sweep ended.
		[ -n "$hit" ] || { e=$($check) && hit=1; }
	done
	# The victim can be gone (the attack may end it): one last look.
	[ -n "$hit" ] || { e=$($check) && hit=1; }
	# shellcheck disable=SC2034 # the cells read them
	CELL_ROUNDS="$r round(s) of $n PSNs" CELL_EVIDENCE=$e CELL_HIT=$hit
	[ -n "$hit" ]
}

# cell_rdmasec_hit: the rdmasec server took the attack: it audited a fault
# (its counters and the rebuild come after), or the attacked session ended.
cell_rdmasec_hit() {
	grep -qE '"event":"(mac_failure|seq_violation|qp_error|protocol_violation|rebuild)"' "$VICTIM_AUDIT" 2>/dev/null ||
		grep -qE 'event=(rebuilt|closed) conn=1 ' "$VICTIM_SERVER_LOG"
}

# cell_rdmasec_end: after the attack, until the client has quit and the
# server logged the attacked session's end (2 s at most after the client:
# a server that never does decides the same), or cell_time_left runs out;
# then stops both.
cell_rdmasec_end() {
	local grace=0
	# Into the margin, but half of it short of run.sh's kill: victim_stop takes 2 s and more.
	while [ "$(cell_time_left)" -gt $((-CELL_MARGIN / 2)) ]; do
		if ! kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null; then
			grep -q 'event=closed conn=1 ' "$VICTIM_SERVER_LOG" && break
			grace=$((grace + 1))
			[ $grace -ge 10 ] && break
		fi
		sleep 0.2
	done
	victim_stop
}

# cell_victim_error_line [dst]: the first error the victim printed, "[h1] ..."
# or "[h2] ...", the attacked side (DST) first; with "dst", that side only.
# Returns 1 if none.
cell_victim_error_line() {
	local re='server failed: |Failed status|[Cc]ompletion (with )?error|completion error|qp state: ERROR|cq completion failed|[Ff]ailed to|unable to|error event|RDMA_CM_EVENT_[A-Z_]*ERROR|unknown wr_id|Couldn.t|status -[0-9]'
	local l first=$VICTIM_SERVER_LOG fh=h1 second=$VICTIM_CLIENT_LOG sh=h2
	if [ "$VICTIM_DST_IP" = "$VICTIM_CLIENT_IP" ]; then
		first=$VICTIM_CLIENT_LOG fh=h2 second=$VICTIM_SERVER_LOG sh=h1
	fi
	l=$(victim_grep "$first" "$re") && { printf '[%s] %s' "$fh" "$l"; return 0; }
	[ "${1:-}" = dst ] && return 1
	l=$(victim_grep "$second" "$re") && { printf '[%s] %s' "$sh" "$l"; return 0; }
	return 1
}

# cell_broken_evidence: why the attacked QP is known to be broken: the
# attacked side's own error output, else rxe's ERR state from cell_watch_qp,
# else the other side's error output. Returns 1 if nothing shows it.
cell_broken_evidence() {
	cell_victim_error_line dst && return 0
	[ -n "${CELL_QPERR:-}" ] && { printf '%s' "$CELL_QPERR"; return 0; }
	cell_victim_error_line
}

# cell_victim_running: both victim processes still run (an attack aimed at
# a victim whose life ran out would prove nothing). Returns 1 otherwise.
cell_victim_running() {
	kill -0 "$VICTIM_SERVER_PID" 2>/dev/null && kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null
}

# cell_rdmasec_closed_line: the server's close event for the attacked
# connection, reduced to the fields that say why (rebuilds: how many times
# its data path was rebuilt before that).
cell_rdmasec_closed_line() {
	local l
	l=$(grep -m1 'event=closed conn=1 ' "$VICTIM_SERVER_LOG") || return 1
	printf '[h1 rdmasec-server] event=closed code=%s %s %s %s %s' \
		"$(sed -n 's/.* code=\("[^"]*"\).*/\1/p' <<<"$l")" \
		"$(grep -o 'mac_failures=[0-9]*' <<<"$l")" "$(grep -o 'seq_violations=[0-9]*' <<<"$l")" \
		"$(grep -o 'qp_errors=[0-9]*' <<<"$l")" "$(grep -o 'rebuilds=[0-9]*' <<<"$l")"
}

# cell_rdmasec_rebuilt COUNTER: the attacked connection healed instead of
# closing (lib/rebuild.c): the server logged event=rebuilt for it with the
# attack's fault counted (COUNTER: mac_failures or qp_errors, at least 1),
# the client's round trip after the attack came back, and no second
# connection was made (rdmasec-client never reconnects, so that reply came
# over the rebuilt data path of the same session). Prints the rebuilt line
# reduced to the fields that say why, and the reply; returns 1 otherwise.
cell_rdmasec_rebuilt() {
	local l r
	l=$(grep -m1 -E "event=rebuilt conn=1 .* $1=[1-9]" "$VICTIM_SERVER_LOG") || return 1
	r=$(victim_grep "$VICTIM_CLIENT_LOG" '^reply: after the attack$') || return 1
	! grep -q ' conn=2 ' "$VICTIM_SERVER_LOG" || return 1
	printf '[h1 rdmasec-server] event=rebuilt %s reason=%s %s %s; [h2] %s' \
		"$(grep -o 'rebuilds=[0-9]*' <<<"$l")" "$(sed -n 's/.* reason=\("[^"]*"\).*/\1/p' <<<"$l")" \
		"$(grep -o 'mac_failures=[0-9]*' <<<"$l")" "$(grep -o 'qp_errors=[0-9]*' <<<"$l")" "$r"
}

# cell_rdmasec_undecided: for an error cell, how the attacked session ended
# on both sides (a rebuild that did not finish shows as rebuilds=0 and the
# client's own failure), short enough for the evidence's 200 characters.
cell_rdmasec_undecided() {
	local l
	if l=$(cell_rdmasec_closed_line); then
		l=$(sed 's/^\[h1 rdmasec-server\] event=closed/[h1] closed/; s/ seq_violations=[0-9]*//' <<<"$l")
	else
		l="[h1] $(tail -n 1 "$VICTIM_SERVER_LOG")"
	fi
	printf '%s; [h2] %s' "$l" "$(tail -n 1 "$VICTIM_CLIENT_LOG")"
}

# cell_qp_snapshot: rdma(8)'s view of every QP now, into $CELL/qps.txt (the
# guest is root: PSNs and states of all processes' QPs).
cell_qp_snapshot() {
	rdma -d resource show qp >"$CELL/qps.txt" 2>&1
}

# cell_server_qp_err: from the snapshot, "rdma res: <dev> QP <qpn> (<comm>)
# state <S>" for the QP the attacker aimed at (WIRE_QPN on VICTIM_DST_DEV);
# returns 1 unless S is ERR.
cell_server_qp_err() {
	local q=$((WIRE_QPN)) l st comm
	l=$(grep -m1 "^link $VICTIM_DST_DEV/1 lqpn $q " "$CELL/qps.txt") || return 1
	st=$(sed -n 's/.* state \([A-Z]*\) .*/\1/p' <<<"$l") comm=$(sed -n 's/.* comm \([^ ]*\).*/\1/p' <<<"$l")
	printf 'rdma res: %s QP %s (%s) state %s' "$VICTIM_DST_DEV" "$WIRE_QPN" "$comm" "$st"
	[ "$st" = ERR ]
}

# cell_watch_qp PID [keep]: while the attack PID runs (at most 12 s), snapshot
# the QPs every 0.5 s; the first snapshot with the target QP in ERR leaves its
# description in CELL_QPERR ('' if none) and stops PID (with "keep": lets it
# finish, within the 12 s). A long sweep can outlast a streaming victim, and
# its QP with it. Returns PID's exit status.
cell_watch_qp() {
	local l
	CELL_QPERR=''
	for _ in $(seq 1 24); do
		sleep 0.5
		kill -0 "$1" 2>/dev/null || break
		[ -n "$CELL_QPERR" ] && continue
		cell_qp_snapshot
		if l=$(cell_server_qp_err); then
			CELL_QPERR=$l
			[ "${2:-}" = keep ] || break
		fi
	done
	kill "$1" 2>/dev/null
	wait "$1"
}

# cell_aim_at_server / cell_aim_at_client: attack the other direction than
# victim_start chose, for a victim whose QP there sits still at a PSN told in
# clear (ib_send_bw's client: its server never sends a request; ucmatose's
# server: its client sends nothing until it replies).
cell_aim_at_server() {
	VICTIM_DST_IP=$VICTIM_SERVER_IP VICTIM_DST_DEV=rxe1 VICTIM_SRC_IP=$VICTIM_CLIENT_IP VICTIM_SRC_DEV=rxe2 VICTIM_SRC_HOST=2
	export VICTIM_DST_IP VICTIM_DST_DEV VICTIM_SRC_IP VICTIM_SRC_DEV VICTIM_SRC_HOST
}
cell_aim_at_client() {
	VICTIM_DST_IP=$VICTIM_CLIENT_IP VICTIM_DST_DEV=rxe2 VICTIM_SRC_IP=$VICTIM_SERVER_IP VICTIM_SRC_DEV=rxe1 VICTIM_SRC_HOST=1
	export VICTIM_DST_IP VICTIM_DST_DEV VICTIM_SRC_IP VICTIM_SRC_DEV VICTIM_SRC_HOST
}

# cell_cm_capture_start: before victim_start, capture the rdma_cm REQ and REP
# on the bridge (UD SEND Only to QP1, CM attributes 0x0010 and 0x0013): they
# carry each side's QPN and starting PSN in clear. cell_cm_stop ends it once
# both are in the file, or after 3 s: without --immediate-mode libpcap hands
# packets over up to a second late, and a capture stopped as soon as the
# victim runs could end before the REP was printed.
cell_cm_capture_start() {
	tcpdump -l --immediate-mode -i fabbr -nn -x \
		"udp dst port 4791 and udp[8] == 0x64 and (udp[44:2] == 0x0010 or udp[44:2] == 0x0013)" \
		>"$CELL/wire-cm.txt" 2>"$CELL/tcpdump-cm.err" &
	CELL_CM_PID=$!
	for _ in $(seq 1 100); do grep -q listening "$CELL/tcpdump-cm.err" 2>/dev/null && break; sleep 0.1; done
}
cell_cm_stop() {
	[ -n "${CELL_CM_PID:-}" ] || return 0
	for _ in $(seq 1 30); do cell_cm_psns 2>/dev/null && break; sleep 0.1; done
	kill "$CELL_CM_PID" 2>/dev/null
	wait "$CELL_CM_PID" 2>/dev/null
	CELL_CM_PID=''
}

# cell_cm_psns: from that capture, CM_REQ_QPN/CM_REQ_PSN (the client's QPN and
# the PSN its QP expects first) and CM_REP_QPN/CM_REP_PSN (the server's QPN and
# the PSN it expects first, where the client's sends start; measured on the
# fabric: each side's starting PSN field is its receive side's), 0x-hex
# QPNs, decimal PSNs. Returns 1 without both.
cell_cm_psns() {
	local pkts p attr
	CM_REQ_QPN='' CM_REQ_PSN='' CM_REP_QPN='' CM_REP_PSN=''
	# One line of hex per packet: IPv4 (20) UDP (8) BTH (12) DETH (8), then the MAD at byte 48.
	pkts=$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) h = h $i; next }
		{ if (h != "") print h; h = "" } END { if (h != "") print h }' "$CELL/wire-cm.txt")
	for p in $pkts; do
		[ ${#p} -ge 240 ] || continue
		attr=${p:128:4}
		# MAD offsets: REQ local QPN 56, starting PSN 68; REP local QPN 36, starting PSN 44.
		if [ "$attr" = 0010 ] && [ -z "$CM_REQ_QPN" ]; then
			CM_REQ_QPN=0x${p:208:6} CM_REQ_PSN=$((0x${p:232:6}))
		elif [ "$attr" = 0013 ] && [ -z "$CM_REP_QPN" ]; then
			CM_REP_QPN=0x${p:168:6} CM_REP_PSN=$((0x${p:184:6}))
		fi
	done
	export CM_REQ_QPN CM_REQ_PSN CM_REP_QPN CM_REP_PSN
	[ -n "$CM_REQ_QPN" ] && [ -n "$CM_REP_QPN" ] || { echo "cells: no rdma_cm REQ/REP captured" >&2; return 1; }
}

# cell_final_qp_check: after a one-packet attack that ended before
# cell_watch_qp's first look, one more look at the target QP, taken only while
# both victim processes still run and neither has begun to disconnect (a
# disconnect also moves an rdma_cm QP to ERR). Sets CELL_QPERR if ERR.
cell_final_qp_check() {
	local l
	[ -z "${CELL_QPERR:-}" ] || return 0
	sleep 0.1
	kill -0 "$VICTIM_SERVER_PID" 2>/dev/null && kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null || return 0
	grep -qi disconnect "$VICTIM_SERVER_LOG" "$VICTIM_CLIENT_LOG" && return 0
	cell_qp_snapshot
	grep -qi disconnect "$VICTIM_SERVER_LOG" "$VICTIM_CLIENT_LOG" && return 0
	l=$(cell_server_qp_err) && CELL_QPERR=$l
	return 0
}

# cell_ucmatose_broken: ucmatose counts completions whatever their status, so
# when its server's QP breaks, the flushed receives end the server's receive
# phase at once: it reports "data transfers complete" although its client
# never got to send its replies. Prints that; returns 1 otherwise.
cell_ucmatose_broken() {
	grep -q 'data transfers complete' "$VICTIM_SERVER_LOG" || return 1
	grep -q 'sending replies' "$VICTIM_CLIENT_LOG" && return 1
	printf '[h1] data transfers complete (receives flushed), but [h2] never sent its replies: %s' \
		"$(tail -n 1 "$VICTIM_CLIENT_LOG")"
}

# ---- nvmf (the kernel's NVMe over Fabrics): what the target and the host showed ----

# The target's kernel lines that say it took an attack (its routine lines
# are "adding nsid", "enabling port", "creating nvm controller").
CELL_NVMF_HIT='[Ff]atal|[Ee]rror|failed|[Dd]isconnect|reject|invalid'

# _cell_nvmf_line FILE REGEX: the first matching kernel line without its timestamp.
_cell_nvmf_line() {
	local l
	l=$(victim_grep "$1" "$2") || return 1
	printf '%s' "$(sed 's/^\[ *[0-9.]*\] //' <<<"$l")"
}

# cell_nvmf_watch PID [SECONDS]: while the attack PID runs (at most SECONDS,
# default 30), waits for the target to take the hit: its kernel logs it, or
# rdma(8) shows the attacked QP (WIRE_QPN on rxe1) in ERR (a bogus rkey
# breaks the QP silently), or the QP it showed before the attack is gone (on
# an idle machine the host notices within a second and the target destroys
# the broken QP between two looks); CELL_QPERR says which. Then stops PID.
# Returns 0 if one was seen.
cell_nvmf_watch() {
	local end=$((SECONDS + ${2:-30})) l comm q=$((WIRE_QPN))
	CELL_QPERR=''
	cell_qp_snapshot
	comm=$(grep -m1 "^link $VICTIM_DST_DEV/1 lqpn $q " "$CELL/qps.txt" | sed -n 's/.* comm \([^ ]*\).*/\1/p')
	while [ $SECONDS -lt $end ] && kill -0 "$1" 2>/dev/null; do
		grep -Eq "$CELL_NVMF_HIT" "$VICTIM_SERVER_LOG" && break
		cell_qp_snapshot
		l=$(cell_server_qp_err) && { CELL_QPERR=$l; break; }
		if [ -n "$comm" ] && grep -q '^link ' "$CELL/qps.txt" && ! grep -q "^link $VICTIM_DST_DEV/1 lqpn $q " "$CELL/qps.txt"; then
			CELL_QPERR="rdma res: $VICTIM_DST_DEV QP $WIRE_QPN ($comm) torn down by the target during the attack"
			break
		fi
		sleep 0.3
	done
	kill "$1" 2>/dev/null
	wait "$1"
	grep -Eq "$CELL_NVMF_HIT" "$VICTIM_SERVER_LOG" || [ -n "$CELL_QPERR" ]
}

# cell_nvmf_recovery [SECONDS]: waits (default 45 s: a host whose target QP
# died silently first exhausts its retries) until the host has come
# back ("Successfully reconnected") or given the controller up, then 2 s more
# for I/O to resume (the stretch without I/O ends there). Returns 1 if the
# host never began to recover.
cell_nvmf_recovery() {
	local end=$((SECONDS + ${1:-45}))
	while [ $SECONDS -lt $end ]; do
		nvmf_host_log 'Successfully reconnected|Removing ctrl|[Dd]eleting' >/dev/null && break
		sleep 0.3
	done
	sleep 2
	nvmf_host_log 'error recovery|Reconnecting|reconnect|Removing ctrl' >/dev/null
}

# cell_nvmf_verdict ATTACK WHAT: after an attack on the target's I/O queue
# (WHAT: what was sent, for a miss), waits for the host's recovery and
# prints the cell's result: succeeded with cell_nvmf_reaction when the
# target's kernel logged the hit or its QP was seen in ERR, else error. Stops the victim.
cell_nvmf_verdict() {
	local ev
	cell_nvmf_recovery
	victim_attack_done
	ev=$(cell_nvmf_reaction)
	victim_stop
	if [ -n "$ev" ] && { grep -Eq "$CELL_NVMF_HIT" "$VICTIM_SERVER_LOG" || [ -n "${CELL_QPERR:-}" ]; }; then
		matrix_result "$1" nvmf succeeded "" "$ev"
	else
		matrix_result "$1" nvmf error "" "missed: $2; ${ev:-neither the target nor the host logged anything}; fio: $(tail -n 1 "$VICTIM_CLIENT_LOG")"
	fi
}

# cell_nvmf_reaction: "[h1] <the target's first line of the hit>; [h2] <how
# the host recovered>; no I/O for S s", from what the kernel and the device's
# I/O counter showed. Returns 1 if neither side showed anything.
cell_nvmf_reaction() {
	local t h r g
	t=$(_cell_nvmf_line "$VICTIM_SERVER_LOG" "$CELL_NVMF_HIT") || t=${CELL_QPERR:-}
	h=$(_cell_nvmf_line "$VICTIM_NVMF_HOST_LOG" 'error recovery|Reconnecting|I/O [0-9]* QID|reset')
	r=$(_cell_nvmf_line "$VICTIM_NVMF_HOST_LOG" 'Successfully reconnected|Removing ctrl|[Dd]eleting|Failed reconnect')
	[ -n "$t" ] || [ -n "$h" ] || return 1
	g=$(nvmf_io_gap) && g="; no I/O for ${g%% *} s" || g=''
	h=${h#nvme }
	r=${r#nvme }
	printf '[h1] %s; [h2] %s%s%s' "${t:-(nothing)}" "${h:-(nothing)}" "${r:+, then ${r#nvme[0-9]*: }}" "$g"
}

# ---- the MPI victims (victims.bash: mpi-verbs, mpi-rdmasec) ----

# cell_mpi_audit_hit: mpi-rdmasec's rank 0 audited a fault of the kind in
# CELL_MPI_EVENTS (an ERE of audit events, docs/audit.md).
cell_mpi_audit_hit() {
	grep -qE "\"event\":\"(${CELL_MPI_EVENTS:-mac_failure})\"" "$VICTIM_AUDIT" 2>/dev/null
}

# _cell_mpi_audit_line EVENT: rank 0's first audit record of EVENT, as
# "EVENT (result)", or returns 1.
_cell_mpi_audit_line() {
	local l
	l=$(grep -m1 "\"event\":\"$1\"" "$VICTIM_AUDIT" 2>/dev/null) || return 1
	printf '%s (%s)' "$1" "$(sed -n 's/.*"result":"\([^"]*\)".*/\1/p' <<<"$l")"
}

# cell_mpi_broken: the MPI job broke: the first sign in either rank's output or
# mpirun's (a message not as sent, a signal, an MPI abort, a completion error);
# prints it, returns 1 if none.
cell_mpi_broken() {
	local re='corrupted|Signal: [A-Za-z ]+|exited on signal [0-9]+ \([A-Za-z ]+\)|MPI_ABORT|[Cc]ompletion (with )?error|fi_cq_readerr' l f h
	for f in "$VICTIM_SERVER_LOG:h1 rank 0" "$VICTIM_CLIENT_LOG:h2 rank 1" "$CELL/mpirun.log:mpirun"; do
		h=${f#*:}
		l=$(grep -m1 -oE "$re" "${f%%:*}" 2>/dev/null) && { printf '[%s] %s' "$h" "$l"; return 0; }
	done
	return 1
}

# cell_mpi_verbs_hit CHECK WHAT: for mpi-verbs, CHECK's hit (a cell's own
# check, as for cell_stream_rounds), else the job broke after WHAT (the
# attack); prints the evidence (or CHECK's complaint), returns 1 without a hit.
cell_mpi_verbs_hit() {
	local e b
	e=$($1) && { printf '%s' "$e"; return 0; }
	b=$(cell_mpi_broken) && { printf '%s (after %s)' "$b" "$2"; return 0; }
	printf '%s' "$e"
	return 1
}

# cell_mpi_verdict ATTACK FAULTS MECHANISM: after cell_stream_rounds against an
# MPI victim (CELL_HIT, CELL_EVIDENCE, CELL_ROUNDS), the cell's one result.
# mpi-verbs: stopped at once (an attacked job may hang); succeeded on the
# rounds' hit. mpi-rdmasec: told the attack is over, it runs its last round
# trips and ends by itself; blocked when rank 0 audited one of FAULTS (an
# ERE) and rebuilt its data path, and both ranks checked every message
# through to the end; succeeded if forged bytes reached either rank.
cell_mpi_verdict() {
	local a=$1 faults=$2 mech=$3 f r t l
	victim_attack_done
	if [ "$VICTIM" = mpi-verbs ]; then
		victim_stop
		if [ -n "${CELL_HIT:-}" ]; then
			grep -q '^\[h[12] rank\|^\[mpirun\]' <<<"$CELL_EVIDENCE" || l=$(cell_mpi_broken) || l='ran on, stopped by the cell'
			matrix_result "$a" "$VICTIM" succeeded "" "$CELL_EVIDENCE${l:+; the job: $l}"
		else
			matrix_result "$a" "$VICTIM" error "" "missed in ${CELL_ROUNDS:-no rounds}: ${CELL_EVIDENCE:-nothing seen}"
		fi
		return
	fi
	t=$(cell_time_left)
	victim_wait $((t > 5 ? t : 5))
	if grep -q corrupted "$VICTIM_SERVER_LOG" "$VICTIM_CLIENT_LOG" 2>/dev/null; then
		matrix_result "$a" "$VICTIM" succeeded "" "forged bytes reached the application: $(mpi_victim_line)"
	elif f=$(grep -m1 -oE "\"event\":\"($faults)\"" "$VICTIM_AUDIT" 2>/dev/null) &&
		f=$(_cell_mpi_audit_line "${f:9:-1}") && r=$(_cell_mpi_audit_line rebuild) && [ "$r" = "rebuild (ok)" ] &&
		l=$(mpi_victim_line); then
		matrix_result "$a" "$VICTIM" blocked "$mech" "$l; [h1 audit] $f, $r"
	else
		matrix_result "$a" "$VICTIM" error "" "not judged (${CELL_ROUNDS:-no rounds}): $(mpi_victim_line); audit: $(grep -oE '"event":"[a-z_]*"' "$VICTIM_AUDIT" 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')"
	fi
}
