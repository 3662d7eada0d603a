# SPDX-License-Identifier: MIT
# A1 against rdmasec. The control channel is TLS, so the attacker (host 3)
# must be on the wire: it reads the client's first SEND off the bridge (QPN
# and PSN are in every RoCE header), then forges the next SEND, with the
# exact PSN and the client's address, from a raw socket. rxe accepts it;
# rdmasec must not deliver it: the frame fails authentication, is counted,
# and the connection is closed (detected, never delivered).
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

# A well-formed frame header (seq 1, 16 bytes, FIRST|LAST) with a forged body
# and tag: only the AEAD can tell it from a real one.
forged=0000000000000001000000100000030041545441434b45522d4259544553212121$(printf '%030x' 0)
write_sniffing_attacker "$work/attacker.sh" "$atk inject --dst 10.77.0.1 --src 10.77.0.2 --qpn \$qpn \
	--psn \$((psn + 1)) --iface fab3 --sport 4242 --data-hex $forged --json"

run_attacked_session

expect_match "$work/out" '^\[h3\] attacker: saw qpn 0x[0-9a-f]+ psn [0-9]+' "the attacker saw no RoCE traffic"
expect_match "$work/out" '^\[h3\] \{.*"sent": *1[,}]' "the forged SEND was not sent"
expect_match "$work/out" '^\[h2\] reply: before the attack$' "the first round trip failed"
# Detected: the server rejected the forged frame and counted it...
expect_match "$work/server.log" 'event=closed .*code="message authentication failed" .*mac_failures=1 ' \
	"the server did not detect the forged message"
# ...and never delivered it: no echo of it, and the connection did not go on.
! grep -q 'ATTACKER-BYTES' "$work/out" || fail "the forged bytes reached the client"
! grep -q '^\[h2\] reply: after the attack$' "$work/out" || fail "the connection went on after the forgery"
expect_match "$work/out" '^\[h2\] client=1$' "the client did not see its connection closed"
tshark -r "$work/wire.pcap" -Y 'infiniband && udp.srcport == 4242' -T fields -e ip.src -e infiniband.bth.opcode \
	2>/dev/null | grep -Eq '^10\.77\.0\.2[[:space:]]+4$' || fail "no forged SEND Only on the wire"
echo "attack_rdmasec_inject: ok (forged SEND accepted by rxe, rejected by rdmasec)"
