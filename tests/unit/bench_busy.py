# SPDX-License-Identifier: MIT
"""make bench's storage CPU figure (benchmarks/busy.py): busy ticks between
two instants interpolated from 100 ms samples, the window a program names,
the inner window of a run whose end only is known, and logs with a torn line."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import busy  # noqa: E402

# 10 ticks per 100 ms from t=0 to t=10 s: 100 ticks a second.
STEADY = [(t, t // 10) for t in range(0, 10001, 100)]


class Busy(unittest.TestCase):
    def test_interpolates_between_samples(self):
        self.assertEqual(busy.at(STEADY, 150), 15)
        self.assertEqual(busy.at(STEADY, -5), 0)        # before the first: the first
        self.assertEqual(busy.at(STEADY, 20000), 1000)  # after the last: the last

    def test_named_window(self):
        self.assertAlmostEqual(busy.window_ticks(STEADY, 4, 7000, 3000), 400)

    def test_window_before_the_end_leaves_out_the_last_second(self):
        # Busy only in the run's last second (its teardown): not counted.
        s = [(t, 0 if t <= 9000 else (t - 9000) // 10 * 5) for t in range(0, 10001, 100)]
        self.assertEqual(busy.window_ticks(s, 4, 10000), 0)
        # Steady: the rate over [end-4 s, end-1 s] times 4 s.
        self.assertAlmostEqual(busy.window_ticks(STEADY, 4, 10000), 400)

    def test_refuses_what_it_cannot_measure(self):
        with self.assertRaises(ValueError):
            busy.window_ticks(STEADY[:1], 4, 10000)
        with self.assertRaises(ValueError):
            busy.window_ticks(STEADY, 1, 10000)

    def test_log_lines_cut_short_are_skipped(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("0 0\n100 10\n200\nnot a line\n300 30\n")
        try:
            self.assertEqual(busy.read_log(f.name), [(0, 0), (100, 10), (300, 30)])
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
