# SPDX-License-Identifier: MIT
# The attack matrix's MPI victims in one 3-host fabric boot: an untouched MPI
# program (tests/fabric/fi_mpi.c victim) under Debian's Open MPI, first over
# libfabric's verbs provider (verbs;ofi_rxm), then over rdmasec's
# (rdmasec;ofi_rxm), attacked by inject, qp-error, cm-disconnect and sniff.
# Against verbs every attack must succeed with evidence (the job broken or its
# QP killed or desynchronised, fi_mpi's text read off the wire); against
# rdmasec every one must be blocked: the forgeries audited by rank 0's
# provider (MAC failure, QP error) and its data path rebuilt, both ranks
# checking every message through the 20 round trips after the attack, no
# rdma_cm to disconnect, no payload byte in clear.
. "$(dirname "$0")/common.bash"

[ -x "$build/fi/fi_mpi" ] && command -v mpirun >/dev/null ||
	fail "build fi_mpi first (missing $build/fi/fi_mpi or mpirun; needs openmpi-bin and libopenmpi-dev)"

run_matrix --attacks inject,qp-error,cm-disconnect,sniff --victims mpi-verbs,mpi-rdmasec

python3 - "$work/m.json" <<'PY' || fail "the MPI victims' outcomes are wrong"
import json, re, sys
d = json.load(open(sys.argv[1]))
cells = {(c["attack"], c["victim"]): c for c in d["cells"]}
assert len(cells) == 8, d["summary"]
def cell(a, v, outcome):
    c = cells[(a, v)]
    assert c["outcome"] == outcome, c
    return c["evidence"]
broken = r"Signal: |exited on signal|corrupted|state ERR|forged SENDs \(INJECTED-BY-ATTACKER\) accepted"
assert re.search(broken, cell("inject", "mpi-verbs", "succeeded")), cells[("inject", "mpi-verbs")]
assert re.search(broken, cell("qp-error", "mpi-verbs", "succeeded")), cells[("qp-error", "mpi-verbs")]
assert re.search(r"after the forged DREQ, rank 0 still running; the job: ", cell("cm-disconnect", "mpi-verbs", "succeeded"))
assert re.match(r"[1-9][0-9]* RoCE packets carry fi_mpi's text in clear", cell("sniff", "mpi-verbs", "succeeded"))
done = r"\[h1\] victim: rank 0: [1-9][0-9]* messages checked; \[h2\] victim: rank 1: [1-9][0-9]* round trips checked, 20 after the attack"
for a, fault in (("inject", r"(mac_failure|seq_violation|protocol_violation) \("), ("qp-error", r"qp_error \(")):
    e = cell(a, "mpi-rdmasec", "blocked")
    assert re.match(done, e) and re.search(r"\[h1 audit\] " + fault, e) and e.endswith("rebuild (ok)"), e
    assert "rebuilt its data path over TLS" in cells[(a, "mpi-rdmasec")]["mechanism"]
assert re.match(done, cell("cm-disconnect", "mpi-rdmasec", "blocked"))
assert cell("sniff", "mpi-rdmasec", "blocked").startswith("0 RoCE packets with fi_mpi's text in clear")
print("matrix (MPI): %s" % ", ".join("%s=%d" % (k, v) for k, v in d["summary"].items() if v))
PY
[ "$rc" = 0 ] || fail "rdmasec-attack matrix exited $rc"
echo "attack_matrix_mpi: ok"
