# SPDX-License-Identifier: MIT
# rdmasec-server under valgrind on real rxe: clients that echo, write and
# read, a refused client and a silent one, then SIGTERM. No memory error and
# no definite leak allowed.
. "$(dirname "$0")/common.bash"

bin=$build/tools
"$bin/keygen/rdmasec-keygen" --clients 2 "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
"$bin/keygen/rdmasec-keygen" --ca-name other "$work/other" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'EOF'
set -u
bin=$1 work=$2
server=$(fabric ip 1)
fabric on 1 valgrind -q --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=definite \
	--log-file="$work/valgrind.log" "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$server:7471" \
	--handshake-timeout 60000 2>"$work/server.log" &
spid=$!
fabric wait-port 7471 120 || { cat "$work/server.log"; exit 1; }
client() { fabric on 2 "$bin/client/rdmasec-client" --source "$(fabric ip 2)" -t 120000 "$@" "$server"; }
client --certs "$work/pki" -c "send hello; send -s 200K; write abc; read; write -s 1M; read; quit" >"$work/c1.out" 2>&1 &
c1=$!
client --ca "$work/pki/ca.pem" --cert "$work/pki/client2.pem" --key "$work/pki/client2.key" \
	-c "send second; write xyz; read; quit" >"$work/c2.out" 2>&1 &
c2=$!
client --certs "$work/other" -c "send x" >"$work/refused.out" 2>&1
wait $c1; echo "c1=$?"
wait $c2; echo "c2=$?"
kill -TERM $spid
wait $spid
echo "server=$?"
EOF

"$fabric" run --hosts 2 --mem 3072 --timeout 600 -- bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
expect_match "$work/run.out" '^c1=0$' "client 1 failed under a valgrind server: $(cat "$work/c1.out")"
expect_match "$work/run.out" '^c2=0$' "client 2 failed under a valgrind server"
if ! grep -q '^server=0$' "$work/run.out"; then
	cat "$work/valgrind.log" >&2
	fail "the server under valgrind exited non-zero (3: memory errors or definite leaks)"
fi
expect_match "$work/server.log" 'event=counters .*established=2 .*refused_auth=1 ' "the server did not count 2 connections and 1 refusal"
echo "server_valgrind: ok"
