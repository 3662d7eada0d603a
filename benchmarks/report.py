#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench's report: reads what benchmarks/run.sh collected in OUT/raw, prints
one table of ratios (rdmasec / perftest, rdmasec / ucmatose, rdmasec /
openssl speed), and writes it as OUT/results.json and OUT/results.svg.

perftest's and rdmasec-bench's outputs go through the same row parser
(parse_rows): both print perftest's column layout. docs/bench.md explains
how to read the table.

usage: report.py OUT [--check FILE...]
  --check: only parse each FILE's result rows; exit 1 if a file has none or a
  row does not match perftest's layout (tests/fabric/bench.sh uses it).
"""
import html
import json
import math
import os
import re
import sys

from fi_report import fi_rows, print_fi
from raw_files import read_text
from storage_report import print_storage, storage_rows

TESTS = ("send_bw", "write_bw", "write_bw_q4", "read_bw", "send_lat", "write_lat", "read_lat", "sealed_read_lat",
         "sealed_read_bw", "sealed_write_lat")
# rdmasec-bench tests measured against another test's perftest rows.
REFERENCE = {"sealed_read_lat": "read_lat", "sealed_read_bw": "read_bw", "sealed_write_lat": "write_lat"}
AEADS = ("aes-256-gcm", "chacha20-poly1305")
SEAL_SIZES = (64, 4096, 65536)

# perftest's columns (perftest_parameters.h: RESULT_FMT, RESULT_FMT_LAT, RESULT_FMT_LAT_DUR).
LAYOUTS = {
    "bw": ("#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]"),
    "lat": ("#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]",
            "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"),
    "lat_dur": ("#bytes", "#iterations", "t_avg[usec]"),
}
KEYS = {
    "bw": ("bytes", "iters", "bw_peak", "bw_avg", "mpps"),
    "lat": ("bytes", "iters", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p999"),
    "lat_dur": ("bytes", "iters", "t_avg"),
}
# perftest prints -nan for a stdev it could not compute.
NUMBER = r"-?(?:\d+(?:\.\d+)?|nan|inf)"


def header_layout(line):
    """The layout a header line announces, or None."""
    words = line.split()
    for name, cols in LAYOUTS.items():
        if words == " ".join(cols).split():
            return name
    return None


def parse_rows(text):
    """Every result row, as (layout, dict). A line right after a header that is
    not a row of its layout (or the rule) raises ValueError."""
    rows, layout = [], None
    for line in text.splitlines():
        found = header_layout(line)
        if found:
            layout = found
            continue
        if layout is None or line.startswith("---") or not line.strip():
            layout = None if line.startswith("---") else layout
            continue
        fields = line.split()
        n = len(LAYOUTS[layout])
        if len(fields) != n or not all(re.fullmatch(NUMBER, f) for f in fields) or \
                not fields[0].isdigit() or not fields[1].isdigit():
            raise ValueError("not a %s row: %r" % (layout, line))
        rows.append((layout, dict(zip(KEYS[layout], (float(f) for f in fields)))))
    return rows


def row_of(path, size):
    """The row for size in a tool's output (rdmasec-bench prints one per size)."""
    text = read_text(path)
    if text is None:
        return None
    try:
        rows = parse_rows(text)
    except ValueError:
        return None
    return next((r for _, r in rows if r["bytes"] == size), None)


def load_json(path):
    text = read_text(path)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def wall_s(raw, name):
    text = read_text(os.path.join(raw, name + ".wall"))
    return int(text) / 1e9 if text and text.strip().isdigit() else None


# ---- the fabric: perftest against rdmasec-bench ----

def cpu_of(doc, size):
    for r in (doc or {}).get("results", []):
        if r.get("bytes") == size:
            cpu = r.get("cpu", {})
            return (cpu.get("client", {}).get("per_op_us"), cpu.get("server", {}).get("per_op_us"))
    return (None, None)


def finite(row, key):
    v = row and row.get(key)
    return v if v is not None and math.isfinite(v) else None


def fabric_rows(raw, sizes):
    out = []
    for test in TESTS:
        lat = test.endswith("_lat")
        key = "t_typical" if lat else "bw_avg"
        for size, iters in sizes:
            p = row_of(os.path.join(raw, "perftest-%s-%d.txt" % (REFERENCE.get(test, test), size)), size)
            r = row_of(os.path.join(raw, "rdmasec-%s.txt" % test), size)
            if p is None and r is None:
                continue
            doc = load_json(os.path.join(raw, "rdmasec-%s.json" % test))
            client, server = cpu_of(doc, size)
            pv, rv = finite(p, key), finite(r, key)
            out.append({
                "test": test, "bytes": size, "iterations": iters,
                "metric": "t_typical_us" if lat else "bw_avg_mbs",
                "perftest": pv, "rdmasec": rv, "ratio": ratio(rv, pv),
                "perftest_row": p and {k: v if math.isfinite(v) else None for k, v in p.items()},
                "rdmasec_row": r, "rdmasec_poll": (doc or {}).get("poll"),
                "rdmasec_tx_depth": (doc or {}).get("tx_depth"),
                "rdmasec_cpu_per_op_us": {"client": client, "server": server},
            })
    return out


def connect_row(raw, name="connect-rdmasec"):
    doc = load_json(os.path.join(raw, name + ".json"))
    res = (doc or {}).get("results") or [{}]
    n = res[0].get("iterations")
    ucm_ok = "return status 0" in (read_text(os.path.join(raw, "connect-ucmatose.txt")) or "")
    t_r, t_u = wall_s(raw, name), wall_s(raw, "connect-ucmatose")
    rate_r = n / t_r if n and t_r else None
    rate_u = n / t_u if n and t_u and ucm_ok else None
    cpu = res[0].get("cpu", {})
    return {
        "connections": n, "rdmasec_conn_per_s": rate_r, "ucmatose_conn_per_s": rate_u,
        "ratio": ratio(rate_r, rate_u), "rdmasec_wall_s": t_r, "ucmatose_wall_s": t_u,
        "rdmasec_setup_typical_us": res[0].get("t_typical_us"),
        "rdmasec_tls_resumed": res[0].get("tls_resumed"),
        "rdmasec_cpu_per_connection_us": {"client": cpu.get("client", {}).get("per_op_us"),
                                          "server": cpu.get("server", {}).get("per_op_us")},
    }


# ---- natively: sealing against openssl speed ----

def openssl_ns(raw, mode, aead, size):
    """CPU ns per operation from `openssl speed`'s 'Doing ... in T s' line."""
    text = read_text(os.path.join(raw, "openssl-%s-%s-%d.txt" % (mode, aead, size))) or ""
    m = re.search(r"on %d size blocks: (\d+) \S+ in ([\d.]+)s" % size, text)
    return float(m.group(2)) * 1e9 / int(m.group(1)) if m and int(m.group(1)) else None


def seal_rows(raw):
    doc = load_json(os.path.join(raw, "seal.json")) or {}
    out, fits = [], []
    for a in doc.get("aeads", []):
        fits.append({k: a[k] for k in ("aead", "seal_fixed_ns", "seal_per_byte_ns", "open_fixed_ns",
                                        "open_per_byte_ns")})
        for s in a["sizes"]:
            evp, aead = openssl_ns(raw, "evp", a["aead"], s["bytes"]), openssl_ns(raw, "aead", a["aead"], s["bytes"])
            out.append({"aead": a["aead"], "bytes": s["bytes"], "seal_ns": s["seal_ns"], "open_ns": s["open_ns"],
                        "seal_ns_per_byte": s["seal_ns"] / s["bytes"], "openssl_evp_ns": evp,
                        "openssl_aead_ns": aead, "ratio_evp": ratio(s["seal_ns"], evp),
                        "ratio_aead": ratio(s["seal_ns"], aead)})
    return out, fits


# ---- the table ----

def fmt(v, unit="", digits=2):
    if v is None:
        return "n/a"
    return ("%.*f" % (digits, v)) + unit


def print_table(res):
    print("\nrdmasec / perftest on the fabric (soft-RoCE in qemu; client host 2, server host 1)")
    print("bandwidth: BW average; latency: t_typical (median). ratio < 1 for bandwidth and > 1 for latency:"
          " rdmasec slower")
    print("%-10s %8s %6s %14s %14s %9s %12s %12s" % ("test", "bytes", "iters", "perftest", "rdmasec",
                                                     "ratio", "CPU/op cli", "CPU/op srv"))
    busy = False
    for r in res["fabric"]:
        unit = " us" if r["metric"].startswith("t_") else " MB/s"
        cpu = r["rdmasec_cpu_per_op_us"]
        # benchmarks/guest.sh: the client polls as BENCH_POLL says, and so does the server of send; a
        # server of write or read has no completions to poll and sleeps.
        mark = "*" if r["rdmasec_poll"] == "busy" else " "
        smark = mark if r["test"].startswith("send") else " "
        busy = busy or mark == "*"
        print("%-10s %8d %6d %14s %14s %9s %11s%s %11s%s" % (
            r["test"], r["bytes"], r["iterations"], fmt(r["perftest"], unit), fmt(r["rdmasec"], unit),
            fmt(r["ratio"], "", 3), fmt(cpu["client"], " us", 1), mark, fmt(cpu["server"], " us", 1), smark))
    print("  n/a: a run failed or was killed after 180 s, or perftest printed inf; raw outputs in raw/")
    if busy:
        print("  * busy polling (as perftest's): the CPU time is the time spent, not the work done")
    for label, key in (("connect", "connect"), ("conn-full", "connect_full"), ("qp-setup", "qp_setup")):
        c = res[key]
        cpu = c["rdmasec_cpu_per_connection_us"]
        ms = {k: v and v / 1000 for k, v in cpu.items()}
        print("%-10s %8s %6s %14s %14s %9s %12s %12s" % (
            label, "-", c["connections"] or "n/a", fmt(c["ucmatose_conn_per_s"], "/s", 1),
            fmt(c["rdmasec_conn_per_s"], "/s", 1), fmt(c["ratio"], "", 3), fmt(ms["client"], " ms", 1),
            fmt(ms["server"], " ms", 1)))
    c, f = res["connect"], res["connect_full"]
    typ = lambda r: fmt(r["rdmasec_setup_typical_us"] and r["rdmasec_setup_typical_us"] / 1000, " ms", 1)
    print("  connect: ucmatose (rdma_cm) sets its connections up at once, rdmasec-bench one after another,"
          " resuming TLS sessions (%s of %s resumed; typical set-up %s); conn-full: certificates every time"
          " (typical %s); qp-setup: further queue pairs of one connection, no handshake (typical %s);"
          " all rates over the client's wall time" % (
              c["rdmasec_tls_resumed"] if c["rdmasec_tls_resumed"] is not None else "n/a",
              c["connections"] or "n/a", typ(c), typ(f), typ(res["qp_setup"])))
    print("\nsealing, natively (CPU time per message): rdmasec_seal_frame / openssl speed")
    print("%-18s %6s %11s %11s %7s %11s %7s %11s" % ("aead", "bytes", "seal", "-evp", "ratio", "-aead",
                                                     "ratio", "open"))
    for s in res["seal"]:
        print("%-18s %6d %11s %11s %7s %11s %7s %11s" % (
            s["aead"], s["bytes"], fmt(s["seal_ns"], " ns", 1), fmt(s["openssl_evp_ns"], " ns", 1),
            fmt(s["ratio_evp"]), fmt(s["openssl_aead_ns"], " ns", 1), fmt(s["ratio_aead"]),
            fmt(s["open_ns"], " ns", 1)))
    for f in res["seal_fit"]:
        print("  %s: seal %.0f ns per message + %.3f ns per byte; open %.0f ns + %.3f ns per byte" % (
            f["aead"], f["seal_fixed_ns"], f["seal_per_byte_ns"], f["open_fixed_ns"], f["open_per_byte_ns"]))
    if res.get("sealed_transfers"):
        print("\nsealed grants, natively (CPU time per transfer, each end): rsec_sealed_seal / rsec_sealed_open")
        for t in res["sealed_transfers"]:
            print("%-18s %8d  seal %11s (%s/B)  open %11s (%s/B)" % (
                t["aead"], t["bytes"], fmt(t["seal_ns"], " ns", 1), fmt(t["seal_ns"] / t["bytes"], " ns", 3),
                fmt(t["open_ns"], " ns", 1), fmt(t["open_ns"] / t["bytes"], " ns", 3)))


# ---- the picture ----

def el(tag, text=None, **attrs):
    """One SVG element; attribute names use _ for -."""
    a = " ".join('%s="%s"' % (k.replace("_", "-"), html.escape(str(v))) for k, v in attrs.items())
    return "<%s %s/>" % (tag, a) if text is None else "<%s %s>%s</%s>" % (tag, a, html.escape(text), tag)


def size_label(size):
    if size < 1024:
        return "%d B" % size
    return "%d KiB" % (size >> 10) if size < 1 << 20 else "%d MiB" % (size >> 20)


def svg_panel(x0, title, unit, series, sizes):
    """One log-scale chart: a line per (test, tool) over the sizes; perftest dashed."""
    w, h, left, top = 440, 300, 60, 40
    vals = [v for s in series for v in s["values"] if v and math.isfinite(v)]
    if not vals:
        return [el("text", title + ": no data", x=x0 + left, y=60)]
    lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
    hi = max(hi, lo + 1)

    def px(i):
        return round(x0 + left + (i + 0.5) * (w - left - 20) / len(sizes), 1)

    def py(v):
        return round(top + (h - top - 40) * (hi - math.log10(v)) / (hi - lo), 1)

    out = [el("text", title, x=x0 + left, y=20, font_weight="bold")]
    for e in range(lo, hi + 1):
        out.append(el("line", x1=x0 + left, y1=py(10 ** e), x2=x0 + w - 20, y2=py(10 ** e), stroke="#ddd"))
        out.append(el("text", "%g %s" % (10 ** e, unit), x=x0 + left - 4, y=py(10 ** e) + 4, text_anchor="end",
                      font_size=11))
    out += [el("text", size_label(size), x=px(i), y=h - 15, text_anchor="middle", font_size=11)
            for i, size in enumerate(sizes)]
    for j, s in enumerate(series):
        style = {"stroke": s["color"], "stroke_width": 2}
        if s["tool"] == "perftest":
            style["stroke_dasharray"] = "5,4"
        pts = [(px(i), py(v)) for i, v in enumerate(s["values"]) if v and math.isfinite(v)]
        if len(pts) > 1:
            out.append(el("polyline", fill="none", points=" ".join("%s,%s" % p for p in pts), **style))
        out += [el("circle", cx=x, cy=y, r=3, fill=s["color"]) for x, y in pts]
        y = h + 5 + 14 * j
        out.append(el("line", x1=x0 + left, y1=y, x2=x0 + left + 24, y2=y, **style))
        out.append(el("text", "%s %s" % (s["tool"], s["test"]), x=x0 + left + 30, y=y + 4, font_size=11))
    return out


def write_svg(path, res):
    sizes = sorted({r["bytes"] for r in res["fabric"]})
    colors = {"send": "#1f77b4", "write": "#d62728", "read": "#2ca02c", "sealed": "#9467bd"}
    panels = []
    for x0, kind, title, unit in ((0, "_bw", "Bandwidth (BW average)", "MB/s"),
                                  (460, "_lat", "Latency (t_typical)", "us")):
        series = []
        for test in (t for t in TESTS if t.endswith(kind)):
            # A test measured against another's perftest rows draws only its own line.
            for tool in ("rdmasec",) if test in REFERENCE else ("perftest", "rdmasec"):
                by = {r["bytes"]: r[tool] for r in res["fabric"] if r["test"] == test}
                series.append({"test": test, "tool": tool, "color": colors[test.split("_")[0]],
                               "values": [by.get(s) for s in sizes]})
        panels += svg_panel(x0, title, unit, series, sizes)
    with open(path, "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="920" height="400" font-family="sans-serif">\n')
        f.write('<rect width="100%" height="100%" fill="white"/>\n')
        f.write("\n".join(panels))
        f.write("\n</svg>\n")


# ---- main ----

def check(paths):
    ok = True
    for p in paths:
        try:
            rows = parse_rows(read_text(p) or "")
        except ValueError as e:
            print("%s: %s" % (p, e))
            ok = False
            continue
        if not rows:
            print("%s: no result row" % p)
            ok = False
        for layout, r in rows:
            print("%s: %s row, %d bytes, %d iterations" % (p, layout, r["bytes"], r["iters"]))
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 2 and argv[1] == "--check":
        return check(argv[2:])
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = argv[1]
    raw = os.path.join(out, "raw")
    meta = load_json(os.path.join(raw, "meta.json")) or {}
    sizes = [tuple(int(x) for x in p.split(":")) for p in meta.get("sizes", "").split()]
    seal, fits = seal_rows(raw)
    res = {"schema": "rdmasec-bench-report/1", "meta": meta, "fabric": fabric_rows(raw, sizes),
           "connect": connect_row(raw), "connect_full": connect_row(raw, "connect-rdmasec-full"),
           "qp_setup": connect_row(raw, "connect-rdmasec-qp"),
           "seal": seal, "seal_fit": fits,
           "sealed_transfers": (load_json(os.path.join(raw, "seal.json")) or {}).get("sealed_transfers", []),
           "qpn_entropy": (read_text(os.path.join(raw, "qpn-entropy.txt")) or "").splitlines(),
           "storage": storage_rows(raw), "fi": fi_rows(raw)}
    print_table(res)
    print_storage(res["storage"])
    print_fi(res["fi"])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    write_svg(os.path.join(out, "results.svg"), res)
    print("\n%s/results.json, %s/results.svg" % (out, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
