# SPDX-License-Identifier: MIT
# Every attack row decides against the kernel's NVMe over Fabrics, in one
# 3-host fabric boot: `rdmasec-attack matrix --victims nvmf` (target on host
# 1, host on host 2 with fio writing and verifying, attacker host 3): the
# rows every victim has, then the NVMe-oF rows of their own (NeVerMore's
# victim, issue 23).
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
#  - mem-access: not-applicable, with what rdma(8) showed;
#  - spoof-request must rewrite a block of the target's backing store past
#    fio's region with the attacker's bytes: the cell reads the block before
#    and after (O_DIRECT) and reports both hashes; this test checks the
#    "after" one against the attacker's 512 bytes computed here, and that the
#    "before" one differs;
#  - spoof-response with the host's kernel line, cnp not-applicable on rxe (no
#    congestion control), the disconnect with exhaustion with the host's lines
#    and the time without I/O;
#  - pool-write (forged RDMA WRITEs into a host READ buffer whose RETH was
#    read off the wire): succeeded with what the host showed: fio's verify
#    error (its buffer overwritten), its kernel line (measured: the key died
#    with its command, rxe failed the QP, error recovery) or the QP in ERR.
# RSEC_MATRIX_CELL_TIMEOUT (default 360 s: a loaded 2-core machine takes a
# minute to bring NVMe-oF up in a cell) bounds each cell; RSEC_MATRIX_KEEP=1
# keeps the cells' logs (the path is printed).
. "$(dirname "$0")/common.bash"

run_matrix --attacks inject,impersonate,qp-error,mem-access,exhaust,cm-disconnect,sniff,spoof-request,spoof-response,pool-write,cnp,cm-disconnect-exhaust \
	--victims nvmf --cell-timeout "${RSEC_MATRIX_CELL_TIMEOUT:-360}" ${RSEC_MATRIX_KEEP:+--keep}

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
matrix_rc=$rc

# The attacker's block: spoof-request.sh's default pattern repeated to 512 bytes.
pat='NVMF-SPOOFED-BY-RDMASEC-ATTACK '
while [ ${#pat} -lt 512 ]; do pat=$pat$pat; done
want=$(printf '%s' "${pat:0:512}" | sha256sum | cut -c1-8)

python3 - "$work/m.json" "$want" <<'PY' || fail "the NVMe-oF rows did not decide as expected"
import json, re, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2]
rows = ["spoof-request", "spoof-response", "pool-write", "cnp", "cm-disconnect-exhaust"]
cells = {c["attack"]: c for c in d["cells"] if c["attack"] in rows}
assert sorted(cells) == sorted(rows), cells
for c in d["cells"]:
    assert c["victim"] == "nvmf" and c["outcome"] != "error" and c["evidence"], c
c = cells["spoof-request"]
m = re.search(r"block (\d+): attacker's bytes \(sha ([0-9a-f]{8}), was ([0-9a-f]{8})\)", c["evidence"])
assert c["outcome"] == "succeeded" and m, c
assert m.group(2) == want and m.group(3) != want, (want, c)
c = cells["spoof-response"]
assert c["outcome"] == "succeeded" and "[h2] " in c["evidence"], c
c = cells["pool-write"]
assert c["outcome"] == "succeeded" and re.match(r"(\[h2\] |fio: |\[rdma res\] rxe2 QP)", c["evidence"]), c
assert re.search(r"WRITEs at h2 QP 0x[0-9a-f]+ rkey 0x[0-9a-f]+", c["evidence"]), c
c = cells["cnp"]
assert c["outcome"] == "not-applicable" and "no congestion control" in c["mechanism"], c
assert re.search(r"\d+ CNPs to rxe2 QP 0x[0-9a-f]+ .*QP still RTS", c["evidence"]), c
c = cells["cm-disconnect-exhaust"]
assert c["outcome"] in ("succeeded", "blocked") and "[h2] " in c["evidence"], c
assert re.search(r"without I/O after the DREQ [0-9.]+ s", c["evidence"]), c
PY
[ "$matrix_rc" = 0 ] || fail "rdmasec-attack matrix exited $matrix_rc"
echo "attack_matrix_nvmf: ok"
