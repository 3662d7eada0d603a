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
cat >"$work/attacker.sh" <<ATTACKER
set -eu
tcpdump -i fabbr -nn -x -c 1 'udp dst port 4791 and src host 10.77.0.2 and dst host 10.77.0.1 and udp[8] == 4' \
	>/tmp/first.txt 2>/tmp/tcpdump.err &
tp=\$!
for _ in \$(seq 1 100); do grep -q listening /tmp/tcpdump.err 2>/dev/null && break; sleep 0.1; done
touch $work/sniffing
wait \$tp
hex=\$(awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", \$i }' /tmp/first.txt)
qpn=0x\${hex:66:6} psn=\$((0x\${hex:74:6}))
echo "attacker: saw qpn \$qpn psn \$psn on the wire"
sleep 2
$atk inject --dst 10.77.0.1 --src 10.77.0.2 --qpn \$qpn --psn \$((psn + 1)) --iface fab3 --sport 4242 \
	--data-hex $forged --json
touch $work/injected
ATTACKER

cat >"$work/client.sh" <<'CLIENT'
set -u
bin=$1 work=$2
while [ ! -e "$work/sniffing" ]; do sleep 0.1; done
fabric wait-port 7471 60
{
	echo "send before the attack"
	for _ in $(seq 1 300); do [ -e "$work/injected" ] && break; sleep 0.1; done
	sleep 2
	echo "send after the attack"
	echo quit
} | "$bin/client/rdmasec-client" --certs "$work/pki" --source "$FABRIC_IP" -t 20000 "$(fabric ip 1)"
echo "client=$?"
CLIENT

"$fabric" run --hosts 3 --timeout 300 --capture "$work/wire.pcap" \
	--on 1 "timeout 60 $bin/server/rdmasec-server --certs $work/pki --listen \$FABRIC_IP:7471 2>$work/server.log; true" \
	--on 2 "bash $work/client.sh $bin $work; pkill -TERM rdmasec-server" \
	--on 3 "bash $work/attacker.sh" >"$work/out" 2>&1 || { cat "$work/out"; fail "the fabric run failed"; }
cat "$work/out"
cat "$work/server.log"

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
