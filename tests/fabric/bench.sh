# SPDX-License-Identifier: MIT
# rdmasec-bench runs every operation between two hosts in one boot, and what
# it prints is what `make bench` reads: every result row in perftest's column
# layout (benchmarks/report.py's parser, the one perftest's output goes through),
# valid JSON with each side's CPU time per operation. Write and read keep
# TX_DEPTH operations in flight (rsec_post/rsec_poll): more operations than
# the depth, a depth and completion moderation of their own, both poll modes, a
# WRITE ping-pong (write --lat, as ib_write_lat),
# and a duration run; reads through a sealed grant, one at a time and
# posted 16 deep, and writes through a sealed grant each; 1 MiB READs, plain
# and sealed, with no frame lost on the fabric; the blocking calls
# from a plain buffer, staged and registered. Connection set-up resumes
# TLS sessions unless told not to. No timing is asserted.
. "$(dirname "$0")/common.bash"

src=${RSEC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
prog=$build/tools/bench/rdmasec-bench
[ -x "$prog" ] || fail "$prog not built"
"$build/tools/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'EOF'
set -u
bench=$1 work=$2
s1=$(fabric ip 1) s2=$(fabric ip 2)
rc=0
# run NAME [server options --] options: server on host 1, client on host 2.
run() {
	local name=$1 sopts=() spid crc=0 src=0
	shift
	if [ "${1:-}" = --server ]; then
		shift
		while [ "$1" != -- ]; do sopts+=("$1"); shift; done
		shift
	else
		sopts=("$@")
	fi
	fabric on 1 "$bench" --certs "$work/pki" --source "$s1" "${sopts[@]}" >"$work/$name.server.txt" \
		2>"$work/$name.server.err" &
	spid=$!
	fabric wait-port 7472 120 || { echo "$name: the server never listened"; kill $spid; return 1; }
	fabric on 2 "$bench" --certs "$work/pki" --source "$s2" --json "$work/$name.json" "$@" "$s1" \
		>"$work/$name.txt" 2>"$work/$name.err" || crc=$?
	wait $spid || src=$?
	echo "$name: client $crc server $src"
	[ $crc = 0 ] && [ $src = 0 ]
}
run send_bw -s 4096,64 -n 50,20 || rc=1
run send_lat --lat -s 64 -n 50 --poll busy || rc=1
run write_bw --op write -s 65536,64 -n 20,300 || rc=1
run write_bw_qps --op write -s 65536,4096 -n 40,400 -q 4 || rc=1
run read_bw_qps --op read -s 4096 -n 90 -q 3 -t 8 --poll event || rc=1
run read_bw --op read -s 4096 -n 100 -t 16 -Q 4 --poll event || rc=1
run read_lat --op read --lat -s 4096 -n 20 || rc=1
run write_lat --op write --lat -s 4096,64 -n 20,300 || rc=1
run read_sealed --op read --sealed --lat -s 4096,100000 -n 20,10 || rc=1
run read_bw_sealed --op read --sealed -s 4096,100000 -n 100,20 -t 16 -Q 4 || rc=1
run write_sealed --op write --sealed --lat -s 4096,100000 -n 10,5 || rc=1
# 1 MiB READs, 4 in flight: rxe sends each response as one burst of 1024 frames
# (1025 sealed), which the fabric's backlog must hold; a lost frame cost a 67 ms
# retry, or with several in flight hung the READs for good (docs/verbs.md, "Large READs").
run read_1m --op read -s 1M -n 4 -t 4 -Q 1 || rc=1
run read_1m_sealed --op read --sealed -s 1M -n 4 -t 4 -Q 1 || rc=1
for d in rxe1 rxe2; do
	lost=$(cat /sys/class/infiniband/$d/ports/1/hw_counters/send_err)
	[ "$lost" = 0 ] || { echo "$d could not send $lost frames: the fabric dropped them"; rc=1; }
done
# The blocking calls from a plain buffer: staged (up to 64 KiB) and registered per call (above).
run write_blocking --op write --blocking -s 4096,100000 -n 20,5 || rc=1
run read_blocking --op read --blocking --lat -s 64,100000 -n 20,5 || rc=1
run connect --op connect -n 3 || rc=1
run connect_full --op connect -n 2 --no-resume || rc=1
run qp_setup --op qp -n 5 || rc=1
run duration --lat -s 64 -D 1 || rc=1
run write_duration --op write -s 4096 -D 1 || rc=1
# A server started for one test refuses a client asking for another, and says why.
run refused --server --op write -- --op send -s 64 -n 5 && rc=1
grep -q 'started for another --op' "$work/refused.err" || { echo "refused: no reason given"; rc=1; }
exit $rc
EOF

"$fabric" run --hosts 2 --timeout 300 -- bash "$work/guest.sh" "$prog" "$work" >"$work/out" 2>&1 ||
	{ cat "$work/out"; tail -n 5 "$work"/*.txt "$work"/*.err; fail "a run failed"; }
cat "$work/out"

runs=(send_bw send_lat write_bw write_bw_qps read_bw_qps read_bw read_lat write_lat read_sealed read_bw_sealed write_sealed write_blocking
	read_blocking connect connect_full qp_setup)
outputs=()
for r in "${runs[@]}"; do
	grep -A1 '^ #bytes' "$work/$r.txt" | sed "s/^/[$r] /"
	outputs+=("$work/$r.txt")
done
# Servers print rows for what they measure themselves (send, connect).
python3 "$src/benchmarks/report.py" --check "${outputs[@]}" "$work/duration.txt" "$work/write_duration.txt" \
	"$work/send_bw.server.txt" "$work/send_lat.server.txt" "$work/connect.server.txt" ||
	fail "a result row does not match perftest's column layout"

python3 - "$work" "${runs[@]}" <<'PY' || fail "JSON results incomplete"
import json, math, os, sys

work, runs = sys.argv[1], sys.argv[2:]
expect = {"send_bw": ("send", "bw", [(4096, 50), (64, 20)]), "send_lat": ("send", "lat", [(64, 50)]),
          "write_bw": ("write", "bw", [(65536, 20), (64, 300)]), "read_bw": ("read", "bw", [(4096, 100)]),
          "write_bw_qps": ("write", "bw", [(65536, 40), (4096, 400)]), "read_bw_qps": ("read", "bw", [(4096, 90)]),
          "read_lat": ("read", "lat", [(4096, 20)]), "write_lat": ("write", "lat", [(4096, 20), (64, 300)]), "read_sealed": ("read", "lat", [(4096, 20), (100000, 10)]),
          "read_bw_sealed": ("read", "bw", [(4096, 100), (100000, 20)]),
          "write_sealed": ("write", "lat", [(4096, 10), (100000, 5)]),
          "write_blocking": ("write", "bw", [(4096, 20), (100000, 5)]),
          "read_blocking": ("read", "lat", [(64, 20), (100000, 5)]),
          "connect": ("connect", "lat", [(0, 3)]),
          "connect_full": ("connect", "lat", [(0, 2)]), "qp_setup": ("qp", "lat", [(0, 5)])}
# Connections whose TLS handshake resumed: every one after the first, none with --no-resume.
resumed = {"connect": 2, "connect_full": 0}
# Poll mode, and for write and read the operations in flight and the completion moderation.
modes = {"send_bw": ("busy", None, None), "send_lat": ("busy", None, None), "write_bw": ("busy", 128, 100),
         "write_bw_qps": ("busy", 128, 100), "read_bw_qps": ("event", 8, 8),
         "read_bw": ("event", 16, 4), "read_lat": ("busy", 1, 1), "write_lat": ("busy", 1, 1), "read_sealed": ("busy", 1, 1),
         "read_bw_sealed": ("busy", 16, 4), "write_sealed": ("busy", 1, 1),
         "write_blocking": ("busy", 1, 1), "read_blocking": ("busy", 1, 1),
         "connect": ("event", None, None),
         "connect_full": ("event", None, None), "qp_setup": ("event", None, None)}
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL: " + what)
        ok = False
for r in runs:
    doc = json.load(open(os.path.join(work, r + ".json")))
    op, test, steps = expect[r]
    check(doc["tool"] == "rdmasec-bench" and doc["role"] == "client", r + ": tool and role")
    check(doc["op"] == op and doc["test"] == test, r + ": op and test")
    check((doc["poll"], doc.get("tx_depth"), doc.get("cq_mod")) == modes[r], r + ": poll, tx_depth, cq_mod")
    check(doc.get("sealed") is r.endswith("_sealed"), r + ": sealed")
    check(doc.get("blocking") is r.endswith("_blocking"), r + ": blocking")
    if doc.get("tx_depth"):
        qps = {"write_bw_qps": 4, "read_bw_qps": 3}.get(r, 1)
        check(doc.get("qps") == qps, "%s: %s queue pairs, not %s" % (r, doc.get("qps"), qps))
    res = doc["results"]
    check([(x["bytes"], x["iterations"]) for x in res] == steps, r + ": one row per size, with its count")
    if r in resumed:
        check(res[0].get("tls_resumed") == resumed[r], "%s: %s of the connections resumed TLS, not %s" % (
            r, res[0].get("tls_resumed"), resumed[r]))
    key = "bw_avg_mbs" if test == "bw" else "t_typical_us"
    for x in res:
        check(math.isfinite(x.get(key, float("nan"))) and x[key] > 0, r + ": " + key)
        for side in ("client", "server"):
            cpu = x["cpu"].get(side, {})
            check(cpu.get("per_op_us", 0) > 0 and cpu["user_s"] + cpu["sys_s"] > 0, r + ": CPU per op of the " + side)
        print("%-9s %s %s %7d B: %s %.2f, CPU per op client %.1f us, server %.1f us" % (
            r, op, test, x["bytes"], key, x[key], x["cpu"]["client"]["per_op_us"], x["cpu"]["server"]["per_op_us"]))
sys.exit(0 if ok else 1)
PY
echo "bench: ok"
