# SPDX-License-Identifier: MIT
# The attack rows against rdmasec-blk (by default the seven that reach its
# data path and its admission: inject, qp-error, spoof-request,
# spoof-response, pool-write, exhaust, sniff; RSEC_MATRIX_BLK_ROWS=all for
# all twelve), in one 3-host
# fabric boot: `rdmasec-attack matrix --victims rdmasec-blk` (rdmasec-blkd on host 1
# serving a pattern-filled file, host 2 running rdmasec-blk bench --verify
# in a loop, attacker host 3). No cell may end in `error` or `succeeded`;
# every cell names its evidence, and the rows that attack the data path
# show all of it:
#  - inject, qp-error, spoof-request, spoof-response, pool-write: the target
#    audited the hit (a frame that failed authentication, a queue pair error,
#    a rebuild), the blocks past the client's region still hash to the
#    pattern, and the client's verify runs found no wrong data;
#  - pool-write (forged RDMA WRITEs into the client's pool, its RETH read
#    off the wire): blocked, the session healed (a rebuild for the silenced
#    data path, or for the queue pair a forged WRITE inside a message broke);
#  - spoof-request: the block the forged capsule named is unchanged;
#  - impersonate, cm-disconnect, exhaust, cnp: the blocks and the runs as
#    above, and the session went on;
#  - sniff: neither the text host 2 wrote nor the block host 1 returned is
#    on the wire;
#  - mem-access, cnp, cm-disconnect-exhaust: not-applicable, with the reason.
# RSEC_MATRIX_KEEP=1 keeps the cells' logs (the path is printed).
. "$(dirname "$0")/common.bash"

for f in blk/blkd/rdmasec-blkd blk/cli/rdmasec-blk; do
	[ -x "$build/tools/$f" ] || fail "build it first (missing $build/tools/$f)"
done
# make check runs the rows that reach the data path and the target's
# admission (each cell boots NVMe-free but still takes a minute of the
# emulated guest); RSEC_MATRIX_BLK_ROWS=all runs the whole column, as does
# DEMO_MATRIX=full make demo.
all=inject,impersonate,qp-error,mem-access,exhaust,cm-disconnect,sniff,spoof-request,spoof-response,pool-write,cnp,cm-disconnect-exhaust
rows=${RSEC_MATRIX_BLK_ROWS:-inject,qp-error,spoof-request,spoof-response,pool-write,exhaust,sniff}
[ "$rows" = all ] && rows=$all
run_matrix --attacks "$rows" --victims rdmasec-blk ${RSEC_MATRIX_CELL_TIMEOUT:+--cell-timeout "$RSEC_MATRIX_CELL_TIMEOUT"} \
	${RSEC_MATRIX_KEEP:+--keep}

python3 - "$work/m.json" "$rows" <<'PY' || fail "an rdmasec-blk cell did not decide as expected"
import json, re, sys
d = json.load(open(sys.argv[1]))
cells = {c["attack"]: c for c in d["cells"] if c["victim"] == "rdmasec-blk"}
for c in d["cells"]:
    print("%s x %s: %s: %s" % (c["attack"], c["victim"], c["outcome"], c["evidence"]))
rows = set(sys.argv[2].split(","))
assert rows <= set(cells), "missing cells: %s" % (rows - set(cells))
for a, c in cells.items():
    assert c["outcome"] in ("blocked", "detected", "not-applicable"), (a, c)
    assert c["evidence"].strip() and c["mechanism"].strip(), (a, c)
# The blocks nobody but an attacker writes still hold the pattern; no verify run found wrong data.
intact = r"\[h1\] LBA \d+-\d+ sha [0-9a-f]{8} =pattern; \[h2\] [1-9]\d* verify runs \([1-9]\d* after\), 0 verify errors"
for a in rows - {"cm-disconnect-exhaust"}:
    assert re.search(intact, cells[a]["evidence"]), (a, cells[a]["evidence"])
# A forged SEND fails authentication, or, landing between the packets of a multi-packet SEND of the
# client's, makes rxe fail the target's QP (blk_faults.sh: about one sweep in thirty): either is the hit.
forged_send = r"mac_failure|qp_error|rebuild: .*(authentication|queue pair)"
# A forged WRITE into the pool at the client's expected PSN silences the data path (PATH_CHECK rebuilds
# it), or, inside one of the target's multi-packet WRITEs, fails the client's QP (rebuilt too).
hits = {"inject": forged_send, "qp-error": r"qp_error|rebuild: .*queue pair",
        "spoof-request": forged_send, "spoof-response": r"rebuild: ",
        "pool-write": r"rebuild: .*(data path silent|queue pair)|qp_error"}
for a, hit in hits.items():
    if a not in rows:
        continue
    e = cells[a]["evidence"]
    assert re.search(r"\[h1 audit\] .*(" + hit + ")", e), (a, e)
if "spoof-request" in rows:
    e = cells["spoof-request"]["evidence"]
    m = re.search(r"^\[h1\] LBA \d+ sha ([0-9a-f]{8}) \(was ([0-9a-f]{8})\)", e)
    assert m and m.group(1) == m.group(2), e
if "sniff" in rows:
    assert re.search(r"^capture: 0 x h2's text, 0 x 'lba [0-9a-f]{11}' \(h2 read it: [1-9]\d* x\)",
                     cells["sniff"]["evidence"]), cells["sniff"]
    assert cells["sniff"]["outcome"] == "blocked", cells["sniff"]
if "pool-write" in rows:
    assert cells["pool-write"]["outcome"] == "blocked", cells["pool-write"]
if "exhaust" in rows:
    assert cells["exhaust"]["outcome"] == "blocked" and "legit write+read rc 0" in cells["exhaust"]["evidence"], cells["exhaust"]
if "cm-disconnect" in rows:
    assert cells["cm-disconnect"]["outcome"] == "blocked" and "20 forged DREQs" in cells["cm-disconnect"]["evidence"], cells["cm-disconnect"]
for a in ("mem-access", "cnp", "cm-disconnect-exhaust"):
    assert a not in rows or cells[a]["outcome"] == "not-applicable", cells[a]
if "cnp" in rows:
    assert re.search(r"; [1-9]\d* CNPs to rxe2 QP", cells["cnp"]["evidence"]), cells["cnp"]
PY
[ "$rc" = 0 ] || fail "rdmasec-attack matrix exited $rc"
echo "attack_matrix_blk: ok"
