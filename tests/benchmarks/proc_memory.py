"""Memory of this benchmark's own processes, read from ``/proc`` (Linux; no psutil needed).

``tree_pss_bytes`` sums the proportional set size (shared pages split between their sharers) over a
process and its descendants: the benchmark and the Ray instance or solver processes it started,
never another user's processes. :class:`PeakSampler` keeps the peak of it while a block runs.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import TracebackType

__all__ = ["PeakSampler", "driver_rss_bytes", "tree_pss_bytes"]

MIB = 1 << 20


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (the children file of each of its threads)."""
    kids: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # ended meanwhile
        return kids
    for task in tasks:
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def tree_pss_bytes(root: int | None = None) -> int:
    """Proportional set size summed over ``root`` (default: this process) and its descendants."""
    total, todo, seen = 0, [os.getpid() if root is None else root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except OSError:  # ended meanwhile, or not ours to read
            continue
        todo += _children(pid)
    return total


def driver_rss_bytes() -> int:
    """Resident set size of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakSampler:
    """Peak of :func:`tree_pss_bytes` of this process tree while the ``with`` block runs (sampled every ``every_s``).

    Sampling is not free: a sample reads ``smaps_rollup`` of every process and the children of every
    thread (about 13 ms for a Ray run's 11 processes and 215 threads, against 1.5 ms for one process),
    and on a busy machine that time is taken from the run it measures. ``cpu_s`` is the CPU time the
    sampling thread used (the kernel's included), so a benchmark can print what it cost.
    """

    def __init__(self, every_s: float = 0.25) -> None:
        self.every_s = every_s
        self.start = self.peak = 0
        self.cpu_s = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.wait(self.every_s):
            self.peak = max(self.peak, tree_pss_bytes())
        self.cpu_s = time.thread_time()

    def __enter__(self) -> PeakSampler:
        self.start = self.peak = tree_pss_bytes()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, tree_pss_bytes())
