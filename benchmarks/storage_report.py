# SPDX-License-Identifier: MIT
"""make bench's storage rows (benchmarks/storage.sh wrote RAW/storage): the kernel's
NVMe-oF (fio, libaio) against rdmasec-blk's direct client and fio through
nbdkit. Each figure is the median of the rounds; ratios are rdmasec-blk /
kernel. CPU per I/O is the guest's busy time over a run (every host shares one
kernel: both ends, the kernel target's work included) divided by the I/Os
completed."""
import json
import os
import re
import statistics

from raw_files import cpu_seconds, read_text

SYSTEMS = ("nvmf", "blk", "nbd", "blkold", "nbdold")  # *old: BENCH_STORAGE_OLD's, when they ran
OPTIONAL = ("blkold", "nbdold")
WORKLOADS = ("randread-4k-qd1", "randread-4k-qd32", "randwrite-4k-qd1", "randwrite-4k-qd32", "read-128k-qd16",
             "write-128k-qd16")


def _load(path):
    """A JSON document, after whatever a program printed before it (fio's nbd engine says it connected)."""
    text = read_text(path)
    try:
        return json.loads(text[text.index("{"):]) if text else None
    except ValueError:
        return None


def _direction(workload):
    return "write" if "write" in workload else "read"


def _from_fio(doc, direction):
    """fio's JSON (one job): I/Os, IOPS, bytes/s, completion latency p50/p99 in us."""
    try:
        d = doc["jobs"][0][direction]
        pct = d["clat_ns"].get("percentile", {})
        return {"ios": d["total_ios"], "iops": d["iops"], "bw": d["bw_bytes"],
                "p50": pct.get("50.000000", 0) / 1000, "p99": pct.get("99.000000", 0) / 1000,
                "errors": doc["jobs"][0].get("error", 0)}
    except (KeyError, IndexError, TypeError):
        return None


def _from_blk(doc, direction):
    """rdmasec-blk bench --json."""
    try:
        d = doc[direction]
        return {"ios": d["ios"], "iops": d["iops"], "bw": d["bw_bytes"], "p50": d["clat_us"]["p50"],
                "p99": d["clat_us"]["p99"], "errors": doc.get("errors", 0),
                "client_cpu_us": doc.get("cpu", {}).get("us_per_io")}
    except (KeyError, TypeError):
        return None


def _run(raw, system, workload, rnd):
    base = os.path.join(raw, "storage", "%s-%s-r%d" % (system, workload, rnd))
    doc = _load(base + ".json")
    if doc is None:
        return None
    r = (_from_blk if system.startswith("blk") else _from_fio)(doc, _direction(workload))
    if r is None or not r["ios"]:
        return None
    cpu = cpu_seconds(base + ".cpu")
    r["cpu_us_per_io"] = cpu * 1e6 / r["ios"] if cpu is not None else None
    return r


def _median(runs, key):
    vals = [r[key] for r in runs if r is not None and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def _ratio(a, b):
    return a / b if a is not None and b else None


def storage_rows(raw):
    """One row per workload: each system's medians, and the ratios to the kernel's."""
    d = os.path.join(raw, "storage")
    if not os.path.isdir(d):
        return []
    rounds = sorted({int(m.group(1)) for f in os.listdir(d) for m in [re.search(r"-r(\d+)\.json$", f)] if m})
    rows = []
    systems = [s for s in SYSTEMS if s not in OPTIONAL or any(f.startswith(s + "-") for f in os.listdir(d))]
    names = os.listdir(d)
    for w in WORKLOADS:
        if not any(f.startswith("%s-%s-r" % (s, w)) for f in names for s in systems):
            continue  # not among the rows asked for (BENCH_STORAGE_ROWS)
        row = {"workload": w, "rounds": len(rounds), "systems": systems}
        for s in systems:
            runs = [_run(raw, s, w, n) for n in rounds]
            row[s] = {k: _median(runs, k) for k in ("iops", "bw", "p50", "p99", "cpu_us_per_io", "client_cpu_us")}
            row[s]["failed_runs"] = sum(1 for r in runs if r is None or r["errors"])
        for s in systems[1:]:
            row[s]["iops_ratio"] = _ratio(row[s]["iops"], row["nvmf"]["iops"])
            row[s]["bw_ratio"] = _ratio(row[s]["bw"], row["nvmf"]["bw"])
            row[s]["p50_ratio"] = _ratio(row[s]["p50"], row["nvmf"]["p50"])
        rows.append(row)
    return rows


def _f(v, digits=0):
    return "n/a" if v is None else "%.*f" % (digits, v)


def print_storage(rows):
    if not rows:
        return
    print("\nstorage on the fabric: rdmasec-blk against the kernel's NVMe-oF (nvme-rdma), same hosts and RAM disk;"
          " medians of %d interleaved rounds" % rows[0]["rounds"])
    print("%-18s %-5s %9s %9s %9s %9s %8s %8s %10s" % ("workload", "sys", "IOPS", "MB/s", "p50 us", "p99 us",
                                                      "xIOPS", "xp50", "CPU/IO us"))
    for r in rows:
        for s in r["systems"]:
            x = r[s]
            print("%-18s %-5s %9s %9s %9s %9s %8s %8s %10s%s" % (
                r["workload"] if s == "nvmf" else "", s, _f(x["iops"]), _f(x["bw"] and x["bw"] / 1e6, 1),
                _f(x["p50"]), _f(x["p99"]), _f(x.get("iops_ratio"), 2), _f(x.get("p50_ratio"), 2),
                _f(x["cpu_us_per_io"], 1), "  (%d runs failed)" % x["failed_runs"] if x["failed_runs"] else ""))
    print("  nvmf: fio libaio on /dev/nvmeXnY; blk: rdmasec-blk bench (direct client); nbd: fio's nbd engine through"
          " nbdkit-rdmasec-plugin. xIOPS, xp50: / nvmf. Goals: direct 4k IOPS >= 0.8x, 128k MB/s >= 0.7x,"
          " p50 at depth 1 <= 1.3x; nbd 4k depth 32 >= 0.6x. CPU/IO: the whole guest's busy time per I/O (both ends)")
    if rows and "blkold" in rows[0]["systems"]:
        print("  blkold: the direct client and target of BENCH_STORAGE_OLD (an older build), in the same rounds")
    if rows and "nbdold" in rows[0]["systems"]:
        print("  nbdold: fio's nbd engine through BENCH_STORAGE_OLD's plugin and target, in the same rounds")
