# SPDX-License-Identifier: MIT
# Every row of the matrix against the victim rdmasec-blk (victims.bash:
# rdmasec-blkd on host 1, rdmasec-blk bench --verify in a loop on host 2),
# sourced by run.sh after the row's own cell script: blk_cell ATTACK runs
# the row. The attacks are the rows' own tools, aimed the way the row aims
# them at the other victims; what differs is the evidence a storage victim
# owes: the blocks past the client's region still hold the pattern (their
# SHA-256), every verify run of the client is clean (an error, never wrong
# data), and what the target audited (a frame that failed authentication,
# a queue pair error, the data path rebuilt).
# Outcomes: succeeded whenever a block changed or a verify run found wrong
# data, whatever else happened; blocked when the target audited the hit and
# the client's run after the attack was clean (the data path healed);
# detected when it audited the hit and the client got errors instead; error
# when the attack did not land.

BLK_SPOOF_TEXT='BLK-SPOOFED-BY-RDMASEC-ATTACK '
BLK_SNIFF_TEXT=BLK-BLOCK-WRITTEN-BY-HOST-2.

# _blk_start ATTACK [SECONDS]: victim_start rdmasec-blk (life SECONDS,
# default 60: the cell ends it once its evidence is in), or the error line.
_blk_start() {
	# shellcheck disable=SC2034 # victims.bash reads it
	VICTIM_SECONDS=${2:-60}
	victim_start rdmasec-blk && return 0
	matrix_result "$1" rdmasec-blk error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"
	victim_stop
	return 1
}

# _blk_end: tells the client the attack is over and waits (at most 90 s)
# for the run it is in to end; then BLK_EV is "[h1] <untouched blocks>;
# [h2] <runs>", BLK_CLEAN is 1 when no block changed and no run found wrong
# data, and BLK_WENT_ON is 1 when no run failed and one ended after the attack.
_blk_end() {
	local u
	victim_attack_done
	victim_wait 90
	BLK_CLEAN=1
	u=$(blk_untouched) && u="$u =pattern" || { u="$u CHANGED"; BLK_CLEAN=0; }
	blk_runs
	[ "$BLK_RUNS_VERIFY" = 0 ] || BLK_CLEAN=0
	BLK_WENT_ON=0
	[ "$BLK_RUNS_FAILED" = 0 ] && [ "$BLK_RUNS_AFTER" -ge 1 ] && BLK_WENT_ON=1
	BLK_EV="[h1] $u; [h2] $BLK_RUNS"
}

# _blk_verdict ATTACK HIT MECHANISM-BLOCKED MECHANISM-DETECTED WHAT: the
# cell's line after _blk_end. HIT: what the target audited ('' if nothing).
_blk_verdict() {
	if [ "$BLK_CLEAN" != 1 ]; then
		matrix_result "$1" rdmasec-blk succeeded "" "$BLK_EV; ${2:-nothing audited}; $(_blk_bad_run)"
	elif [ -z "$2" ]; then
		matrix_result "$1" rdmasec-blk error "" "missed: $5; the target audited nothing; $BLK_EV"
	elif [ "$BLK_WENT_ON" = 1 ]; then
		matrix_result "$1" rdmasec-blk blocked "$3" "$BLK_EV; [h1 audit] $2"
	elif [ "$BLK_RUNS_FAILED" -ge 1 ]; then
		matrix_result "$1" rdmasec-blk detected "$4" "$BLK_EV; [h1 audit] $2; $(_blk_bad_run)"
	else
		matrix_result "$1" rdmasec-blk error "" "undecided: no run ended after the attack; $BLK_EV; [h1 audit] $2"
	fi
}

# _blk_bad_run: the client's first run that failed, as it reported it.
_blk_bad_run() {
	victim_grep "$VICTIM_CLIENT_LOG" '^run .* rc=[1-9]' || echo "no run failed"
}

# _blk_hit: what the target audited of an attack on its data path: a
# forged frame, a broken queue pair (the event), a rebuild (with its reason).
_blk_hit() {
	local f r
	f=$(blk_audit 'mac_failure|seq_violation|qp_error|protocol_violation') && f=${f%%:*} || f=''
	r=$(blk_audit rebuild) && r=$(sed 's/^rebuild: epoch [0-9]*: /rebuild: /' <<<"$r" | cut -c1-60) || r=''
	[ -n "$f$r" ] || return 1
	printf '%s%s%s' "$f" "${f:+${r:+, }}" "$r"
}

# _blk_wait_hit SECONDS: waits that long at most for _blk_hit (one grep a
# look: every process costs on the emulated guest).
_blk_wait_hit() {
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt $end ]; do
		grep -qE '"event":"(mac_failure|seq_violation|qp_error|protocol_violation|rebuild)"' "$VICTIM_AUDIT" && return 0
		sleep 0.3
	done
	return 1
}

# _blk_rounds DEV COMM DST SRC ATTACK-ARGS...: up to 6 rounds (at most 60
# s) of: the queue pair of COMM on DEV that a session uses now, and the PSN
# it expects (rdma res, as the nvmf spoof cells read it: the wire shows the
# same QPN and PSN in every BTH, but a capture's start-up on a loaded guest
# outlasted the client's sessions), then the forger from host 3 as if from
# SRC, sweeping 20000 PSNs from that one, until the target audits the hit.
# Each verify run is a session of its own: a sweep aimed at one that ended
# meanwhile hits nothing, so another round. Sets BLK_WHAT (what was sent).
_blk_rounds() {
	local r q p ap t0=$SECONDS dev=$1 comm=$2 dst=$3 src=$4
	shift 4
	BLK_WHAT='nothing sent: no session seen'
	for r in 1 2 3 4 5 6; do
		[ $((SECONDS - t0)) -lt 60 ] && kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null || break
		q=''
		for _ in $(seq 1 50); do
			read -r q p _ <<<"$(_blk_qp "$dev" "$comm")"
			[ -n "$q" ] && break
			sleep 0.2
		done
		[ -n "$q" ] || continue
		timeout 30 fabric on 3 "$@" --dst "$dst" --src "$src" --qpn "$(printf '0x%x' "$q")" \
			--psn-sweep "$p:20000" --iface fab3 --sport 4242 --json >"$CELL/attack.json" 2>>"$CELL/attack.err" &
		ap=$!
		# Stopped at the hit: the session in flight then ends after the attack, its verify run the evidence.
		while kill -0 $ap 2>/dev/null && ! _blk_wait_hit 1; do :; done
		kill $ap 2>/dev/null
		wait $ap
		echo "round $r: $2 exit $? ($dev qpn $q psn $p) at $SECONDS s" >&2
		BLK_WHAT="$r round(s) of 20000 PSNs from the expected one, last at $dev QP $(printf '0x%x' "$q")"
		_blk_wait_hit 3 && return 0
	done
	return 1
}

# inject (A1): forged SENDs carrying a well-formed rdmasec frame (inject.sh's) at the target's queue pair.
_blk_inject() {
	_blk_start inject || return
	_blk_rounds rxe1 rdmasec-blkd "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" "$ATK" inject --data-hex "$CELL_INJECT_FRAME"
	_blk_end
	_blk_verdict inject "$(_blk_hit)" \
		"per-message AEAD (AES-256-GCM, sequence in nonce) rejected the forged frame; the data path was rebuilt over TLS; the verify runs went on clean" \
		"per-message AEAD rejected the forged frame; the session ended with an error, never wrong data" \
		"forged SENDs, $BLK_WHAT"
}

# qp-error (A2): bogus-rkey RDMA WRITEs at the target's queue pair.
_blk_qp_error() {
	_blk_start qp-error || return
	_blk_rounds rxe1 rdmasec-blkd "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" "$ATK" qp-error --kind rkey --rkey 0x1234
	_blk_end
	_blk_verdict qp-error "$(_blk_hit)" \
		"the transport killed the QP (rdmasec cannot prevent that); the target counted it, the data path was rebuilt over TLS (new QP, PSNs, keys); the verify runs went on clean" \
		"the QP error surfaced as an error of the session (logged, audited), never as wrong data" \
		"bogus-rkey WRITEs, $BLK_WHAT"
}

# impersonate (NeVerMore 4.1): user nobody on host 2, through rxe2, bogus-rkey
# WRITEs at the target's QPN (read off the wire: a stronger attacker than
# the model) over a blind PSN sweep: the PSNs travel only inside TLS.
_blk_impersonate() {
	local ev hit
	_blk_start impersonate || return
	victim_wire_bth --now || { matrix_result impersonate rdmasec-blk error "" "no RoCE request seen"; victim_stop; return; }
	timeout 30 fabric on 2 setpriv --reuid=65534 --regid=65534 --clear-groups "$ATK" impersonate -d rxe2 \
		--dst "$VICTIM_SERVER_IP" --qpn "$WIRE_QPN" --psn-sweep 0:16777216 --max-time 8 --json \
		>"$CELL/attack.json" 2>"$CELL/attack.err"
	echo "impersonate exit $? (qpn $WIRE_QPN)" >&2
	ev=$(python3 -c 'import json, sys
a = json.load(open(sys.argv[1]))
print("nobody on h2: %d PSNs in %.1f s (%.2f%% of 2^24)" % (a["packets"], a["elapsed_s"], 100.0 * a["packets"] / (1 << 24)))' \
		"$CELL/attack.json" 2>>"$CELL/stderr.py") || ev="impersonate gave no result: $(tail -n 1 "$CELL/attack.err")"
	_blk_end
	hit=$(_blk_hit) || hit=''
	if [ "$BLK_CLEAN" = 1 ] && [ -z "$hit" ] && [ "$BLK_WENT_ON" = 1 ]; then
		matrix_result impersonate rdmasec-blk blocked \
			"random 24-bit PSN per direction, QPN/PSN only inside TLS: a blind sweep cannot finish in time" \
			"$BLK_EV; $ev"
	else
		_blk_verdict impersonate "$hit" \
			"the blind sweep hit the PSN; the QP error was audited and the data path rebuilt; the verify runs went on clean" \
			"the blind sweep hit the PSN; the QP error was audited, the client got an error, never wrong data" "$ev"
	fi
}

# mem-access (A3): the attacker would be a second client reading another
# client's memory through guessed keys. rdmasec-blkd grants no memory to
# anyone: it READs a write's data from, and WRITEs a read's data into, the
# client's own sealed grants (type-2 windows bound to the target's queue
# pair, one command each). rdma(8) shows what was registered while the
# client ran.
_blk_mem_access() {
	local t h
	_blk_start mem-access || return
	sleep 1
	rdma -d resource show mr >"$CELL/mrs.txt" 2>&1
	_blk_end
	t=$(grep '^dev rxe1 ' "$CELL/mrs.txt" | grep -c 'comm rdmasec-blkd')
	h=$(grep '^dev rxe2 ' "$CELL/mrs.txt" | grep -Ec 'comm rdmasec-blk( |$)')
	matrix_result mem-access rdmasec-blk not-applicable \
		"no memory lent to peers: the target grants nothing (it READs/WRITEs the client's sealed grants, type-2 windows bound to its own QP, one command each); a second client's QPs end at the target" \
		"$BLK_EV; [rdma res] $t MR(s) of rdmasec-blkd on rxe1, $h of rdmasec-blk on rxe2"
}

# _blk_legit write|read: one more session of host 2's client on 256 KiB at BLK_IO_MIB MiB (stdin / stdout).
_blk_legit() {
	timeout 30 fabric on 2 "$BIN/blk/cli/rdmasec-blk" "$1" --server "$VICTIM_SERVER_IP" --certs "$VICTIM_PKI" \
		--export disk --source "$VICTIM_CLIENT_IP" -t 10000 --offset $((BLK_IO_MIB * 1048576)) --length 262144
}

# exhaust (A4): 64 TCP connections from host 3 that never start TLS, held
# (up to 60 s) while the client (host 2) writes and reads back 256 KiB; the
# attacker is stopped then (it writes no JSON when stopped: its "holding N
# connections" line counts them).
_blk_exhaust() {
	local before held ev rc n q
	_blk_start exhaust 60 || return
	before=$(_exh_qps)
	_exh_attack --proto rdmasec --connections 64 --no-probe --hold 60
	_exh_wait "$CELL/atk.err" holding
	held=$(_exh_qps)
	kill -0 "$EXH_PID" 2>/dev/null && ev=held || ev="not held"
	# Its own 256 KiB at BLK_IO_MIB MiB: the verify loop writes the first BLK_IO_KIB of the export at the same time.
	head -c 262144 /dev/urandom >"$CELL/legit.in"
	_blk_legit write <"$CELL/legit.in" >/dev/null 2>"$CELL/legit.err" &&
		_blk_legit read >"$CELL/legit.out" 2>>"$CELL/legit.err" &&
		{ cmp -s "$CELL/legit.in" "$CELL/legit.out" || { echo "read back differs" >>"$CELL/legit.err"; false; }; }
	rc=$?
	kill -0 "$EXH_PID" 2>/dev/null || ev="not held"
	kill "$EXH_PID" 2>/dev/null
	wait "$EXH_PID"
	_blk_end
	n=$(sed -n 's/.*holding \([0-9]*\) connections.*/\1/p' "$CELL/atk.err")
	q=$(sed -n 's/.* \([0-9]*\) answered with a QP.*/\1/p' "$CELL/atk.err")
	# rxe1's QP count moves with the client's own sessions: the attacker's count of QPs its connections got decides.
	echo "exhaust: rxe1 QPs $before before, $held while held (the client's sessions included)" >&2
	if [ "${n:-0}" = 64 ] && [ "$ev" = held ] && [ "$q" = 0 ] && [ $rc = 0 ]; then
		ev="${n:-0} conns w/o TLS $ev, ${q:-?} got a QP; legit write+read rc $rc"
		matrix_result exhaust rdmasec-blk blocked "no RDMA resources before TLS auth and OPEN; the held connections do not stop a legitimate session" "$BLK_EV; $ev"
		return
	fi
	ev="${n:-0} conns w/o TLS $ev, ${q:-?} got a QP; legit write+read rc $rc"
	if [ $rc != 0 ] && [ "${n:-0}" -ge 1 ]; then
		matrix_result exhaust rdmasec-blk succeeded "" "$ev ($(head -c 80 "$CELL/legit.err")); $BLK_EV"
	else
		matrix_result exhaust rdmasec-blk error "" "$ev; $(tail -n 1 "$CELL/atk.err")"
	fi
}

# cm-disconnect (NeVerMore 4.3): host 3 listens for rdma_cm REQ/REP while the
# victim starts (there are none: rdmasec-blk sets its queue pairs up over
# TLS), then aims forged DREQs at the target's host with the wire's QPN.
_blk_cm_disconnect() {
	local lp hit n
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_CLIENT_IP" --sniff fabbr --iface fab3 --timeout 8 \
		--json >"$CELL/learn.json" 2>"$CELL/learn.err" &
	lp=$!
	for _ in $(seq 1 50); do grep -q listening "$CELL/learn.err" 2>/dev/null && break; sleep 0.1; done
	_blk_start cm-disconnect || { kill "$lp" 2>/dev/null; wait "$lp"; return; }
	wait "$lp"
	n=$(sed -n 's/.*"cm_messages":\([0-9]*\).*/\1/p' "$CELL/learn.json")
	victim_wire_bth --now || true
	fabric on 3 "$ATK" cm-disconnect --dst "$VICTIM_SERVER_IP" --src "$VICTIM_CLIENT_IP" \
		--local-comm-id 0x1 --remote-comm-id 0x2 --remote-qpn "${WIRE_QPN:-0x11}" --count 20 \
		--iface fab3 --json >"$CELL/blind.json" 2>>"$CELL/attack.err"
	sleep 1
	_blk_end
	hit=$(_blk_hit) || hit=''
	if grep -q '"learned":true' "$CELL/learn.json"; then
		matrix_result cm-disconnect rdmasec-blk error "" "the attacker saw an rdma_cm REQ/REP: $(head -c 120 "$CELL/learn.json")"
	elif [ "$BLK_CLEAN" = 1 ] && [ -z "$hit" ] && [ "$BLK_WENT_ON" = 1 ] &&
		grep -q '"sent":20,"ok":true' "$CELL/blind.json" && ! grep 'event=close' "$VICTIM_SERVER_LOG" | grep -vq 'client done'; then
		matrix_result cm-disconnect rdmasec-blk blocked "no rdma_cm; a session ends only over its authenticated TLS channel" \
			"$BLK_EV; ${n:-0} CM messages seen; 20 forged DREQs to h1 QP ${WIRE_QPN:-none}; every session ended 'client done'"
	else
		_blk_verdict cm-disconnect "$hit" "" "forged DREQs disturbed the session (audited)" "20 forged DREQs"
	fi
}

# sniff (T3): the observer on the bridge (rdmasec-attack sniff, and a capture
# of every RoCE packet) while host 2 writes a block of its own text (in the
# cells' MiB) and reads one of the pattern's blocks back: neither text may
# appear on the wire.
_blk_sniff() {
	local sp tp w r pat got nw nr ev wrc
	"$ATK" sniff -i fabbr --seconds 60 --filter 'udp port 4791 or tcp' --json="$CELL/sniff.json" \
		>"$CELL/sniff.txt" 2>"$CELL/sniff.err" &
	sp=$!
	tcpdump -i fabbr -nn -w "$CELL/blocks.pcap" 'udp port 4791' 2>"$CELL/tcpdump-blocks.err" &
	tp=$!
	for _ in $(seq 1 100); do
		grep -q capturing "$CELL/sniff.err" 2>/dev/null && grep -q listening "$CELL/tcpdump-blocks.err" 2>/dev/null && break
		sleep 0.1
	done
	_blk_start sniff || { kill -INT $sp $tp; wait $sp $tp; return; }
	w=$((BLK_IO_MIB * 1048576)) r=$(((BLK_IO_MIB + 2) * 1048576))
	for _ in $(seq 1 160); do printf '%s' "$BLK_SNIFF_TEXT"; done | head -c 4096 >"$CELL/block.txt"
	local conn=(--server "$VICTIM_SERVER_IP" --certs "$VICTIM_PKI" --export disk --source "$VICTIM_CLIENT_IP")
	timeout 30 fabric on 2 "$BIN/blk/cli/rdmasec-blk" write "${conn[@]}" --offset "$w" --length 4096 <"$CELL/block.txt" \
		>/dev/null 2>"$CELL/write.err"
	wrc=$?
	timeout 30 fabric on 2 "$BIN/blk/cli/rdmasec-blk" read "${conn[@]}" --offset "$r" --length 4096 \
		>"$CELL/read.out" 2>"$CELL/read.err"
	echo "read exit $?" >&2
	sleep 1
	kill -INT $sp $tp 2>/dev/null
	wait $sp $tp
	_blk_end
	pat=$(printf 'lba %011x' $((r / 512)))
	got=$(grep -a -c "$pat" "$CELL/read.out")
	nw=$(grep -a -o "$BLK_SNIFF_TEXT" "$CELL/blocks.pcap" | wc -l)
	nr=$(grep -a -o "$pat" "$CELL/blocks.pcap" | wc -l)
	ev=$(python3 - "$CELL/sniff.json" "$VICTIM_CLIENT_IP" "$VICTIM_SERVER_IP" <<'PY' 2>>"$CELL/stderr.py"
import json, sys
d = json.load(open(sys.argv[1]))
cli, srv = sys.argv[2:4]
conns = [c for c in d["connections"] if c["src"] == cli and c["dst"] == srv and c["next_psn"] is not None]
tls = [t for t in d["tcp_streams"] if t.get("tls")]
seen = "saw QPN %s next PSN %s" % (conns[-1]["dest_qpn"], conns[-1]["next_psn"]) if conns else "no RC requests seen"
print("%s; TLS: %d streams; %d parameters in clear" % (seen, len(tls), len([e for e in d["exchanges"] if e["src"] in (cli, srv)])))
PY
	) || ev="sniff gave no result: $(tail -n 1 "$CELL/sniff.err")"
	if [ "$nw" -gt 0 ] || [ "$nr" -gt 0 ]; then
		matrix_result sniff rdmasec-blk succeeded "" "in clear: $nw x the text h2 wrote, $nr x the block h1 returned; $BLK_EV; $ev"
	elif [ "$got" -gt 0 ] && [ -s "$CELL/blocks.pcap" ] && [ "$wrc" = 0 ]; then
		matrix_result sniff rdmasec-blk blocked \
			"TLS 1.3 carries every parameter; capsules and completions are sealed messages, the blocks sealed in their grants: the visible QPN/PSN only allow forgeries the AEAD rejects (see inject, spoof-request)" \
			"capture: 0 x h2's text, 0 x '$pat' (h2 read it: $got x); $BLK_EV; $ev"
	else
		matrix_result sniff rdmasec-blk error "" "the write or the read did not happen (write: $(head -c 60 "$CELL/write.err"), read: $got pattern lines); $ev"
	fi
}

# _blk_qps DEV COMM: "QPN RQ_PSN SQ_PSN" (decimal) of each of COMM's connected RC QPs on DEV.
_blk_qps() {
	rdma -d res show qp link "$1/1" 2>/dev/null | grep -E " comm $2( |$)" |
		awk '/ type RC / && / state RTS / {
			for (i = 1; i < NF; i++) { if ($i == "lqpn") q = $(i + 1); if ($i == "rq-psn") p = $(i + 1); if ($i == "sq-psn") s = $(i + 1) }
			print q, p, s }'
}

# _blk_qp DEV COMM: "QPN RQ_PSN SQ_PSN" of the one of COMM's QPs on DEV that a session uses now: the
# one whose PSNs moved most over 0.3 s (QPNs are random: the highest is not the newest, and the QP of
# a verify run that just ended stays in RTS until its session is torn down), else the highest.
_blk_qp() {
	local before
	before=$(_blk_qps "$1" "$2")
	sleep 0.3
	_blk_qps "$1" "$2" | BLK_BEFORE=$before awk '
		BEGIN { n = split(ENVIRON["BLK_BEFORE"], l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); was[f[1]] = f[2] + f[3] } }
		{ m = ($1 in was) ? ($2 + $3 - was[$1] + 33554432) % 33554432 : 0
		  if (best == "" || m > bm || (m == bm && $1 + 0 > bq + 0)) { best = $0; bm = m; bq = $1 } }
		END { if (best != "") print best }'
}

# _blk_frame SEQ BODY-HEX: a data-path frame (lib/base/seal.h: u64 seq |
# u32 len | u16 credits | u8 flags FIRST|LAST | u8 0, the body, a 16-byte
# tag) around BODY: well-formed, its body in clear and its tag zero: all an
# attacker without the session's keys can send.
_blk_frame() {
	printf '%016x%08x00000300%s%032x' "$1" $((${#2} / 2)) "$2" 0
}

# spoof-request (NeVerMore 5.2.1): a forged WRITE command capsule (docs/blk.md:
# 512 bytes of the attacker's text in the capsule, at a block past the
# client's region) into the target's queue pair, as if from the client, at
# the PSN it expects. The block must keep its pattern.
_blk_spoof_request() {
	local lba data cap before after s
	_blk_start spoof-request || return
	lba=$(((BLK_IO_MIB + 4) * 2048))
	s=$BLK_SPOOF_TEXT
	while [ ${#s} -lt 512 ]; do s=$s$s; done
	data=$(printf '%s' "${s:0:512}" | od -An -v -tx1 | tr -d ' \n')
	# type 0x10, WRITE, INLINE, cid 1, offset, length 512, no tag, then the data.
	cap=$(printf '10020002000100000%015x%08x%08x%016x%s' $((lba * 512)) 512 0 0 "$data")
	before=$(blk_backing_hash "$lba" 1)
	_blk_rounds rxe1 rdmasec-blkd "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" "$ATK" inject --data-hex "$(_blk_frame 1 "$cap")"
	after=$(blk_backing_hash "$lba" 1)
	_blk_end
	[ "$after" = "$before" ] || BLK_CLEAN=0
	BLK_EV="[h1] LBA $lba sha ${after:0:8} (was ${before:0:8}); $BLK_EV"
	_blk_verdict spoof-request "$(_blk_hit)" \
		"every capsule is a sealed message: the forged WRITE capsule failed authentication before it was parsed; the data path was rebuilt; the verify runs went on clean" \
		"every capsule is a sealed message: the forged capsule failed authentication; the session ended with an error, never a written block" \
		"a forged WRITE capsule (LBA $lba), $BLK_WHAT"
}

# spoof-response (NeVerMore 5.2.2): a forged completion (status ok, cid 0:
# the real cids travel sealed) into the client's queue pair, as if from
# the target, at the PSN it expects. The client's runs must stay clean.
_blk_spoof_response() {
	_blk_start spoof-response || return
	# type 0x11, cid 0, status ok, length 4096.
	_blk_rounds rxe2 rdmasec-blk "$VICTIM_CLIENT_IP" "$VICTIM_SERVER_IP" "$ATK" inject \
		--data-hex "$(_blk_frame 1 11000000000000000000100000000000)"
	_blk_end
	_blk_verdict spoof-response "$(_blk_hit)" \
		"every completion is a sealed message: the client's librdmasec rejected the forged one (AEAD) and the data path was rebuilt; no command completed early; the verify runs went on clean" \
		"the forged completion failed authentication at the client; the session ended with an error, never wrong data" \
		"a forged completion to the client, $BLK_WHAT"
}

# pool-write (issue 38): forged RDMA WRITEs into the client's pool, its
# address and key read off the wire (the RETH of one of the target's own
# WRITEs, cells/pool-write.sh), sweeping 20000 PSNs from the one the
# client's queue pair expects; rounds (at most 60 s) until the target
# audits the hit: PATH_CHECK's rebuild of the silenced data path, or the
# queue pair error of a forged WRITE that fell inside a message.
_blk_pool_write() {
	local r p t0=$SECONDS
	_blk_start pool-write || return
	BLK_WHAT='nothing sent: no RDMA WRITE of the target seen'
	for r in 1 2 3 4 5 6; do
		[ $((SECONDS - t0)) -lt 60 ] && kill -0 "$VICTIM_CLIENT_PID" 2>/dev/null || break
		cell_pool_window "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" && p=$(cell_pool_psn rxe2) || continue
		cell_pool_sweep "$VICTIM_SERVER_IP" "$VICTIM_CLIENT_IP" "$p"
		while kill -0 "$POOL_PID" 2>/dev/null && ! _blk_wait_hit 1; do :; done
		kill "$POOL_PID" 2>/dev/null
		wait "$POOL_PID"
		echo "round $r: inject --op write exit $? (rxe2 qpn $POOL_QPN psn $p, va $POOL_VA rkey $POOL_RKEY) at $SECONDS s" >&2
		BLK_WHAT="$r round(s) of 20000 forged WRITEs into the pool (RETH off the wire), last rxe2 QP $POOL_QPN"
		_blk_wait_hit 3 && break
	done
	_blk_end
	_blk_verdict pool-write "$(_blk_hit)" \
		"the pool holds only ciphertext sealed per command: forged bytes never open; PATH_CHECK found the silenced data path and it was rebuilt (new QP, PSNs, keys, window); the verify runs went on clean" \
		"the forged WRITEs silenced the data path; the session ended with an error, never wrong data" \
		"$BLK_WHAT"
}

# cnp (NeVerMore 4.2 / 5.2.4): 5000 forged CNPs to the client's sending QP, as from the target.
_blk_cnp() {
	local q st sent r0 r1
	_blk_start cnp || return
	read -r q _ <<<"$(_blk_qp rxe2 rdmasec-blk)"
	if [ -z "$q" ]; then
		matrix_result cnp rdmasec-blk error "" "no queue pair of the client on rxe2"
		victim_stop
		return
	fi
	r0=$(grep -c '^run ' "$VICTIM_CLIENT_LOG")
	fabric on 3 "$ATK" cnp --dst "$VICTIM_CLIENT_IP" --src "$VICTIM_SERVER_IP" --qpn "$(printf '0x%x' "$q")" --count 5000 \
		--interval-us 100 --iface fab3 --json >"$CELL/attack.json" 2>"$CELL/attack.err"
	st=$(rdma -d res show qp link rxe2/1 lqpn "$q" 2>/dev/null | sed -n 's/.* state \([A-Z]*\) .*/\1/p')
	sent=$(sed -n 's/.*"sent":\([0-9]*\).*/\1/p' "$CELL/attack.json")
	_blk_end
	r1=$(grep -c '^run ' "$VICTIM_CLIENT_LOG")
	if [ "${sent:-0}" -gt 0 ] && [ "$BLK_CLEAN" = 1 ] && [ "$BLK_WENT_ON" = 1 ]; then
		matrix_result cnp rdmasec-blk not-applicable "$CELL_CNP_WHY" \
			"$BLK_EV; $sent CNPs to rxe2 QP $(printf '0x%x' "$q"), then ${st:-gone (session over)}; runs: $r0 before, $r1 after"
	else
		_blk_verdict cnp "" "" "" "$sent CNPs to rxe2 QP $q (state ${st:-gone})"
	fi
}

blk_cell() {
	case "$1" in
	inject) _blk_inject ;;
	impersonate) _blk_impersonate ;;
	qp-error) _blk_qp_error ;;
	mem-access) _blk_mem_access ;;
	exhaust) _blk_exhaust ;;
	cm-disconnect) _blk_cm_disconnect ;;
	sniff) _blk_sniff ;;
	spoof-request) _blk_spoof_request ;;
	spoof-response) _blk_spoof_response ;;
	pool-write) _blk_pool_write ;;
	cnp) _blk_cnp ;;
	cm-disconnect-exhaust)
		matrix_result cm-disconnect-exhaust rdmasec-blk not-applicable \
			"no reconnection to prevent: rdmasec-blk has no rdma_cm connection a forged DREQ could end (see cm-disconnect); its queue pairs are set up and rebuilt over TLS" \
			"rdmasec-blk's sessions end only over their TLS channel (the cm-disconnect row); exhaustion has no forced reconnection to hold off"
		;;
	*) matrix_result "$1" rdmasec-blk error "" "no rdmasec-blk cell for $1" ;;
	esac
}
