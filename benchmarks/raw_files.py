# SPDX-License-Identifier: MIT
"""Reading make bench's raw outputs (BUILD/benchmarks/raw): one place for every report."""


def read_text(path):
    """The file's text, or None if it cannot be read (a run that failed left none)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def cpu_seconds(path):
    """A .cpu file's "TICKS HZ" (the guest's busy ticks over a run) in seconds, or None."""
    try:
        ticks, hz = (int(x) for x in (read_text(path) or "").split())
        return ticks / hz
    except ValueError:
        return None
