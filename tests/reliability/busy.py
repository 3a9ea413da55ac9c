"""Keep one core busy for a bounded time: the load the fault campaign is proved under.

Usage: ``python tests/reliability/busy.py SECONDS`` (start one per core, in the background).
"""

from __future__ import annotations

import sys
import time


def spin(seconds: float) -> int:
    """Run an integer recurrence until ``seconds`` have passed; returns its last value."""
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


if __name__ == "__main__":
    spin(float(sys.argv[1]))
