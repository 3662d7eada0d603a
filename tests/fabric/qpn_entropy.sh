# SPDX-License-Identifier: MIT
# QPN randomization on real rxe (docs/qpn.md): benchmarks/qpn-entropy measures how
# many guesses a peer that knows its own QPN needs to hit the next
# connection's. rxe's own allocator is sequential: the first guess hits in
# nearly every trial. The default QP pool must need materially more: at
# least 3 bits more, and the first guess must rarely hit.
. "$(dirname "$0")/common.bash"

prog=${QPN_ENTROPY:-$build/benchmarks/qpn-entropy}
[ -x "$prog" ] || fail "$prog not built"
trials=${QPN_TRIALS:-100}

"$fabric" run --timeout 600 -- "$prog" --trials "$trials" --json >"$work/out.json" 2>"$work/err" ||
	{ cat "$work/err" "$work/out.json"; fail "qpn-entropy failed"; }

python3 - "$work/out.json" <<'EOF' || fail "QPN entropy below expectations"
import json, sys

r = json.load(open(sys.argv[1]))
plain = r["allocators"][0]
pool = next(a for a in r["allocators"] if a["pool"] == r["default_pool"] and a["burn"] == r["default_burn"])
for name, a in (("unmitigated", plain), ("pool %d burn %d" % (pool["pool"], pool["burn"]), pool)):
    print("%-18s mean %.1f median %.1f <=1 %.0f%% <=16 %.0f%% bits %.2f ms/QP %.2f empty %d"
          % (name, a["mean"], a["median"], 100 * a["within1"], 100 * a["within16"], a["bits"],
             a["ms_per_qp"], a["pool_empty"]))
ok = True
def check(cond, what):
    global ok
    print(("ok:   " if cond else "FAIL: ") + what)
    ok = ok and cond
check(plain["pool"] == 0, "first row is the device's own allocator")
check(plain["within1"] >= 0.95, "unmitigated: found within 1 guess in >= 95% of trials")
check(pool["bits"] >= plain["bits"] + 3, "default pool: >= 3 bits more than unmitigated")
check(pool["within1"] <= 0.2, "default pool: the first guess hits in <= 20% of trials")
check(pool["pool_empty"] == 0, "default pool: no take found the pool empty")
sys.exit(0 if ok else 1)
EOF
echo "qpn_entropy: ok"
