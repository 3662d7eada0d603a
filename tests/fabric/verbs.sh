# SPDX-License-Identifier: MIT
# librdmasec's verbs layer on the soft-RoCE fabric: device lookup by IP, QP
# bring-up with random PSNs, SEND/RECV and RDMA WRITE/READ through type-2
# memory windows, window isolation per QP, invalidation, rebinding, and the
# remote SEND_WITH_INV behaviour of rxe. Host 1 serves, host 2 is the
# rightful client, host 3 a third party holding a leaked key.
. "$(dirname "$0")/common.bash"

prog=${VERBS_CHECK:-$build/tests/verbs_check}
[ -x "$prog" ] || fail "$prog not built"
port=7471

"$fabric" run --hosts 3 --timeout 400 \
	--on 1 "$prog server \$FABRIC_IP $port" \
	--on 2 "fabric wait-port $port && $prog client \$FABRIC_IP \$(fabric ip 1) $port" \
	--on 3 "fabric wait-port $port && $prog third \$FABRIC_IP \$(fabric ip 1) $port" \
	>"$work/run" 2>&1 || { cat "$work/run"; fail "verbs_check failed"; }
out=$work/run

# (0) the device was found from the IP alone, with a RoCEv2 GID and type-2 windows
expect_match "$out" '^\[h1\] server: device rxe1 port 1 gid_index [0-9]+ link RoCE .* mw_type2 1' "host 1: device lookup by IP"
expect_match "$out" '^\[h3\] third: device rxe3 port 1 ' "host 3: device lookup by IP"
# (1) SEND/RECV both ways, byte-exact
expect_match "$out" 'server: RESULT sendrecv server-received 4096 B byte-exact' "SEND/RECV to the server"
expect_match "$out" 'client: RESULT sendrecv client-received 4096 B byte-exact' "SEND/RECV to the client"
# (2) WRITE + READ through a type-2 window
for size in 1 4096 1048576 16777216; do
	expect_match "$out" "client: RESULT rdma size=$size write\+read byte-exact" "RDMA through the window, $size B"
done
expect_match "$out" 'server: RESULT window memory holds the client' "server-side bytes of the RDMA WRITEs"
expect_match "$out" 'server: window MR: .* rkey 0x00000000' "the window's MR must carry no remote key"
# (3) the window is bound to QP1: another QP (same PD, or another host) fails, QP1 keeps working
expect_match "$out" 'RESULT foreign-qp-same-pd requester="remote access error" requester_qp=ERR responder_qp=ERR memory=untouched' \
	"second QP in the window's PD"
expect_match "$out" 'RESULT qp1-after-foreign-same-pd ok' "QP1 after the same-PD attempt"
expect_match "$out" 'RESULT foreign-host requester="remote access error" requester_qp=ERR responder_qp=ERR memory=untouched' \
	"host 3 with the leaked key"
expect_match "$out" 'RESULT qp1-after-foreign-host ok' "QP1 after host 3's attempt"
# (5) rebinding draws a new key byte each time, same index
expect_match "$out" 'RESULT rebind 8 times: .* each differs from the previous: yes' "rebinding keys"
expect_match "$out" 'RESULT qp1-after-rebind ok' "access with the rebound key"
# (4) after LOCAL_INV the rightful client fails
expect_match "$out" 'RESULT after-local-inv requester="remote access error" requester_qp=ERR responder_qp=ERR memory=untouched' \
	"access after LOCAL_INV"
# (6) observed on Debian 6.1: a QP in another PD, on another host, invalidates the window with SEND_WITH_INV;
# the completion flag comes back as bit 2 (IP_CSUM_OK to libibverbs), not IBV_WC_WITH_INV
expect_match "$out" 'RESULT send-with-inv-victim-key attacker_send="success" attacker_qp=RTS server_recv="success"' \
	"SEND_WITH_INV from host 3"
expect_match "$out" 'RESULT send-with-inv window_after=invalidated victim_access="remote access error"' \
	"the victim's window after host 3's SEND_WITH_INV"
expect_match "$out" 'RESULT send-with-inv-bogus-key attacker_send="success" .* server_recv="remote invalid request error" .* server_qp=ERR' \
	"SEND_WITH_INV of an unknown key"
expect_match "$out" 'RESULT dealloc-bound before="success" after="remote access error" .* memory=untouched' \
	"deallocating a bound window revokes it"
# (8) a peer that never answers: the requester's retries end (rxe retries forever at retry_cnt 7)
expect_match "$out" 'client: RESULT dead-peer requester="transport retry counter exceeded" after_ms=[0-9]+$' \
	"WRITE to a QP that does not exist"
# (7) QPNs are sequential per device
expect_match "$out" 'server: RESULT qpn-burst( 0x[0-9a-f]{6}){4} sequential=yes' "QPN burst"
expect_match "$out" '^\[h1\] server: done' "server did not finish"
expect_match "$out" '^\[h2\] client: done' "client did not finish"
expect_match "$out" '^\[h3\] third: done' "host 3 did not finish"
grep -h 'RESULT' "$out"
echo "verbs: ok"
