# SPDX-License-Identifier: MIT
"""make bench's libfabric report (benchmarks/fi_report.py): fi_pingpong's and
fi_mpi's lines and the floor's latency rows (ib_send_lat, rdmasec-bench) parsed
as the programs print them, malformed ones refused, and
rows built from a raw directory: medians over rounds, ratios rdmasec / verbs,
n/a where a provider did not run."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import fi_report  # noqa: E402

PP = """bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
64      2k      =2k      250k        1.70s      0.15     424.06       0.00
4k      1k      =1k      7.8m        2.70s      3.04    1348.80       0.00
"""

# ib_send_lat's table (rdmasec-bench prints the same columns).
LAT = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]
 64      5000          31.99          1656.53      38.42            48.50         75.87
---------------------------------------------------------------------------------------
"""


def mpi(size, mb_s, lat, cpu, iters=200):
    return "noise\nlat %d %.1f\nbw %d %.2f %d\ncpu %d %.1f\n" % (size, lat, size, mb_s, iters, size, cpu)


class Parsers(unittest.TestCase):
    def test_pp_count(self):
        self.assertEqual(fi_report.pp_count("3"), 3)
        self.assertEqual(fi_report.pp_count("2k"), 2000)
        self.assertEqual(fi_report.pp_count("1m"), 1000000)
        for bad in ("", "k", "2x", "-1", "1.5k"):
            self.assertIsNone(fi_report.pp_count(bad), bad)

    def test_pp_rows(self):
        self.assertEqual(fi_report.parse_pp(PP, 64), (2000, 0.15, 424.06))
        self.assertEqual(fi_report.parse_pp(PP, 4096), (1000, 3.04, 1348.80))
        self.assertIsNone(fi_report.parse_pp(PP, 65536))
        self.assertIsNone(fi_report.parse_pp("64 2k =3k 250k 1.70s 0.15 424.06 0.00", 64))  # acks differ
        self.assertIsNone(fi_report.parse_pp("64 2k =2k 250k 1.70s x 424.06 0.00", 64))
        self.assertIsNone(fi_report.parse_pp(None, 64))

    def test_mpi_lines(self):
        self.assertEqual(fi_report.parse_mpi(mpi(64, 0.33, 122.6, 310.0), 64), (200, 0.33, 122.6, 310.0))
        self.assertIsNone(fi_report.parse_mpi(mpi(64, 0.33, 122.6, 310.0), 4096))
        self.assertIsNone(fi_report.parse_mpi("lat 64 1.0\nbw 64 2.0 10\n", 64))  # no cpu line
        self.assertIsNone(fi_report.parse_mpi(None, 64))

    def test_lat_rows(self):
        self.assertEqual(fi_report.parse_lat(LAT, 64), (5000, None, 38.42))
        self.assertIsNone(fi_report.parse_lat(LAT, 4096))
        self.assertIsNone(fi_report.parse_lat(" 64 5000 31.99 1656.53 x 48.50", 64))
        self.assertIsNone(fi_report.parse_lat(None, 64))


class Rows(unittest.TestCase):
    def test_medians_and_ratios(self):
        with tempfile.TemporaryDirectory() as raw:
            d = os.path.join(raw, "fi")
            os.mkdir(d)
            for r, (v, s) in enumerate([((1.0, 100.0), (0.5, 300.0)), ((3.0, 50.0), (0.9, 200.0)),
                                         ((2.0, 80.0), (0.1, 900.0))], 1):
                for prov, (mb, lat) in (("verbs", v), ("rdmasec", s)):
                    with open(os.path.join(d, "mpi-%s-64-r%d.txt" % (prov, r)), "w") as f:
                        f.write(mpi(64, mb, lat, 10.0 * r))
            with open(os.path.join(d, "pp-rdmasec-64-r1.txt"), "w") as f:
                f.write(PP)
            for prov, text in (("verbs", LAT), ("rdmasec", LAT.replace("38.42", "96.10"))):
                with open(os.path.join(d, "lat-%s-64-r1.txt" % prov), "w") as f:
                    f.write(text)
            rows = {(x["program"], x["bytes"]): x for x in fi_report.fi_rows(raw)}
        m = rows[("mpi", 64)]
        self.assertEqual(m["rounds"], 3)
        self.assertEqual(m["verbs"], {"mb_s": 2.0, "lat_us": 80.0, "cpu_per_op_us": 20.0})
        self.assertEqual(m["rdmasec"]["mb_s"], 0.5)
        self.assertAlmostEqual(m["bw_ratio"], 0.25)
        self.assertAlmostEqual(m["lat_ratio"], 300.0 / 80.0)
        p = rows[("pp", 64)]
        self.assertEqual(p["rdmasec"]["mb_s"], 0.15)
        self.assertIsNone(p["verbs"]["mb_s"])
        self.assertIsNone(p["bw_ratio"])
        f = rows[("lat", 64)]
        self.assertEqual(f["verbs"], {"mb_s": None, "lat_us": 38.42, "cpu_per_op_us": None})
        self.assertAlmostEqual(f["lat_ratio"], 96.10 / 38.42)
        self.assertIsNone(f["bw_ratio"])

    def test_no_raw(self):
        with tempfile.TemporaryDirectory() as raw:
            self.assertEqual(fi_report.fi_rows(raw), [])


if __name__ == "__main__":
    unittest.main()
