# SPDX-License-Identifier: MIT
# The libfabric provider (fi/, fi_rdmasec(7)) under untouched libfabric-bin
# programs, in one boot of three hosts with the in-network observer:
# (1) fi_info -p rdmasec lists the provider on host 1;
# (2) fi_pingpong -p rdmasec -e msg -c (payload checked by fi_pingpong
#     itself) between hosts 1 and 2, every size (64 B to 1 MiB) completing
#     all 3 iterations (a 1 MiB round trip takes 1 to 3 s under TCG);
# (2b) fi_pingpong -p "rdmasec;ofi_rxm" -e rdm -c, every size, its 1 MiB messages
#     through rxm's rendezvous, i.e. fi_read through sealed rdmasec grants
#     (audited), so the wire check (4) covers them too;
# (2c) fi_check (tests/fabric/fi_check.c): peer identities through fi_getopt,
#     private data both ways, FI_ETRUNC, fi_senddata into an FI_CQ_FORMAT_DATA
#     CQ waited for with fi_control(FI_GETWAIT), FI_SHUTDOWN, fi_reject;
# (3) a client whose certificate comes from a foreign CA (it trusts the real
#     one) is refused: the server logs the refusal, never reads a CONNREQ,
#     the client reports why;
# (4) on the wire, no 16-byte window of fi_pingpong's payload alphabet in
#     any frame between hosts 1 and 2, while the same search finds it in a
#     plain TCP control stream (hosts 3 -> 1); the same for fi_mpi's payload;
# (5) an ordinary MPI program (tests/fabric/fi_mpi.c) under Debian's Open MPI,
#     ofi MTL over "rdmasec;ofi_rxm", ranks on hosts 1 and 2: ping-pong 1 B to
#     4 MiB checked both ways, MPI_Allreduce, 15 MiB each way through sealed
#     fi_read grants (audited).
. "$(dirname "$0")/common.bash"

prov=$build/fi/librdmasec-fi.so
[ -f "$prov" ] || fail "build the provider first (missing $prov; needs libfabric-dev)"
command -v fi_pingpong >/dev/null || fail "fi_pingpong missing: install libfabric-bin"
[ -x "$build/fi/fi_mpi" ] && command -v mpirun >/dev/null ||
	fail "build fi_mpi first (missing $build/fi/fi_mpi or mpirun; needs openmpi-bin and libopenmpi-dev)"
# A sanitizer build's provider runs inside the uninstrumented fi_pingpong: its runtimes go first.
preload=$(ldd "$prov" | awk '/lib(asan|ubsan)\.so/ { print $3 }' | paste -sd: -)
keygen=$build/tools/keygen/rdmasec-keygen
"$keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$keygen" --ca-name foreign-ca "$work/foreign" >/dev/null || fail "rdmasec-keygen (foreign CA) failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
work=$1 fidir=$2 preload=$3
export FI_PROVIDER_PATH=$fidir FI_RDMASEC_CREDS=$work/pki
fi="env LD_PRELOAD=$preload" # the libfabric programs only
h1=$(fabric ip 1) h2=$(fabric ip 2)
pp="$fi fi_pingpong -p rdmasec -e msg -c -I 3"

fabric on 1 env FI_RDMASEC_ADDR=$h1 $fi fi_info -p rdmasec >"$work/info.out" 2>&1
echo "info=$? at ${SECONDS}s"

fabric on 1 env FI_RDMASEC_ADDR=$h1 FI_LOG_LEVEL=warn timeout 120 $pp >"$work/pp-server.out" 2>&1 &
spid=$!
fabric wait-port 47592 || exit 1
fabric on 2 env FI_RDMASEC_ADDR=$h2 FI_LOG_LEVEL=warn timeout 120 $pp "$h1" >"$work/pp-client.out" 2>&1
echo "pp-client=$? at ${SECONDS}s"
wait $spid
echo "pp-server=$? at ${SECONDS}s"

# FI_EP_RDM through libfabric's ofi_rxm over the provider: tags and large messages (rxm's
# rendezvous reads the sender's buffer: one sealed rdmasec grant per transfer, in each host's audit log).
rdm="$fi fi_pingpong -p rdmasec;ofi_rxm -e rdm -c -I 3"
fabric on 1 env FI_RDMASEC_ADDR=$h1 FI_RDMASEC_AUDIT="$work/audit-1.jsonl" FI_LOG_LEVEL=warn timeout 120 \
	$rdm -B 47596 >"$work/rdm-server.out" 2>&1 &
spid=$!
fabric wait-port 47596 || exit 1
fabric on 2 env FI_RDMASEC_ADDR=$h2 FI_RDMASEC_AUDIT="$work/audit-2.jsonl" FI_LOG_LEVEL=warn timeout 120 \
	$rdm -P 47596 "$h1" >"$work/rdm-client.out" 2>&1
echo "rdm-client=$? at ${SECONDS}s"
wait $spid
echo "rdm-server=$?"

# fi_check (tests/fabric/fi_check.c): identities, private data, FI_ETRUNC, fi_senddata waited
# for through FI_GETWAIT, FI_SHUTDOWN, fi_reject.
fabric on 1 env FI_RDMASEC_ADDR=$h1 timeout 60 $fi "$fidir/fi_check" serve 47600 >"$work/check-server.out" 2>&1 &
spid=$!
fabric wait-port 47600 || { cat "$work/check-server.out"; exit 1; }
fabric on 2 env FI_RDMASEC_ADDR=$h2 timeout 60 $fi "$fidir/fi_check" connect "$h1" 47600 >"$work/check-client.out" 2>&1
echo "check-client=$? at ${SECONDS}s"
wait $spid
echo "check-server=$?"

# A client that trusts the real CA but holds a certificate of another one.
fabric on 1 env FI_RDMASEC_ADDR=$h1 FI_LOG_LEVEL=warn timeout 30 $pp -v -B 47593 >"$work/refuse-server.out" 2>&1 &
spid=$!
fabric wait-port 47593 || exit 1
fabric on 2 env FI_RDMASEC_ADDR=$h2 FI_RDMASEC_CREDS= FI_RDMASEC_CA="$work/pki/ca.pem" \
	FI_RDMASEC_CERT="$work/foreign/client.pem" FI_RDMASEC_KEY="$work/foreign/client.key" \
	timeout 30 $pp -P 47593 "$h1" >"$work/refuse-client.out" 2>&1
echo "refuse-client=$? at ${SECONDS}s"
sleep 2 # time for the server to log the refusal; it must still be waiting for a CONNREQ
kill -0 $spid 2>/dev/null && echo "refuse-server=waiting at ${SECONDS}s"
kill -TERM $spid
wait $spid

# An untouched MPI program under Debian's Open MPI, its ofi MTL over
# "rdmasec;ofi_rxm": rank 0 on host 1, rank 1 on host 2 (the fabric's hosts
# share one kernel, so mpirun starts both; each rank's provider speaks from
# its host's address and device). LeakSanitizer off: Open MPI itself leaks.
rank() { echo "-np 1 fabric on $1 env FI_LOG_LEVEL=warn FI_RDMASEC_ADDR=$(fabric ip "$1") FI_RDMASEC_AUDIT=$work/mpi-audit-$1.jsonl $fidir/fi_mpi check"; }
# shellcheck disable=SC2046 # each rank's words, split on purpose
ASAN_OPTIONS=detect_leaks=0 timeout 240 mpirun --allow-run-as-root --oversubscribe --bind-to none \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "rdmasec;ofi_rxm" --mca btl self \
	-x FI_PROVIDER_PATH -x FI_RDMASEC_CREDS -x ASAN_OPTIONS $(rank 1) : $(rank 2) >"$work/mpi.out" 2>&1
echo "mpi=$? at ${SECONDS}s"
# The devices' retry counters, for a failed run's reader.
for c in /sys/class/infiniband/rxe[12]/ports/1/hw_counters; do
	echo "${c%/ports/*}: retries $(cat "$c/completer_retry_err"), exceeded $(cat "$c/retry_exceeded_err"), out-of-sequence $(cat "$c/rcvd_seq_err")"
done

# The observer's control: the payload alphabet in clear over TCP from host 3's
# address to host 1 (so it crosses the bridge): the search must find it.
fabric on 1 timeout 20 python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 47595)); s.listen(1); c, _ = s.accept()
n = 0
while True:
    b = c.recv(65536)
    if not b: break
    n += len(b)
print(f"control: received {n} bytes")' "$h1" >"$work/control-server.out" 2>&1 &
spid=$!
fabric wait-port 47595 || exit 1
fabric on 3 timeout 20 python3 -c '
import socket, sys
a = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
m = bytes((i * 131 + 89) % 256 for i in range(512))  # fi_mpi'"'"'s 15 MiB message
s = socket.create_connection((sys.argv[1], 47595), source_address=(sys.argv[2], 0))
s.sendall(a * 20 + m); s.close()' "$h1" "$(fabric ip 3)"
echo "control-client=$?"
wait $spid
echo "control-server=$? at ${SECONDS}s"
GUEST

start=$SECONDS
"$fabric" run --hosts 3 "${build_share[@]}" --timeout 480 --capture "$work/wire.pcap" -- \
	bash "$work/guest.sh" "$work" "$build/fi" "$preload" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
echo "fabric run: $((SECONDS - start)) s"

# (1)
cat "$work/info.out"
expect_match "$work/run.out" '^info=0 ' "fi_info -p rdmasec failed on host 1"
expect_match "$work/info.out" '^provider: rdmasec$' "fi_info does not list the rdmasec provider"
expect_match "$work/info.out" '^ +type: FI_EP_MSG$' "fi_info lists no FI_EP_MSG endpoint"

# (2)
cat "$work/pp-server.out" "$work/pp-client.out"
expect_match "$work/run.out" '^pp-client=0 ' "fi_pingpong client failed (or its payload check did)"
expect_match "$work/run.out" '^pp-server=0 ' "fi_pingpong server failed (or its payload check did)"
for size in 64 256 1k 4k 64k 1m; do
	expect_match "$work/pp-client.out" "^${size} +3 +=3 " "size $size: not all 3 iterations acknowledged"
done
! grep -q 'Error at iteration' "$work/pp-client.out" "$work/pp-server.out" || fail "fi_pingpong saw a wrong payload"

# (2b)
cat "$work/rdm-server.out" "$work/rdm-client.out"
expect_match "$work/run.out" '^rdm-client=0 ' "fi_pingpong -e rdm over rdmasec;ofi_rxm failed (client)"
expect_match "$work/run.out" '^rdm-server=0$' "fi_pingpong -e rdm over rdmasec;ofi_rxm failed (server)"
for size in 64 256 1k 4k 64k 1m; do
	expect_match "$work/rdm-client.out" "^${size} +3 +=3 " "rdm, size $size: not all 3 iterations acknowledged"
done
cat "$work"/audit-*.jsonl >"$work/audit.jsonl"
grep -m 1 '"event":"grant"' "$work/audit.jsonl"
# A sealed READ grant of 1 MiB spans rsec_sealed_len(1 MiB): 16 chunks, each with its 16-byte tag.
grants=$(grep '"event":"grant"' "$work/audit.jsonl" | grep '"len":1048832' | grep -c '"rights":"read')
revokes=$(grep -c '"event":"revoke"' "$work/audit.jsonl")
echo "rdm: $grants sealed READ grants of 1 MiB (rxm's rendezvous through fi_read), $revokes revoked"
[ "$grants" -ge 6 ] || fail "fewer than 6 sealed one-MiB READ grants: the large messages did not go through fi_read"
grep -q '"event":"expire"' "$work/audit.jsonl" && fail "a grant expired: a transfer's RMA_DONE was lost"

# (2c)
cat "$work/check-server.out" "$work/check-client.out"
expect_match "$work/run.out" '^check-client=0 ' "fi_check's client failed"
expect_match "$work/run.out" '^check-server=0$' "fi_check's server failed"
expect_each "$work/check-server.out" "(fi_check server)" <<'EXPECT'
^RESULT connreq-data=hello-from-client$	the CONNREQ did not carry fi_connect's private data
^RESULT server-peer=CN=client1,O=rdmasec-test$	the server did not read the client's authenticated identity
^RESULT trunc=Truncation error olen 56$	a message too long for its receive was not an FI_ETRUNC error entry
^RESULT senddata=ok$	fi_senddata's payload or CQ data did not arrive as sent
^RESULT shutdown=ok$	the client's fi_shutdown gave the server no FI_SHUTDOWN
^RESULT rejected=0$	fi_reject failed
EXPECT
expect_each "$work/check-client.out" "(fi_check client)" <<'EXPECT'
^RESULT connected-data=welcome$	FI_CONNECTED did not carry fi_accept's private data
^RESULT client-peer=rdmasec-server$	the client did not read the server's authenticated identity
^RESULT echo=ok$	the server's reply did not arrive
^RESULT reject=Connection refused go-away$	fi_reject did not reach the client as FI_ECONNREFUSED with its data
EXPECT

# (3)
echo "--- refused client:"
cat "$work/refuse-client.out"
echo "--- its server:"
grep -v '^\[debug\]' "$work/refuse-server.out" || true
expect_match "$work/run.out" '^refuse-client=[1-9]' "the foreign client's fi_pingpong did not fail"
expect_match "$work/refuse-client.out" 'eq_readerr: rdmasec: ' "the foreign client got no rdmasec reason"
expect_match "$work/refuse-server.out" 'refused 10\.77\.0\.2:[0-9]+ at set-up' "the server did not log the refusal"
! grep -q 'accepting' "$work/refuse-server.out" || fail "the server got a CONNREQ from an unauthenticated peer"
expect_match "$work/run.out" '^refuse-server=waiting ' "the refusing server did not wait on (it should see no CONNREQ)"

# (5)
cat "$work/mpi.out"
expect_match "$work/run.out" '^mpi=0 ' "the MPI program over rdmasec;ofi_rxm failed"
expect_each "$work/mpi.out" "(fi_mpi over Open MPI's ofi MTL)" <<'EXPECT'
^mpi: pingpong ok: 18 round trips	the ping-pong did not check every size both ways
^mpi: allreduce ok: 1048576 ints summed over 2 ranks$	MPI_Allreduce did not sum as it should
^mpi: large ok: 15 MiB each way	the 15 MiB message did not arrive whole
EXPECT
cat "$work"/mpi-audit-*.jsonl >"$work/mpi-audit.jsonl" 2>/dev/null
mgrants=$(grep '"event":"grant"' "$work/mpi-audit.jsonl" | grep -c '"rights":"read')
echo "mpi: $mgrants sealed READ grants (rxm's rendezvous for the large messages)"
[ "$mgrants" -ge 2 ] || fail "the MPI program's large messages did not go through sealed fi_read grants"

# A sanitizer build: nothing reported in any run (a refused client exits non-zero anyway).
! grep -l 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:' "$work"/*.out ||
	fail "a sanitizer reported an error (files above)"

# (4)
expect_match "$work/run.out" '^control-client=0$' "the observer's control run failed"
python3 - "$work/wire.pcap" <<'PY' || fail "the observer saw fi_pingpong payload in clear"
import struct, sys
raw = open(sys.argv[1], "rb").read()
endian = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}[raw[:4]]
frames, off = [], 24
while off + 16 <= len(raw):
    caplen = struct.unpack(endian + "I", raw[off + 8:off + 12])[0]
    frames.append(raw[off + 16:off + 16 + caplen])
    off += 16 + caplen
alphabet = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
cyc = alphabet * 2
windows = {cyc[i:i + 16] for i in range(len(alphabet))}
# fi_mpi's 15 MiB message: byte i is (131 i + 89) mod 256, period 256; its reply is complemented.
mpi = bytes((i * 131 + 89) % 256 for i in range(512))
mpi_windows = {mpi[i:i + 16] for i in range(256)} | {bytes(b ^ 0xff for b in mpi[i:i + 16]) for i in range(256)}
def ip_pair(f):
    # Ethernet II + IPv4 (the fabric's bridge): source and destination host numbers.
    if len(f) < 34 or f[12:14] != b"\x08\x00" or f[26:29] != b"\x0a\x4d\x00" or f[30:33] != b"\x0a\x4d\x00":
        return None
    return frozenset((f[29], f[33]))
def hits(pair, ws):
    sel = [f for f in frames if ip_pair(f) == pair]
    return len(sel), sum(1 for f in sel if any(w in f for w in ws))
n12, s12 = hits(frozenset((1, 2)), windows)
n13, s13 = hits(frozenset((1, 3)), windows)
_, m12 = hits(frozenset((1, 2)), mpi_windows)
_, m13 = hits(frozenset((1, 3)), mpi_windows)
print(f"observer: hosts 1-2 (rdmasec): {n12} frames, {s12} with fi_pingpong's payload in clear, {m12} with fi_mpi's; "
      f"hosts 1-3 (plain TCP control): {n13} frames, {s13} and {m13}")
assert n12 > 100, "too few frames between hosts 1 and 2: the capture missed the ping-pong"
assert s13 > 0 and m13 > 0, "the control stream's payload is not found: the search cannot tell"
assert s12 == 0, "fi_pingpong payload crossed the wire in clear"
assert m12 == 0, "fi_mpi's payload crossed the wire in clear"
PY
echo "fi_pingpong: ok ($((SECONDS - start)) s)"
