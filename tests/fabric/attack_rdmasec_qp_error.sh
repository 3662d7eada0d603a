# SPDX-License-Identifier: MIT
# A2 against rdmasec, mid-stream. As in attack_rdmasec_inject.sh, the
# attacker on host 3 reads QPN and PSN off the wire, then sends one RDMA
# WRITE with an rkey the server never issued, at the PSN after the client's
# fifth SEND. The transport itself lets this kill the server's QP (the IB
# spec moves a responder to error on an access violation); rdmasec cannot
# prevent that, but it must make it cost nothing: the server counts the QP
# error, both sides rebuild the data path over TLS, and the client's
# numbered stream arrives whole, once and in order. A second connection is
# unaffected.
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

write_sniffing_attacker "$work/attacker.sh" "$atk qp-error --dst 10.77.0.1 --src 10.77.0.2 --qpn \$qpn \
	--psn \$((psn + $STREAM_BEFORE)) --iface fab3 --sport 4242 --kind rkey --rkey 0x12345678 --json"

# A second, untouched connection still works.
run_attacked_session '"$bin/client/rdmasec-client" --certs "$work/pki" --source "$FABRIC_IP" -t 20000 \
	-c "send bystander; quit" "$(fabric ip 1)"
echo "bystander=$?"'

expect_match "$work/out" '^\[h3\] attacker: saw qpn 0x[0-9a-f]+ psn [0-9]+' "the attacker saw no RoCE traffic"
expect_match "$work/out" '^\[h3\] \{.*"sent": *1[,}]' "the malformed WRITE was not sent"
# The attack landed (the server's QP failed, counted) and was repaired, not a teardown.
expect_match "$work/server.log" 'event=rebuilt conn=1 .*rebuilds=1 reason="queue pair error: [^"]*" .*qp_errors=[1-9]' \
	"the server did not count the QP error and rebuild"
expect_whole_stream
expect_match "$work/out" '^\[h2\] client=0$' "the attacked client did not end cleanly"
expect_match "$work/server.log" 'event=closed conn=1 .*code="connection closed" .*msgs_in=40 .*qp_errors=[1-9] .*rebuilds=1 ' \
	"the attacked session did not go on to its normal end"
expect_match "$work/out" '^\[h2\] reply: bystander$' "a new connection failed after the attack"
expect_match "$work/out" '^\[h2\] bystander=0$' "a new connection failed after the attack"
echo "attack_rdmasec_qp_error: ok (QP killed by the transport, rebuilt by rdmasec, the stream went on)"
