# SPDX-License-Identifier: MIT
# A2 against rdmasec. As in attack_rdmasec_inject.sh, the attacker on host 3
# reads QPN and PSN off the wire, then sends one RDMA WRITE with an rkey the
# server never issued, at the exact PSN. The transport itself lets this kill
# the server's QP (the IB spec moves a responder to error on an access
# violation); rdmasec cannot prevent that, but it must notice: the server
# reports a QP error for that connection, tells the client over TLS, counts
# it, and its other work goes on (a second client is unaffected).
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

write_sniffing_attacker "$work/attacker.sh" "$atk qp-error --dst 10.77.0.1 --src 10.77.0.2 --qpn \$qpn \
	--psn \$((psn + 1)) --iface fab3 --sport 4242 --kind rkey --rkey 0x12345678 --json"

# A second, untouched connection still works.
run_attacked_session '"$bin/client/rdmasec-client" --certs "$work/pki" --source "$FABRIC_IP" -t 20000 \
	-c "send bystander; quit" "$(fabric ip 1)"
echo "bystander=$?"'

expect_match "$work/out" '^\[h3\] attacker: saw qpn 0x[0-9a-f]+ psn [0-9]+' "the attacker saw no RoCE traffic"
expect_match "$work/out" '^\[h3\] \{.*"sent": *1[,}]' "the malformed WRITE was not sent"
expect_match "$work/out" '^\[h2\] reply: before the attack$' "the first round trip failed"
# Detected and reported, not a silent teardown.
expect_match "$work/server.log" 'event=closed conn=1 .*code="queue pair in error state" .*qp_errors=1' \
	"the server did not report the QP error"
expect_match "$work/out" '^\[h2\] send: .*(queue pair|peer reported an error)' "the client was not told why"
expect_match "$work/out" '^\[h2\] client=1$' "the attacked client did not see its connection end"
expect_match "$work/out" '^\[h2\] reply: bystander$' "a new connection failed after the attack"
expect_match "$work/out" '^\[h2\] bystander=0$' "a new connection failed after the attack"
echo "attack_rdmasec_qp_error: ok (QP killed by the transport, reported by rdmasec)"
