# SPDX-License-Identifier: MIT
# A3 (mem-access): the attacker on host 3 is one more client of the service.
# It learns two registrations of its own there, lets the rxe model (rkey =
# sequential index << 8 | random byte, buffers at a fixed stride) predict the
# registration made before them, and sweeps its 256 key bytes, one fresh
# connection per guess, to READ (and WRITE) another client's memory.
#
# naive: the multi-client mode of rdmasec-naive-victim (--clients: one PD,
#   one remote-read/write MR per client); victims.bash's single-client naive
#   victim has no second client's memory to take, so this cell starts the
#   multi-client one itself, and its client stores a secret there.
# rdmasec: a second authenticated connection tries the same through forged
#   grant descriptors; every guess breaks only its own QP.
# The others serve one peer and admit no other client, so no attacker QP can
# exist in their PD: rdma(8)'s view of their MRs (rkey 0 = no remote access)
# says which of the other attacks applies instead.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

MEMACC_SECRET=MATRIX-SECRET-of-client-1

# Start the multi-client naive victim the way victim_start would, logs included.
_memacc_naive_start() {
	local g1 g2 i
	g1=$(fabric gid-index 1) g2=$(fabric gid-index 2)
	VICTIM=naive VICTIM_SERVER_LOG=$CELL/victim-server.log VICTIM_CLIENT_LOG=$CELL/victim-client.log
	VICTIM_SERVER_PID='' VICTIM_CLIENT_PID='' VICTIM_TCPDUMP_PID=''
	fabric on 1 timeout 16 stdbuf -oL -eL "$BIN/attack/rdmasec-naive-victim" server -d rxe1 -g "$g1" \
		--clients 48 -t 16 >"$VICTIM_SERVER_LOG" 2>&1 &
	VICTIM_SERVER_PID=$!
	fabric wait-port 18516 15 2>>"$CELL/victim-errors.log" || return 1
	fabric on 2 timeout 16 stdbuf -oL -eL "$BIN/attack/rdmasec-naive-victim" client -d rxe2 -g "$g2" \
		-l "$VICTIM_CLIENT_IP" -w "$MEMACC_SECRET" -t 14 "$VICTIM_SERVER_IP" >"$VICTIM_CLIENT_LOG" 2>&1 &
	VICTIM_CLIENT_PID=$!
	for i in $(seq 1 100); do
		grep -q "buffer changed .*$MEMACC_SECRET" "$VICTIM_SERVER_LOG" && return 0
		sleep 0.1
	done
	return 1
}

# A JSON field of the attack's result (strings without quotes).
_memacc_field() {
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(str(v).lower() if isinstance(v, bool) else v)' \
		"$CELL/attack.json" "$1" 2>/dev/null
}

_memacc_naive() {
	local line
	_memacc_naive_start || { matrix_result mem-access naive error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; return; }
	fabric on 3 "$ATK" mem-access --dst "$VICTIM_SERVER_IP" --source 10.77.0.3 -d rxe3 -g "$(fabric gid-index 3)" \
		--write WRITTEN-BY-MEMACC --write-offset 40 --max-time 10 --json >"$CELL/attack.json" 2>"$CELL/attack.err"
	echo "mem-access exit $?" >&2
	sleep 0.5 # the victim prints its buffers every 0.1 s
	victim_stop
	if line=$(victim_grep "$VICTIM_SERVER_LOG" "^client 1 buffer changed .*WRITTEN-BY-MEMACC"); then
		matrix_result mem-access naive succeeded "" "[h1] $line"
	elif [ "$(_memacc_field found)" = true ]; then
		matrix_result mem-access naive succeeded "" "read $(_memacc_field rkey) @ $(_memacc_field addr): $(_memacc_field read_text)"
	else
		matrix_result mem-access naive error "" "nothing found: $(_memacc_field tries) tries, stop $(_memacc_field stop); $(tail -n 1 "$CELL/attack.err")"
	fi
}

_memacc_rdmasec() {
	local id=client line
	victim_start rdmasec || { matrix_result mem-access rdmasec error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; return; }
	# Another authenticated client: its own credential when the PKI has one.
	[ -e "$VICTIM_PKI/client2.pem" ] && id=client2
	fabric on 3 "$ATK" mem-access --victim rdmasec --dst "$VICTIM_SERVER_IP" --source 10.77.0.3 \
		--certs "$VICTIM_PKI" --identity "$id" --max-time 5 --json >"$CELL/attack.json" 2>"$CELL/attack.err"
	echo "mem-access exit $?" >&2
	victim_attack_done
	victim_wait 12
	if [ "$(_memacc_field found)" = true ]; then
		matrix_result mem-access rdmasec succeeded "" "read $(_memacc_field rkey) @ $(_memacc_field addr): $(_memacc_field read_text)"
	elif [ "$(_memacc_field misses)" -ge 1 ] 2>/dev/null && grep -q 'reply: after the attack' "$VICTIM_CLIENT_LOG"; then
		# The server's audit record of one refused guess: the attacker's own connection failed.
		line=$(victim_grep "$VICTIM_AUDIT" '"event": ?"qp_error".*"peer_addr": ?"10\.77\.0\.3:') && line="[h1 audit] $line" ||
			line="attacker: $(_memacc_field tries) guesses, 0 hits: $(_memacc_field evidence)"
		matrix_result mem-access rdmasec blocked \
			"per-connection PD + type-2 windows bound to the grantee's QP, grants at random addresses" "$line"
	else
		matrix_result mem-access rdmasec error "" "no verdict: $(_memacc_field tries) tries; client: $(tail -n 1 "$VICTIM_CLIENT_LOG")"
	fi
}

# Third-party victims: one peer each, so A3 has no foothold; say what rxe shows of their MRs.
_memacc_third_party() {
	local v=$1 mrs remote line
	victim_start "$v" || { matrix_result mem-access "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; return; }
	rdma -d resource show mr >"$CELL/mrs.txt" 2>&1
	victim_stop
	mrs=$(grep '^dev rxe1 ' "$CELL/mrs.txt")
	remote=$(grep -v ' rkey 0x0 ' <<<"$mrs" | grep ' rkey 0x' | head -n 1)
	if [ -z "$mrs" ]; then
		matrix_result mem-access "$v" error "" "rdma res shows no MR of the victim: $(head -n 1 "$CELL/mrs.txt")"
	elif [ -z "$remote" ]; then
		line=$(head -n 1 <<<"$mrs")
		matrix_result mem-access "$v" not-applicable \
			"no remote access: its MRs have rkey 0 (LOCAL_WRITE only), and it admits one peer" "[h1 rdma res] $line"
	else
		matrix_result mem-access "$v" not-applicable \
			"single-peer service: no attacker QP can join its PD; its rkey is usable only at the peer's QP (inject/impersonate)" \
			"[h1 rdma res] $remote"
	fi
}

# nvmf: the kernel target lends no memory of its own to peers: it pulls a
# write's data with RDMA READ from the host and pushes a read's with RDMA
# WRITE to it, at the host's buffers, which the host registers per command
# (its rkey travels in the capsule and is invalidated at completion). rdma(8)
# shows what either side registered while I/O ran.
_memacc_nvmf() {
	local t h
	victim_start nvmf || { matrix_result mem-access nvmf error "" "victim did not start: $(tail -n 1 "$CELL/victim-errors.log" 2>/dev/null)"; victim_stop; return; }
	sleep 2
	rdma -d resource show mr >"$CELL/mrs.txt" 2>&1
	rdma resource show pd >"$CELL/pds.txt" 2>&1
	victim_stop
	t=$(grep -c '^dev rxe1 ' "$CELL/mrs.txt") h=$(grep -c '^dev rxe2 ' "$CELL/mrs.txt")
	matrix_result mem-access nvmf not-applicable \
		"kernel target: no memory lent to peers (it READs write data from / WRITEs read data to the host's buffers, registered per command and invalidated at completion); no attacker QP joins its PD" \
		"[rdma res] while fio ran: $t MR(s) on rxe1 (target), $h on rxe2 (host): $(grep -m1 '^dev rxe[12] ' "$CELL/mrs.txt" | cut -c1-90)"
}

cell_mem_access() {
	case "$1" in
	naive) _memacc_naive ;;
	nvmf) _memacc_nvmf ;;
	rdmasec) _memacc_rdmasec ;;
	*) _memacc_third_party "$1" ;;
	esac
}
