# SPDX-License-Identifier: MIT
# A flood from two hosts at once: host 3 opens 1000 TCP connections that
# send the first bytes of a ClientHello and never finish TLS, and holds them;
# meanwhile host 2 runs 10 hostile_client processes of 100 authenticated
# connections each (an echo on each, all held, another echo on each). Every
# authenticated client must be served, the server must live, and its memory
# and open fds are reported before, with the half-open ones, at the peak and
# after, per connection, with the CPU it spends on them while they are idle.
#
# RSEC_FLOOD_SERVER another server binary (the AddressSanitizer build, say);
# RSEC_HOSTILE_OLD_SERVER=1 leaves out options older servers lack;
# FLOOD_CLIENTS, FLOOD_PROCS and FLOOD_HALF_OPEN change the sizes;
# FLOOD_IDLE_SECONDS the window of each idle-CPU measurement (default 2).
. "$(dirname "$0")/common.bash"
# HOSTILE_KEEP=1 keeps the logs and outputs (for a look after a failure).
[ "${HOSTILE_KEEP:-0}" = 1 ] && trap 'echo "kept $work"' EXIT

bin=$build/tools
hostile=$build/tests/hostile_client
server_bin=${RSEC_FLOOD_SERVER:-$bin/server/rdmasec-server}
clients=${FLOOD_CLIENTS:-1000} procs=${FLOOD_PROCS:-10} half=${FLOOD_HALF_OPEN:-1000} idle=${FLOOD_IDLE_SECONDS:-2}
# Host 2 runs $procs handshakes at a time: the per-source limits must not
# throttle it, only host 3's pile of unfinished ones.
new_flags="--max-handshakes-per-source 64 --handshake-rate 1000000"
[ "${RSEC_HOSTILE_OLD_SERVER:-0}" = 1 ] && new_flags=""
[ -x "$hostile" ] || fail "build hostile_client first (missing $hostile)"
[ -x "$server_bin" ] || fail "no server at $server_bin"
case $idle in '' | *[!0-9]* | 0) fail "FLOOD_IDLE_SECONDS must be a positive number of seconds" ;; esac
[ $((clients % procs)) = 0 ] || fail "FLOOD_CLIENTS ($clients) must be a multiple of FLOOD_PROCS ($procs)"
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'EOF'
set -u
work=$1 hostile=$2 server_bin=$3 new_flags=$4 clients=$5 procs=$6 half=$7 idle=$8
server=$(fabric ip 1)
log=$work/server.log
ulimit -n 65536 # thousands of sockets on each side
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
# Small buffers (the clients ask for the same), and a set-up deadline past
# the flood's end: the half-open connections stay until their client leaves.
# shellcheck disable=SC2086 # new_flags is a list of options
fabric on 1 "$server_bin" --certs "$work/pki" --listen "$server:7471" --max-clients 2048 \
	--max-per-identity 2048 --recv-slots 4 --slot-size 4096 --handshake-timeout 600000 $new_flags \
	--metrics "$work/metrics.prom" 2>"$log" &
spid=$!
fabric wait-port 7471 60 || { cat "$log"; exit 1; }

alive() { kill -0 $spid 2>/dev/null && echo yes || echo no; }
wait_for() {
	local end=$((SECONDS + $3))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
# metric NAME: its value in the metrics file (rewritten at most once a second after a change).
metric() { sed -n "s/^rdmasec_server_$1 //p" "$work/metrics.prom" 2>/dev/null; }
# The server's CPU time in clock ticks (utime + stime).
cpu_ticks() { awk '{print $14 + $15}' /proc/$spid/stat 2>/dev/null || echo 0; }
# snapshot NAME: memory, fds, QPs, and the CPU it burns over $idle s while nobody asks anything.
snapshot() {
	local rss fds qps c0 c1
	c0=$(cpu_ticks)
	sleep "$idle"
	c1=$(cpu_ticks)
	rss=$(awk '/^VmRSS:/ {print $2}' /proc/$spid/status 2>/dev/null)
	fds=$(ls /proc/$spid/fd 2>/dev/null | wc -l)
	qps=$(rdma resource show qp 2>/dev/null | grep -c '^link rxe1/1 .* type RC ') # only the server uses rxe1
	echo "snapshot $1 t=$SECONDS rss_kb=${rss:-0} fds=$fds qps=$qps idle_cpu_pct=$(((c1 - c0) * 100 / ($(getconf CLK_TCK) * idle))) alive=$(alive)"
}

# One connection first: the server opens the device and fills its QP pool
# at the first one, and "before" should not count that.
fabric on 2 "$hostile" many "$work/pki" "$server" "$(fabric ip 2)" 1 0 >"$work/warm-up.out" 2>&1
# ... and has closed it again.
end=$((SECONDS + 30))
until [ "$(metric accepted_total)" = 1 ] && [ "$(metric clients)" = 0 ]; do
	[ $SECONDS -lt $end ] || { echo "the server did not close the warm-up connection"; break; }
	sleep 0.2
done
snapshot before
# Started directly, so that $! is the client itself: TERM ends its hold.
fabric on 3 "$hostile" half-open "$work/pki" "$server" "$(fabric ip 3)" "$half" 900 >"$work/half-open.out" 2>&1 &
hpid=$!
wait_for "$work/half-open.out" '^RESULT half-open-connected=|^hostile_client:' 120
# The kernel completes the TCP handshakes; wait for the server to have taken
# (or refused) them all, from its metrics file, before measuring.
want=$(($(sed -n 's/^RESULT half-open-connected=//p' "$work/half-open.out") + 1))
end=$((SECONDS + 120))
until [ "$(metric accepted_total)" -ge $want ] 2>/dev/null; do
	[ $SECONDS -lt $end ] || { echo "the server did not take the half-open connections"; break; }
	sleep 0.2
done
snapshot half-open

t0=$SECONDS
pids=
for p in $(seq 1 "$procs"); do
	fabric on 2 "$hostile" many "$work/pki" "$server" "$(fabric ip 2)" $((clients / procs)) 900 \
		>"$work/many-$p.out" 2>&1 &
	pids="$pids $!"
done
for p in $(seq 1 "$procs"); do
	wait_for "$work/many-$p.out" '^RESULT many-connected=|^hostile_client:' 900 || echo "many-$p did not finish connecting"
done
echo "connect_seconds=$((SECONDS - t0))"
snapshot peak
top -b -n 1 | head -n 15
# Stop holding: one more echo on each, then they close.
for p in $pids; do kill -TERM "$p"; done
for p in $pids; do wait "$p"; done
kill -TERM $hpid
wait $hpid
echo "flood_seconds=$((SECONDS - t0))"
# The server ends them as it sees them go.
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ] && [ "$(metric clients)" != 0 ]; do sleep 0.2; done
snapshot after
# The counters in the log: wait for the line SIGUSR1 asks for.
logged=$(grep -c 'event=counters' "$log")
kill -USR1 $spid
end=$((SECONDS + 10))
while [ $SECONDS -lt $end ] && [ "$(grep -c 'event=counters' "$log")" -le "$logged" ]; do sleep 0.1; done
kill -TERM $spid
wait $spid
echo "server=$?"
EOF

start=$SECONDS
"$fabric" run --hosts 3 --mem 4096 --timeout 1100 -- bash "$work/guest.sh" "$work" "$hostile" "$server_bin" \
	"$new_flags" "$clients" "$procs" "$half" "$idle" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
echo "hostile_flood: fabric run took $((SECONDS - start)) s"

log=$work/server.log
for f in "$work"/half-open.out "$work"/many-*.out; do
	echo "--- ${f##*/}"
	grep '^RESULT\|^hostile_client:' "$f"
done
grep 'event=counters' "$log" | tail -n 1

# snap NAME FIELD: a number from run.out's snapshot line.
snap() { sed -n "s/^snapshot $1 .* $2=\\([0-9]*\\).*/\\1/p" "$work/run.out"; }
value_sum() { cat "$work"/many-*.out | sed -n "s/^RESULT $1=//p" | awk '{s += $1} END {print s + 0}'; }
half_connected=$(sed -n 's/^RESULT half-open-connected=//p' "$work/half-open.out")
ok=$(value_sum many-ok)
connected=$(value_sum many-connected)
for s in before half-open peak after; do
	[ -n "$(snap $s rss_kb)" ] || fail "no $s snapshot of the server"
done
# per KIB_OR_FDS_DELTA N: the cost of one connection, to one decimal.
per() { awk -v d="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", d / n; else printf "n/a" }'; }
rss_half=$(($(snap half-open rss_kb) - $(snap before rss_kb)))
fds_half=$(($(snap half-open fds) - $(snap before fds)))
rss_auth=$(($(snap peak rss_kb) - $(snap half-open rss_kb)))
fds_auth=$(($(snap peak fds) - $(snap half-open fds)))
echo "server VmRSS (KiB): before $(snap before rss_kb), with ${half_connected:-0} half-open $(snap half-open rss_kb)," \
	"peak with $connected authenticated more $(snap peak rss_kb), after $(snap after rss_kb)"
echo "server fds: before $(snap before fds), half-open $(snap half-open fds), peak $(snap peak fds), after $(snap after fds)"
echo "server CPU while they all wait (% of one core): before $(snap before idle_cpu_pct), half-open" \
	"$(snap half-open idle_cpu_pct), peak $(snap peak idle_cpu_pct), after $(snap after idle_cpu_pct)"
echo "per half-open connection: $(per $rss_half "${half_connected:-0}") KiB, $(per $fds_half "${half_connected:-0}") fds"
echo "per authenticated connection: $(per $rss_auth "$connected") KiB, $(per $fds_auth "$connected") fds," \
	"$(per $(($(snap peak qps) - $(snap half-open qps))) "$connected") QPs"
echo "$connected authenticated connections in $(sed -n 's/^connect_seconds=//p' "$work/run.out") s"

[ "$ok" = "$clients" ] || fail "only $ok of $clients authenticated clients were served (first failure: $(
	grep -h '^RESULT many-failed=' "$work"/many-*.out | grep -v '=none$' | head -n 1))"
grep -q '^snapshot peak .* alive=yes$' "$work/run.out" ||
	fail "the server did not live through the flood"
[ "$(snap half-open qps)" = "$(snap before qps)" ] ||
	fail "half-open connections cost QPs: $(snap before qps) before, $(snap half-open qps) with them"
if [ "${RSEC_HOSTILE_OLD_SERVER:-0}" != 1 ]; then
	# --max-handshakes-per-source 64: host 3 keeps 64 handshakes, the rest are refused at accept.
	held=$(sed -n 's/^RESULT half-open-open-at-end=//p' "$work/half-open.out")
	[ "${held:-999999}" -le 64 ] || fail "the server held $held half-open connections from one source (limit 64)"
fi
[ "$(snap after fds)" -le $(($(snap before fds) + 2)) ] ||
	fail "the server kept fds after everyone left: $(snap before fds) before, $(snap after fds) after"
expect_match "$work/run.out" '^server=0$' "the server did not exit cleanly"
if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error' "$log"; then
	grep -A40 -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$log" | head -80 >&2
	fail "a sanitizer report in the server's log"
fi
echo "PASS: hostile flood: $ok of $clients authenticated clients served beside $half half-open connections"
