# SPDX-License-Identifier: MIT
# Every existing attack row decides against the kernel's NVMe over Fabrics,
# in one 3-host fabric boot: `rdmasec-attack matrix --victims nvmf` (target
# on host 1, host on host 2 with fio writing and verifying, attacker host 3).
# The NVMe-oF rows of their own (spoof-request, spoof-response, cnp,
# cm-disconnect-exhaust) are attack_nvmf_spoof.sh's.
# No cell may end in `error` or stay "not run", and the JSON names each
# cell's evidence; the rows with a fixed expectation must show it:
#  - inject: the target's kernel took the forged SEND at the I/O queue's PSN
#    ("capsule size less than 64 bytes") and the host recovered;
#  - qp-error, impersonate (user nobody on host 2, through rxe2's verbs): the
#    bogus-rkey WRITE at the PSN broke the target's QP (its kernel logged it,
#    or rdma res showed it in ERR, or torn down while the host recovered);
#  - cm-disconnect: the host began error recovery on the forged DREQ while
#    the target had logged nothing;
#  - sniff: the observer found a block's text in clear;
#  - mem-access: not-applicable, with what rdma(8) showed.
# RSEC_MATRIX_CELL_TIMEOUT (default: the matrix's, at least 300 s for nvmf)
# bounds each cell; RSEC_MATRIX_KEEP=1 keeps the cells' logs (the path is printed).
. "$(dirname "$0")/common.bash"

run_matrix --attacks inject,impersonate,qp-error,mem-access,exhaust,cm-disconnect,sniff --victims nvmf \
	${RSEC_MATRIX_CELL_TIMEOUT:+--cell-timeout "$RSEC_MATRIX_CELL_TIMEOUT"} ${RSEC_MATRIX_KEEP:+--keep}

python3 - "$work/m.json" <<'PY' || fail "an nvmf cell did not decide as expected"
import json, re, sys
d = json.load(open(sys.argv[1]))
cells = {c["attack"]: c for c in d["cells"] if c["victim"] == "nvmf"}
for c in d["cells"]:
    print("%s x %s: %s: %s" % (c["attack"], c["victim"], c["outcome"], c["evidence"]))
rows = {"inject", "impersonate", "qp-error", "mem-access", "exhaust", "cm-disconnect", "sniff"}
assert rows <= set(cells), "missing cells: %s" % (rows - set(cells))
for a, c in cells.items():
    assert c["outcome"] in ("succeeded", "blocked", "detected", "not-applicable"), c
    assert c["evidence"].strip(), c
    assert c["outcome"] not in ("blocked", "detected", "not-applicable") or c["mechanism"].strip(), c
recovered = r"\[h2\] nvme\d+: (starting error recovery|Reconnecting)"
e = cells["inject"]["evidence"]
assert cells["inject"]["outcome"] == "succeeded" and "[h1] nvmet_rdma: Ctrl Fatal Error: capsule size less than 64 bytes" in e, e
assert re.search(recovered, e), e
# A bogus rkey breaks the target's QP silently (rdma res shows ERR); the host
# notices late, when its retries or an I/O timeout run out.
for a in ("qp-error", "impersonate"):
    e = cells[a]["evidence"]
    assert cells[a]["outcome"] == "succeeded", (a, e)
    assert re.search(r"^\[h1\] (nvmet|rdma res: rxe1 QP 0x[0-9a-f]+ \(\[rdma_cm\]\) (state ERR|torn down by the target))", e), (a, e)
e = cells["cm-disconnect"]["evidence"]
assert cells["cm-disconnect"]["outcome"] == "succeeded" and re.search(r"^forged DREQ to host 2: " + recovered, e), e
assert "[h1] had logged no error before" in e, e
e = cells["sniff"]["evidence"]
assert cells["sniff"]["outcome"] == "succeeded" and re.search(r'h2 wrote LBA \d+ \([1-9]\d* x "NVMF-BLOCK', e), e
e = cells["mem-access"]
assert e["outcome"] == "not-applicable" and "[rdma res]" in e["evidence"], e
PY
[ "$rc" = 0 ] || fail "rdmasec-attack matrix exited $rc"
echo "attack_matrix_nvmf: ok"
