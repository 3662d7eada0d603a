# SPDX-License-Identifier: MIT
# The attack matrix's rdma_cm cells decide, in one 3-host fabric boot:
# `rdmasec-attack matrix --attacks cm-disconnect,inject --victims rping,ucmatose,rdmasec`.
# Each cell must end `succeeded` with evidence that shows the order of events,
# not a state number (rping's state variable is written by several threads):
#  - cm-disconnect x rping: the client reports the forged DISCONNECTED while
#    its server still runs and has not disconnected;
#  - cm-disconnect x ucmatose: the client ended before its server got the
#    replies, or (both ended at once) its cm_id was DISCONNECT while it was
#    still receiving and its server had not begun to disconnect;
#  - inject x rping: the server fails on a forged SEND (or rdma res shows the
#    PSN gap the accepted ones leave);
#  - inject x ucmatose: one forged SEND at the PSN the rdma_cm REP told, and
#    the server's QP expects a PSN its client never sent;
#  - and beside them rdmasec, which has no rdma_cm: cm-disconnect is blocked
#    (its session outlives the blind DREQs, so the attacker must not listen
#    for a REQ/REP longer than the session lasts), inject blocked (the
#    forged frame fails authentication, the data path is rebuilt and the
#    session goes on).
# RSEC_MATRIX_CELL_TIMEOUT (default 120) bounds each cell; RSEC_MATRIX_KEEP=1
# keeps the cells' logs (the path is printed).
. "$(dirname "$0")/common.bash"

run_matrix --attacks cm-disconnect,inject --victims rping,ucmatose,rdmasec \
	--cell-timeout "${RSEC_MATRIX_CELL_TIMEOUT:-120}" ${RSEC_MATRIX_KEEP:+--keep}

python3 - "$work/m.json" <<'PY' || fail "an rdma_cm cell did not decide as expected"
import json, re, sys
d = json.load(open(sys.argv[1]))
cells = {(c["attack"], c["victim"]): c for c in d["cells"]}
assert len(cells) == 6, cells.keys()
for c in d["cells"]:
    print("%s x %s: %s: %s" % (c["attack"], c["victim"], c["outcome"], c["evidence"]))
for c in d["cells"]:
    assert c["outcome"] == "succeeded" or c["victim"] == "rdmasec", c
c = cells[("cm-disconnect", "rdmasec")]
assert c["outcome"] == "blocked" and "reply: after the attack" in c["evidence"], c
c = cells[("inject", "rdmasec")]
assert c["outcome"] == "blocked" and "event=rebuilt" in c["evidence"] and "reply: after the attack" in c["evidence"], c
c = cells[("cm-disconnect", "rping")]["evidence"]
assert "client DISCONNECT EVENT" in c and "[h1] still ran and had not disconnected" in c, c
assert re.search(r"after \d+ of 1000000 pings", c), c
c = cells[("cm-disconnect", "ucmatose")]["evidence"]
assert ("after the forged DREQ; it ended (test complete) before [h1] got its replies" in c
        and "data transfers complete" not in c) or \
    c.startswith("[h2] client cm_id DISCONNECT while still receiving, before [h1] began to disconnect"), c
c = cells[("inject", "rping")]["evidence"]
assert re.search(r"^\[h1\] .*after forged SENDs at its PSN", c) or "forged SENDs (INJECTED-BY-ATTACKER) accepted" in c, c
c = cells[("inject", "ucmatose")]["evidence"]
assert re.search(r"rdma res: rxe1 QP 0x[0-9a-f]+ expects PSN \d+, its peer sends \d+: 1 forged SENDs", c), c
PY
[ "$rc" = 0 ] || fail "rdmasec-attack matrix exited $rc"
echo "attack_matrix_rdmacm: ok"
