# SPDX-License-Identifier: MIT
# `rdmasec-attack matrix` on a subset, in one 3-host fabric boot: inject and
# qp-error against the naive victim, ibv_rc_pingpong and rdmasec. The JSON
# must show the naive victim printing the attacker's bytes, pingpong's QP
# broken by qp-error, and both rdmasec cells blocked: the server counted the
# fault (MAC failure, QP error) and rebuilt the data path, and the client's
# round trip after the attack came back on the same connection. The Markdown
# and SVG must be written, with the same cells, and the terminal table must
# list them.
. "$(dirname "$0")/common.bash"

atk=$build/tools/attack/rdmasec-attack
[ -x "$atk" ] || fail "build rdmasec-attack first ($atk)"

# Usage errors need no fabric.
"$atk" matrix --victims nosuch >/dev/null 2>"$work/err"
[ $? -eq 2 ] && grep -q "unknown victim .nosuch'" "$work/err" || fail "an unknown victim was not refused"
"$atk" matrix --attacks inject,inject >/dev/null 2>&1
[ $? -eq 2 ] || fail "a repeated attack was not refused"

run_matrix --attacks inject,qp-error --victims naive,rdmasec,pingpong --cell-timeout 150 \
	--markdown "$work/m.md" --svg "$work/m.svg"

python3 - "$work/m.json" <<'PY' || fail "the matrix's outcomes are wrong"
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "rdmasec-attack-matrix/1" and d["cmd"] == "matrix", d
assert d["attacks"] == ["inject", "qp-error"] and d["victims"] == ["naive", "rdmasec", "pingpong"], d
cells = {(c["attack"], c["victim"]): c for c in d["cells"]}
assert len(cells) == 6 and d["summary"]["cells"] == 6, d["summary"]
for c in d["cells"]:
    assert c["outcome"] in ("succeeded", "blocked", "detected", "not-applicable", "error"), c
    assert c["evidence"], c
c = cells[("inject", "naive")]
assert c["outcome"] == "succeeded" and "INJECTED-BY-ATTACKER" in c["evidence"], c
c = cells[("qp-error", "pingpong")]
assert c["outcome"] == "succeeded" and ("Failed status" in c["evidence"] or "state ERR" in c["evidence"]), c
for a in ("inject", "qp-error"):
    c = cells[(a, "rdmasec")]
    assert c["outcome"] == "blocked" and "rebuilt over TLS" in c["mechanism"], c
    assert "[h1 rdmasec-server] event=rebuilt rebuilds=1 " in c["evidence"], c
    assert c["evidence"].endswith("; [h2] reply: after the attack"), c
c = cells[("inject", "rdmasec")]["evidence"]
assert "authentication failed" in c and re.search(r" mac_failures=[1-9]", c), c
assert re.search(r" qp_errors=[1-9]", cells[("qp-error", "rdmasec")]["evidence"]), cells[("qp-error", "rdmasec")]
assert d["rdmasec_all_stopped"] is True, d
assert d["elapsed_s"] > 0
print("matrix: %d cells: %s" % (len(cells), ", ".join("%s=%d" % (k, v) for k, v in d["summary"].items() if v)))
PY
expect_match "$work/m.md" '^\| inject \| \*\*succeeded\*\* \| blocked \|' "the Markdown grid is wrong"
expect_match "$work/m.md" '^\| qp-error \| [^|]* \| blocked \|' "the Markdown grid is wrong"
expect_match "$work/m.svg" '^</svg>$' "the SVG is incomplete"
[ "$(grep -c '<rect x=' "$work/m.svg")" -ge 6 ] || fail "the SVG has fewer than 6 cells"
expect_match "$work/table.txt" '^inject x naive: succeeded$' "the terminal table lacks a cell"
expect_match "$work/progress.txt" 'matrix: inject x naive' "no progress on stderr"
# Every cell reported and none was an error, so the exit status is 0.
[ "$rc" = 0 ] || fail "rdmasec-attack matrix exited $rc"
echo "attack_matrix: ok"
