# SPDX-License-Identifier: MIT
# ibv_rc_pingpong completes between two processes on one host, and between two
# hosts; the in-network observer sees the RoCEv2 traffic cross the wire.
. "$(dirname "$0")/common.bash"

pp='ibv_rc_pingpong -d $FABRIC_DEV -g $FABRIC_GID_INDEX -n 200'

"$fabric" run -- bash -c "$pp & fabric wait-port 18515 && $pp localhost; c=\$?; wait \$!; s=\$?; [ \$c = 0 ] && [ \$s = 0 ]" \
	>"$work/local" 2>&1 || { cat "$work/local"; fail "ping-pong on one host failed"; }
[ "$(grep -c '200 iters in' "$work/local")" = 2 ] || { cat "$work/local"; fail "one host: both sides must finish 200 iterations"; }

"$fabric" run --hosts 2 --capture "$work/wire.pcap" \
	--on 1 "$pp" \
	--on 2 "fabric wait-port 18515 && $pp \$(fabric ip 1)" >"$work/hosts" 2>&1 ||
	{ cat "$work/hosts"; fail "ping-pong between two hosts failed"; }
expect_match "$work/hosts" '^\[h1\] 200 iters in' "host 1 did not finish"
expect_match "$work/hosts" '^\[h2\] 200 iters in' "host 2 did not finish"
expect_match "$work/hosts" 'remote address: .*GID ::ffff:10\.77\.0\.1' "host 2 did not talk to host 1's GID"

[ -s "$work/wire.pcap" ] || fail "the observer captured nothing"
tshark -r "$work/wire.pcap" -Y 'infiniband && ip.src == 10.77.0.2 && ip.dst == 10.77.0.1' -T fields -e infiniband.bth.opcode \
	>"$work/roce" 2>/dev/null || fail "tshark cannot read the capture"
[ -s "$work/roce" ] || fail "no RoCEv2 packets from host 2 to host 1 on the wire"
echo "pingpong: ok ($(wc -l <"$work/roce") RoCEv2 packets 2->1 seen on the wire)"
grep -h 'usec/iter' "$work/local" "$work/hosts"
