#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The guest's busy CPU time over a run's counted window (benchmarks/storage.sh).

  busy.py sample LOG             every 100 ms, append "UNIX_MS BUSY_TICKS" to LOG (until killed)
  busy.py window LOG RUNTIME_S END_MS [START_MS]
                                 print "TICKS CLK_TCK": the busy ticks of a window of RUNTIME_S
                                 seconds. With START_MS, the window is [START_MS, END_MS] as the
                                 program said. Without, END_MS is when the program returned: its
                                 window ended at most a second before (closing its session), so
                                 the rate over [END_MS - RUNTIME_S, END_MS - 1 s], inside it
                                 whatever that second was, times RUNTIME_S.

Busy ticks are user + nice + system + irq + softirq + steal of /proc/stat's cpu line: every host
of the fabric shares the guest's one kernel, so both ends and the kernel's work are in them. One
process reading a file every 100 ms costs the guest next to nothing, where a shell loop's forks
would not.
"""
import bisect
import os
import sys
import time


def busy_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7, 8))


def sample(log):
    with open(log, "a") as out:
        while True:
            out.write("%d %d\n" % (time.time() * 1000, busy_ticks()))
            out.flush()
            time.sleep(0.1)


def at(samples, ms):
    """Busy ticks at ms, interpolated between the samples around it."""
    times = [t for t, _ in samples]
    i = bisect.bisect_left(times, ms)
    if i == 0:
        return samples[0][1]
    if i == len(samples):
        return samples[-1][1]
    (t0, b0), (t1, b1) = samples[i - 1], samples[i]
    return b0 + (b1 - b0) * (ms - t0) / (t1 - t0) if t1 > t0 else b1


def read_log(log):
    """The samples of LOG in time order; a line that is not two integers (a write cut short) is skipped."""
    samples = []
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                samples.append((int(parts[0]), int(parts[1])))
    return samples


def window_ticks(samples, runtime_s, end_ms, start_ms=None):
    """The busy ticks of the counted window (see the module's text)."""
    if len(samples) < 2:
        raise ValueError("fewer than two samples")
    if start_ms is not None:
        return at(samples, end_ms) - at(samples, start_ms)
    lo, hi = end_ms - runtime_s * 1000, end_ms - 1000
    if hi <= lo:
        raise ValueError("a window of %s s is too short to leave out its last second" % runtime_s)
    return (at(samples, hi) - at(samples, lo)) * runtime_s * 1000 / (hi - lo)


def window(log, runtime_s, end_ms, start_ms=None):
    try:
        ticks = window_ticks(read_log(log), runtime_s, end_ms, start_ms)
    except ValueError as e:
        sys.exit("busy.py: %s: %s" % (log, e))
    print("%d %d" % (round(ticks), os.sysconf("SC_CLK_TCK")))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sample":
        sample(sys.argv[2])
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "window":
        args = [int(x) for x in sys.argv[3:]]
        window(sys.argv[2], *args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
