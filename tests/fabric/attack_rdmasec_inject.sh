# SPDX-License-Identifier: MIT
# A1 against rdmasec, mid-stream. The control channel is TLS, so the
# attacker (host 3) must be on the wire: it reads the client's first SEND
# off the bridge (QPN and PSN are in every RoCE header), then forges the
# SEND after the client's fifth, with that exact PSN and the client's
# address, from a raw socket. rxe accepts it; rdmasec must not deliver it:
# the frame fails authentication and is counted, both sides rebuild the data
# path over TLS (new QP, PSNs and keys), and the client's numbered stream
# arrives whole, once and in order: the attack is blocked, the session goes on.
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

# A well-formed frame header (seq 1, 16 bytes, FIRST|LAST) with a forged body
# and tag: only the AEAD can tell it from a real one.
forged=0000000000000001000000100000030041545441434b45522d4259544553212121$(printf '%030x' 0)
write_sniffing_attacker "$work/attacker.sh" "$atk inject --dst 10.77.0.1 --src 10.77.0.2 --qpn \$qpn \
	--psn \$((psn + $STREAM_BEFORE)) --iface fab3 --sport 4242 --data-hex $forged --json"

run_attacked_session

expect_match "$work/out" '^\[h3\] attacker: saw qpn 0x[0-9a-f]+ psn [0-9]+' "the attacker saw no RoCE traffic"
expect_match "$work/out" '^\[h3\] \{.*"sent": *1[,}]' "the forged SEND was not sent"
tshark -r "$work/wire.pcap" -Y 'infiniband && udp.srcport == 4242' -T fields -e ip.src -e infiniband.bth.opcode \
	2>/dev/null | grep -Eq '^10\.77\.0\.2[[:space:]]+4$' || fail "no forged SEND Only on the wire"
# The attack landed: the server opened the forged frame, it failed, it was counted and audited...
expect_match "$work/server.log" 'event=rebuilt conn=1 .*rebuilds=1 reason="rejected a message: message authentication failed" .*mac_failures=1 ' \
	"the server did not detect the forged message and rebuild"
# ...was never delivered, and cost nothing: the whole stream, once and in order, on one connection.
! grep -q 'ATTACKER-BYTES' "$work/out" || fail "the forged bytes reached the client"
expect_whole_stream
expect_match "$work/out" '^\[h2\] client=0$' "the client did not end cleanly"
expect_match "$work/server.log" 'event=closed conn=1 .*code="connection closed" .*msgs_in=40 .*mac_failures=1 .*rebuilds=1 ' \
	"the session did not go on to its normal end"
! grep -q 'conn=2' "$work/server.log" || fail "the client had to reconnect"
echo "attack_rdmasec_inject: ok (forged SEND accepted by rxe, rejected by rdmasec, the session rebuilt and went on)"
