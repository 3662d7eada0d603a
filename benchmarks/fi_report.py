# SPDX-License-Identifier: MIT
"""make bench's libfabric rows (benchmarks/fi.sh wrote RAW/fi): fi_pingpong over
libfabric's verbs provider against rdmasec's, and an MPI ping-pong
(tests/fabric/fi_mpi.c, Open MPI's ofi MTL over PROVIDER;ofi_rxm). Each figure
is the median of the rounds; ratios are rdmasec / verbs. CPU per message:
fi_mpi's own figure (both ranks' CPU time over the timed part, getrusage);
for fi_pingpong, the guest's busy time over a run (both ends share one
kernel) less that of the round's one-round-trip run of the same program and
provider (start-up and connection set-up), divided by the messages sent.
The lat rows are the floor under both: ib_send_lat (plain verbs) in the verbs
column, rdmasec-bench's sealed send latency (librdmasec, no libfabric) in the
rdmasec column."""
import os
import re
import statistics

from raw_files import cpu_seconds, read_text

PROVIDERS = ("verbs", "rdmasec")
PROGRAMS = ("pp", "mpi", "lat")


def pp_label(size):
    """How fi_pingpong writes a size: 64, 4k, 1m."""
    for shift, unit in ((20, "m"), (10, "k")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d%s" % (size >> shift, unit)
    return str(size)


def pp_count(text):
    """fi_pingpong's count: 3, 2k (2000), 1m; None if not one."""
    m = re.fullmatch(r"(\d+)([km]?)", text)
    return int(m.group(1)) * {"": 1, "k": 1000, "m": 1000000}[m.group(2)] if m else None


def parse_pp(text, size):
    """fi_pingpong's row for SIZE: (iterations, MB/s, one-way usec), or None.
    Columns: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec."""
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) == 8 and f[0] == pp_label(size) and pp_count(f[1]) and f[2] == "=" + f[1]:
            try:
                return pp_count(f[1]), float(f[5]), float(f[6])
            except ValueError:
                return None
    return None


def parse_mpi(text, size):
    """fi_mpi bench's lines for SIZE: (iterations, MB/s, one-way usec, CPU us per message), or None."""
    lat = re.search(r"^lat %d ([0-9.]+)$" % size, text or "", re.M)
    bw = re.search(r"^bw %d ([0-9.]+) (\d+)$" % size, text or "", re.M)
    cpu = re.search(r"^cpu %d ([0-9.]+)$" % size, text or "", re.M)
    if not (lat and bw and cpu):
        return None
    return int(bw.group(2)), float(bw.group(1)), float(lat.group(1)), float(cpu.group(1))


def parse_lat(text, size):
    """perftest's latency row for SIZE, as ib_send_lat and rdmasec-bench print it
    (#bytes #iterations t_min t_max t_typical ...): (iterations, None, t_typical), or None."""
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] == str(size) and f[1].isdigit():
            try:
                return int(f[1]), None, float(f[4])
            except ValueError:
                return None
    return None


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _one(raw, prog, prov, size, r):
    """(MB/s, usec, CPU us per message) of one run; Nones where it failed."""
    base = os.path.join(raw, "fi", "%s-%s" % (prog, prov))
    path = "%s-%d-r%d.txt" % (base, size, r)
    got = {"pp": parse_pp, "mpi": parse_mpi, "lat": parse_lat}[prog](read_text(path), size)
    if not got:
        return None, None, None
    if prog == "lat":  # latency only; both spin, so CPU follows the wall time
        return None, got[2], None
    if prog == "mpi":  # fi_mpi measures its ranks' own CPU time over the timed part
        return got[1], got[2], got[3]
    # fi_pingpong: a message each way per iteration; the guest's busy time less the start-up run's.
    cpu, start = cpu_seconds(path + ".cpu"), cpu_seconds("%s-base-r%d.txt.cpu" % (base, r))
    per_msg = (cpu - start) / (2 * got[0]) * 1e6 if cpu is not None and start is not None else None
    return got[1], got[2], per_msg


def fi_rows(raw):
    """One row per program and size that ran: medians per provider, ratios."""
    d = os.path.join(raw, "fi")
    if not os.path.isdir(d):
        return []
    runs = {}
    for name in os.listdir(d):
        m = re.fullmatch(r"(pp|mpi|lat)-(verbs|rdmasec)-(\d+)-r(\d+)\.txt", name)
        if m:
            runs.setdefault((m.group(1), int(m.group(3))), set()).add(int(m.group(4)))
    rows = []
    for prog in PROGRAMS:
        for size in sorted(s for p, s in runs if p == prog):
            rounds = sorted(runs[(prog, size)])
            row = {"program": prog, "bytes": size, "rounds": len(rounds)}
            for prov in PROVIDERS:
                got = [_one(raw, prog, prov, size, r) for r in rounds]
                row[prov] = {"mb_s": _median(g[0] for g in got), "lat_us": _median(g[1] for g in got),
                             "cpu_per_op_us": _median(g[2] for g in got)}
            v, s = row["verbs"], row["rdmasec"]
            row["bw_ratio"] = s["mb_s"] / v["mb_s"] if s["mb_s"] and v["mb_s"] else None
            row["lat_ratio"] = s["lat_us"] / v["lat_us"] if s["lat_us"] and v["lat_us"] else None
            rows.append(row)
    return rows


def print_fi(rows):
    if not rows:
        return
    print("\nlibfabric: rdmasec's provider / libfabric's verbs provider, same programs, same boot"
          " (medians of the rounds)")
    print("pp: fi_pingpong -e msg; mpi: fi_mpi under Open MPI, ofi MTL over PROVIDER;ofi_rxm; lat: the floor,"
          " no libfabric: ib_send_lat | rdmasec-bench --op send --lat. Goal: bandwidth >= 0.9, latency <= 1.3")
    print("%-4s %8s %11s %11s %6s %10s %10s %6s %11s %11s" % (
        "prog", "bytes", "verbs MB/s", "rdmasec", "ratio", "verbs us", "rdmasec", "ratio", "CPU/msg vrb",
        "CPU/msg rsec"))

    def f(v, d=2):
        return "n/a" if v is None else "%.*f" % (d, v)

    for r in rows:
        v, s = r["verbs"], r["rdmasec"]
        print("%-4s %8d %11s %11s %6s %10s %10s %6s %11s %11s" % (
            r["program"], r["bytes"], f(v["mb_s"]), f(s["mb_s"]), f(r["bw_ratio"]), f(v["lat_us"], 1),
            f(s["lat_us"], 1), f(r["lat_ratio"]), f(v["cpu_per_op_us"], 0) + " us", f(s["cpu_per_op_us"], 0) + " us"))
    print("  latency: one way (fi_pingpong's usec/xfer; fi_mpi's median round trip / 2); CPU per message:"
          " both ends, start-up subtracted (n/a: a run failed; raw outputs in raw/fi/)")
    print("  pp over verbs is not run: fi_pingpong takes no source address, and without one rdma_cm resolves"
          " a destination on the fabric's one kernel to loopback")
