# SPDX-License-Identifier: MIT
# Self-healing of the control channel on real rxe, one 2-host boot, with
# rdmasec-server and rdmasec-client (--resume-grace):
#  (a) the client's TCP connection is killed (ss -K, as a crash or a forged
#      reset would) three times while it streams 60 numbered messages: each
#      time the client reconnects, resumes its TLS session and the rdmasec
#      session, the data path is rebuilt over the new channel, and every
#      message comes back once and in order on the same session; the time
#      from each cut to the server's "rebuilt" line is printed (median);
#  (b) the server is killed (kill -9) mid-stream: the client fails with a
#      clear error within its grace period plus one try, never hangs;
#  (c) the server is killed and restarted: the client's resume is refused
#      (the new server has no such session) and it fails at its next try, long
#      before its 20 s grace (timed from the restarted server's listen: a
#      loaded guest takes seconds to start a server);
#  (d) the client's identity is withdrawn from the server's allow rules
#      (SIGHUP) while its session waits to be resumed: its RESUME is refused
#      (DISCONNECT: the allow rules, audited) and it gives up at once, not at
#      the end of its 20 s grace.
. "$(dirname "$0")/common.bash"

bin=$build/tools
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 work=$2
s=$(fabric ip 1) c=$(fabric ip 2)
now() { date +%s%3N; }
# wait_for FILE REGEX: up to 30 s.
wait_for() { for _ in $(seq 1 300); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
serve() { # PORT GRACE LOG [SERVER OPTION...]
	local port=$1 grace=$2 log=$3
	shift 3
	fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$s:$port" --resume-grace "$grace" \
		--audit "$work/audit-$port.jsonl" "$@" 2>"$log" &
	fabric wait-port "$port" 20 || echo "server on $port not listening"
}
stream() { # PORT GRACE OUT: msg-1..msg-60, then stats and quit
	{
		for i in $(seq 1 60); do echo "send msg-$i"; sleep 0.05; done
		echo stats
		echo quit
	} | fabric on 2 "$bin/client/rdmasec-client" --certs "$work/pki" --source "$c" -p "$1" -t 20000 \
		--resume-grace "$2" "$s" >"$3" 2>&1
	echo "exit=$? at $(now)" >>"$3"
}
cut() { fabric on 2 ss -K dst "$s" dport = ":$1" >/dev/null 2>&1 || echo "ss -K failed"; }

# (a) three cuts.
serve 7471 8000 "$work/a-server.log"
stream 7471 8000 "$work/a-client.out" &
sp=$!
for n in 10 25 40; do
	wait_for "$work/a-client.out" "^reply: msg-$n\$" || echo "no reply $n"
	cut 7471
done
wait $sp
pkill -TERM -f "listen $s:7471"
sleep 1

# (b) the server killed.
serve 7472 4000 "$work/b-server.log"
stream 7472 4000 "$work/b-client.out" &
sp=$!
wait_for "$work/b-client.out" '^reply: msg-10$' || echo "no reply 10 (b)"
pkill -KILL -f "listen $s:7472"
echo "killed=$(now)"
wait $sp

# (c) the server killed and restarted at once.
serve 7473 20000 "$work/c-server.log"
stream 7473 20000 "$work/c-client.out" &
sp=$!
wait_for "$work/c-client.out" '^reply: msg-10$' || echo "no reply 10 (c)"
pkill -KILL -f "listen $s:7473"
echo "killed-c=$(now)"
sleep 0.2
serve 7473 20000 "$work/c-server2.log"
echo "listening-c=$(now)"
wait $sp
pkill -TERM -f "listen $s:7473"

# (d) The allow rules no longer take client1 when its RESUME comes. The server is
# stopped while the channel is cut and the rules change, so that it has reloaded
# before it reads the RESUME (a TLS handshake behind, on the backlog).
printf '[authz]\nallow = CN=client1,O=rdmasec-test\n' >"$work/d.conf"
serve 7474 20000 "$work/d-server.log" --config "$work/d.conf"
stream 7474 20000 "$work/d-client.out" &
sp=$!
wait_for "$work/d-client.out" '^reply: msg-10$' || echo "no reply 10 (d)"
pid=$(pgrep -f "^[^ ]*rdmasec-server .*--listen $s:7474")
kill -STOP $pid
cut 7474
printf '[authz]\nallow = CN=client2,O=rdmasec-test\n' >"$work/d.conf"
kill -HUP $pid
echo "withdrawn-d=$(now)"
kill -CONT $pid
wait $sp
pkill -TERM -f "listen $s:7474"
wait
GUEST

"$fabric" run --hosts 2 --timeout 300 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
for f in run.out a-client.out a-server.log b-client.out c-client.out c-server2.log d-client.out d-server.log; do
	echo "--- $f"
	grep -v '^reply: msg-' "$work/$f"
done

# (a) Whole, once, in order, on one session resumed three times.
sed -n 's/^reply: \(msg-[0-9]*\)$/\1/p' "$work/a-client.out" >"$work/replies"
seq 1 60 | sed 's/^/msg-/' >"$work/expected"
diff -u "$work/expected" "$work/replies" >&2 || fail "(a) the stream did not come back whole, once and in order"
expect_match "$work/a-client.out" '^stats: .* rebuilds=3 resumes=3$' "(a) the client did not resume three times"
expect_match "$work/a-client.out" '^exit=0 ' "(a) the client failed"
[ "$(grep -c 'event=rebuilt conn=1 .*reason="the control channel was lost' "$work/a-server.log")" = 3 ] ||
	fail "(a) the server did not rebuild session 1 three times over a resumed channel"
[ "$(grep -c 'event=resumed .* tls=resumed reason="handed over: the session of connection 1 resumed on it"' "$work/a-server.log")" = 3 ] ||
	fail "(a) three new channels (TLS resumed, no certificates) were not handed to session 1"
expect_match "$work/a-server.log" 'event=closed conn=1 .*reason="peer disconnected: client quit" msgs_in=61 .*rebuilds=3 ' \
	"(a) session 1 did not end normally with all 60 messages"
expect_match "$work/audit-7471.jsonl" '"event":"resume","role":"server","conn":1,.*"result":"ok"' "(a) no resume in the audit log"
# Recovery, from the server's audit log: the channel lost ("resume" "lost") to the session's
# data path rebuilt over the new one ("rebuild" "ok").
python3 - "$work/audit-7471.jsonl" <<'PY' || fail "(a) no recovery times in the audit log"
import datetime, json, statistics, sys
def ms(r):
    return datetime.datetime.fromisoformat(r["time"].rstrip("Z")).timestamp() * 1000
recs = [json.loads(l) for l in open(sys.argv[1])]
lost = [ms(r) for r in recs if r["event"] == "resume" and r["result"] == "lost"]
done = [ms(r) for r in recs if r["event"] == "rebuild" and r["result"] == "ok"]
took = [min(d for d in done if d >= l) - l for l in lost]
assert len(took) == 3, took
print("(a) recovery after each cut, server's view (ms): %s, median %.0f" % ([round(t) for t in took], statistics.median(took)))
PY
# (b) A clear failure within the grace period (4 s) plus one try (3 s), after the kill.
killed=$(sed -n 's/^killed=//p' "$work/run.out")
end=$(sed -n 's/^exit=[0-9]* at //p' "$work/b-client.out")
expect_match "$work/b-client.out" 'control channel lost .*not resumed within 4000 ms' "(b) no clear failure after the server was killed"
expect_match "$work/b-client.out" '^exit=[1-9]' "(b) the client did not fail"
echo "(b) the client failed $((end - killed)) ms after the server was killed"
[ $((end - killed)) -le 8000 ] || fail "(b) the client took $((end - killed)) ms to fail (grace 4000)"
# (c) Refused by the restarted server at the client's next try (its backoff is at most 3 s, a try at most 3 s).
killed=$(sed -n 's/^killed-c=//p' "$work/run.out")
listening=$(sed -n 's/^listening-c=//p' "$work/run.out")
end=$(sed -n 's/^exit=[0-9]* at //p' "$work/c-client.out")
expect_match "$work/c-client.out" 'the server no longer has the session' "(c) the restarted server's refusal was not reported"
echo "(c) the client failed $((end - killed)) ms after the server was killed, $((end - listening)) ms after the new one listened"
[ $((end - listening)) -lt 7000 ] || fail "(c) the client failed $((end - listening)) ms after the restarted server listened: not refused at its next try (grace 20000)"
# (d) Refused for its identity at its first try after the rules changed: no retries until the grace ends.
withdrawn=$(sed -n 's/^withdrawn-d=//p' "$work/run.out")
end=$(sed -n 's/^exit=[0-9]* at //p' "$work/d-client.out")
expect_match "$work/d-client.out" 'the server refused to resume it' "(d) the refused RESUME was not reported as such"
expect_match "$work/d-client.out" '^exit=[1-9]' "(d) the client did not fail"
expect_match "$work/audit-7474.jsonl" '"event":"refuse",.*"peer":"CN=client1,O=rdmasec-test"' \
	"(d) the refused RESUME is not in the audit log"
echo "(d) the client gave up $((end - withdrawn)) ms after its identity was withdrawn"
[ $((end - withdrawn)) -lt 10000 ] || fail "(d) the client took $((end - withdrawn)) ms to give up (grace 20000): it kept trying"
echo "resume: ok"
