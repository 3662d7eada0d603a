# SPDX-License-Identifier: MIT
# rdmasec-attack's probes on real rxe: QPNs are a device-wide counter (V5),
# rkeys are index<<8 | one random byte with a sequential index shared by
# contexts, PDs and processes (V1-V3), and buffers are consecutive (V4).
. "$(dirname "$0")/common.bash"

atk=$build/tools/attack/rdmasec-attack
[ -x "$atk" ] || fail "build rdmasec-attack first ($atk)"

"$fabric" run -- bash -c "
	$atk probe-qpn -d \$FABRIC_DEV -n 8 --contexts 3 --json >$work/qpn.json &&
	$atk probe-qpn -d \$FABRIC_DEV -n 4 >$work/qpn.txt &&
	$atk probe-rkey -d \$FABRIC_DEV -n 32 --json >$work/rkey.json &&
	$atk probe-rkey -d \$FABRIC_DEV -n 16 >$work/rkey.txt &&
	$atk probe-alloc -d \$FABRIC_DEV -n 16 --allocator memalign --json >$work/alloc.json" >"$work/out" 2>&1 ||
	{ cat "$work/out"; fail "a probe failed"; }
cat "$work/qpn.txt" "$work/rkey.txt"

# V5: consecutive QPNs across three contexts, and the next one predicted.
python3 - "$work" <<'PY' || fail "probe results do not show the expected structure"
import json, sys
w = sys.argv[1]
q = json.load(open(w + "/qpn.json"))
qpns = [int(x, 16) for x in q["qpns"]]
assert q["sequential"] and q["stride"] == 1, q
assert all(b - a == 1 for a, b in zip(qpns, qpns[1:])), qpns
assert q["predictable"] and int(q["observed_next"], 16) == qpns[-1] + 1, q
r = json.load(open(w + "/rkey.json"))
assert r["generator"] == "index<<8|random8" and r["unknown_bits"] == 8, r
for pat in ("hold", "churn", "reopen", "pds", "procs"):
    keys = [int(x, 16) for x in r[pat + "_rkeys"]]
    idx = [k >> 8 for k in keys]
    assert all(b - a == 1 for a, b in zip(idx, idx[1:])), (pat, [hex(k) for k in keys])
    assert len({k & 0xff for k in keys}) > len(keys) // 2, (pat, "key byte looks constant")
a = json.load(open(w + "/alloc.json"))
assert a["mr_va_is_address"], a
print("qpns %s..%s; rkey index sequential in all 5 patterns; alloc stride %s fixed=%s" %
      (hex(qpns[0]), hex(qpns[-1]), a["stride"], a["fixed_stride"]))
PY
echo "attack_probe: ok"
