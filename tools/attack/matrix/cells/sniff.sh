# SPDX-License-Identifier: MIT
# T3 (sniff): `rdmasec-attack sniff -i fabbr` observes the bridge while the
# victim runs (pingpong's and perftest's TCP exchange is routed across it).
# Succeeded when the observer extracts the server QP's number and the PSN it
# expects, and what the exchange told in clear (rkey, VA). Against rdmasec
# the BTH still shows QPN and PSN (every RoCE header carries them), but the
# parameters travel inside TLS and the messages are sealed: the outcome says
# what was learned and why it does not suffice.
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# nvmf: while the observer listens, host 2 writes a block of its own text in
# the pattern's part of the namespace and reads one of the pattern's blocks
# back; a capture of the bridge then holds both texts in clear (the write's
# data in the command capsule, the read's in the target's RDMA WRITE).
# Prints what it found; returns 1 if it found neither.
CELL_SNIFF_NVMF_TEXT=NVMF-BLOCK-WRITTEN-BY-HOST-2.
_cell_sniff_nvmf_blocks() {
	local tp w=$((NVMF_FIO_MIB * 2048 + 512)) r=$((NVMF_FIO_MIB * 2048 + 4096)) nw nr pat
	tcpdump -i fabbr -nn -w "$CELL/blocks.pcap" 'udp port 4791' 2>"$CELL/tcpdump-blocks.err" &
	tp=$!
	for _ in $(seq 1 100); do grep -q listening "$CELL/tcpdump-blocks.err" 2>/dev/null && break; sleep 0.1; done
	for _ in $(seq 1 160); do printf '%s' "$CELL_SNIFF_NVMF_TEXT"; done | head -c 4096 >"$CELL/block.txt"
	fabric on 2 dd if="$CELL/block.txt" of="$VICTIM_NVMF_DEV" bs=4096 seek=$((w / 8)) oflag=direct status=none
	fabric on 2 dd if="$VICTIM_NVMF_DEV" of=/dev/null bs=4096 skip=$((r / 8)) count=1 iflag=direct status=none
	sleep 1
	kill -INT $tp 2>/dev/null
	wait $tp
	pat=$(printf 'lba %011x' "$r")
	nw=$(grep -a -o "$CELL_SNIFF_NVMF_TEXT" "$CELL/blocks.pcap" | wc -l)
	nr=$(grep -a -o "$pat" "$CELL/blocks.pcap" | wc -l)
	[ "$nw" -gt 0 ] || [ "$nr" -gt 0 ] || return 1
	printf 'in clear: h2 wrote LBA %d (%d x "%s"), h1 returned LBA %d (%d x "%s")' \
		"$w" "$nw" "${CELL_SNIFF_NVMF_TEXT%.}" "$r" "$nr" "$pat"
}

# MPI victims: how many RoCE packets on the bridge carry fi_mpi's text in
# clear (a capture of the whole run, $CELL/mpi.pcap).
CELL_SNIFF_MPI_TEXT=FI-MPI-VICTIM-PAYLOAD
_cell_sniff_mpi_start() {
	tcpdump -i fabbr -nn -s 0 -w "$CELL/mpi.pcap" 'udp port 4791' 2>"$CELL/tcpdump-mpi.err" &
	CELL_SNIFF_MPI_PID=$!
	for _ in $(seq 1 100); do grep -q listening "$CELL/tcpdump-mpi.err" 2>/dev/null && break; sleep 0.1; done
}

_cell_sniff_mpi_count() {
	kill -INT "$CELL_SNIFF_MPI_PID" 2>/dev/null
	wait "$CELL_SNIFF_MPI_PID" 2>/dev/null
	grep -a -o "$CELL_SNIFF_MPI_TEXT" "$CELL/mpi.pcap" 2>/dev/null | wc -l
}

cell_sniff() {
	local v=$1 sp ev blocks='' clear=''
	[ "$v" = nvmf ] && VICTIM_SECONDS=40
	case "$v" in mpi-*) _cell_sniff_mpi_start ;; esac
	"$ATK" sniff -i fabbr --seconds 40 --filter 'udp port 4791 or tcp' --json="$CELL/sniff.json" \
		>"$CELL/sniff.txt" 2>"$CELL/sniff.err" &
	sp=$!
	for _ in $(seq 1 100); do grep -q capturing "$CELL/sniff.err" 2>/dev/null && break; sleep 0.1; done
	VICTIM_MODE=sniff-exchange victim_start "$v" ||
		{ matrix_result sniff "$v" error "" "victim did not start: $(tail -n 1 "$CELL/victim-server.log" 2>/dev/null)"; victim_stop; kill -INT $sp; wait $sp; return; }
	if [ "$v" = nvmf ]; then
		blocks=$(_cell_sniff_nvmf_blocks) ||
			{ matrix_result sniff "$v" error "" "the capture holds neither block's text"; victim_stop; kill -INT $sp; wait $sp; return; }
	fi
	# nvmf: fio has run (and the observer watched) since victim_start, and runs
	# on to VICTIM_SECONDS whatever happens: nothing more to see or wait for.
	[ "$v" = nvmf ] || sleep 3
	victim_attack_done
	kill -INT $sp 2>/dev/null
	wait $sp
	if [ "$v" = nvmf ]; then victim_stop; else victim_wait 8; fi
	case "$v" in mpi-*) clear=$(_cell_sniff_mpi_count) ;; esac
	ev=$(python3 - "$CELL/sniff.json" "$v" "$VICTIM_CLIENT_IP" "$VICTIM_SERVER_IP" <<'PY' 2>>"$CELL/stderr.py"
import json, sys
d = json.load(open(sys.argv[1]))
v, cli, srv = sys.argv[2:5]
# Requests from the client to the server, or (ucmatose's server sends the data) the other way.
conns = [c for c in d["connections"] if c["src"] == cli and c["dst"] == srv and c["next_psn"] is not None] or \
        [c for c in d["connections"] if c["src"] == srv and c["dst"] == cli and c["next_psn"] is not None]
if not conns:
    print("error\tno RC requests between the client and the server seen")
    sys.exit(0)
c = max(conns, key=lambda c: c["packets"])
seen = "QPN %s next PSN %s (%s's QP, from %d packets' BTH)" % (c["dest_qpn"], c["next_psn"],
        "server" if c["dst"] == srv else "client", c["packets"])
ex = [e for e in d["exchanges"] if e["src"] in (cli, srv)]
tls = [t for t in d["tcp_streams"] if t.get("tls")]
if v in ("rdmasec", "mpi-rdmasec"):
    reths = [r for x in conns for r in x["reths"]]
    print("blocked\tsaw %s; TLS: %d streams, %d bytes, %d parameters; %d RETH rkeys, none in plaintext" % (
        seen, len(tls), sum(t["bytes"] for t in tls), len(ex), len(reths)))
    sys.exit(0)
extra = ""
# What the server told its client in clear: its QPN, PSN and (perftest, naive) rkey and VA.
told = [e for e in ex if e["src"] == srv] or ex
if told:
    e = told[0]
    extra = "; %s %s told QPN %s PSN %s" % ("server" if e["src"] == srv else "client", e["format"], e["qpn"], e["psn"])
    if e.get("rkey") is not None:
        extra += " rkey %s VA %s" % (e["rkey"], e["va"])
    extra += " in clear"
print("succeeded\t%s%s" % (seen, extra))
PY
	) || ev="error	sniff gave no result: $(tail -n 1 "$CELL/sniff.err")"
	# MPI: the payload decides. Any of fi_mpi's text in clear is a leak, whatever the provider.
	if [ -n "$clear" ] && [ "${ev%%	*}" != error ]; then
		if [ "$clear" -gt 0 ]; then
			ev="succeeded	$clear RoCE packets carry fi_mpi's text in clear ($CELL_SNIFF_MPI_TEXT...); ${ev#*	}"
		elif [ "$v" = mpi-verbs ]; then
			ev="error	no packet with fi_mpi's text in clear although verbs does not seal; ${ev#*	}"
		else
			ev="blocked	0 RoCE packets with fi_mpi's text in clear; ${ev#*	}"
		fi
	fi
	case "${ev%%	*}" in
	succeeded) matrix_result sniff "$v" succeeded "" "${blocks:+$blocks; }${ev#*	}" ;;
	blocked)
		matrix_result sniff "$v" blocked \
			"TLS 1.3 carries every parameter and messages are sealed: the visible QPN/PSN only allow forgeries the AEAD rejects or a QP kill that is reported (see inject, qp-error)" \
			"${ev#*	}"
		;;
	*) matrix_result sniff "$v" error "" "${ev#*	}" ;;
	esac
}
