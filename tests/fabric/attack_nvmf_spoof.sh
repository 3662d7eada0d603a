# SPDX-License-Identifier: MIT
# NeVerMore's own victim (issue 23): the kernel's NVMe-oF target (host 1) and
# host (host 2, fio writing and verifying), attacked from host 3 by the
# NVMe-oF rows of the matrix, one boot. spoof-request must rewrite a block of
# the target's backing store past fio's region with the attacker's bytes:
# the cell reads the block before and after (O_DIRECT) and reports both
# hashes; this test checks the "after" one against the attacker's 512 bytes
# computed here, and that the "before" one differs. Every other row must
# decide with evidence (never error): spoof-response with the host's kernel
# line, cnp not-applicable on rxe (no congestion control), the disconnect
# with exhaustion with the host's lines and the time without I/O.
. "$(dirname "$0")/common.bash"

rows=spoof-request,spoof-response,cnp,cm-disconnect-exhaust
# A loaded 2-core machine takes a minute to bring NVMe-oF up in a cell.
run_matrix --attacks "$rows" --victims nvmf --cell-timeout 360

# The attacker's block: spoof-request.sh's default pattern repeated to 512 bytes.
pat='NVMF-SPOOFED-BY-RDMASEC-ATTACK '
while [ ${#pat} -lt 512 ]; do pat=$pat$pat; done
want=$(printf '%s' "${pat:0:512}" | sha256sum | cut -c1-8)

python3 - "$work/m.json" "$want" <<'PY' || fail "the NVMe-oF rows did not decide as expected"
import json, re, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2]
cells = {c["attack"]: c for c in d["cells"]}
assert sorted(cells) == sorted(["spoof-request", "spoof-response", "cnp", "cm-disconnect-exhaust"]), cells
for c in d["cells"]:
    assert c["victim"] == "nvmf" and c["outcome"] != "error" and c["evidence"], c
c = cells["spoof-request"]
m = re.search(r"block (\d+): attacker's bytes \(sha ([0-9a-f]{8}), was ([0-9a-f]{8})\)", c["evidence"])
assert c["outcome"] == "succeeded" and m, c
assert m.group(2) == want and m.group(3) != want, (want, c)
c = cells["spoof-response"]
assert c["outcome"] == "succeeded" and "[h2] " in c["evidence"], c
c = cells["cnp"]
assert c["outcome"] == "not-applicable" and "no congestion control" in c["mechanism"], c
assert re.search(r"\d+ CNPs to rxe2 QP 0x[0-9a-f]+ .*QP still RTS", c["evidence"]), c
c = cells["cm-disconnect-exhaust"]
assert c["outcome"] in ("succeeded", "blocked") and "[h2] " in c["evidence"], c
assert re.search(r"without I/O after the DREQ [0-9.]+ s", c["evidence"]), c
PY
echo "attack_nvmf_spoof: ok"
