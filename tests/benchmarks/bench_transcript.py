"""Transcript costs in one run: append, strict verification, and the unchecked read as the baseline.

    python tests/benchmarks/bench_transcript.py [MESSAGES] [FLOATS_PER_QUERY]

Builds a transcript of query/answer pairs (each query one model of FLOATS_PER_QUERY
float64 scores), then prints per-message append time and the throughput of
``check_transcript`` (every check of ``parley verify``) against
``read_transcript(verify=False)`` (parse and decode only) on the same file.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from parley.parties.transcript import TranscriptWriter, check_transcript, read_transcript
from parley.parties.wire import Identity, Keyring


def main(messages: int = 2000, floats: int = 1000, repeats: int = 3) -> None:
    ids = {name: Identity.generate(name, name) for name in ("compliance", "data-center")}
    ring = Keyring()
    for identity in ids.values():
        ring.add(identity.key_entry())
    rng = np.random.default_rng(0)
    envelopes = []
    for k in range(messages // 2):
        envelopes.append(ids["data-center"].seal("compliance", "metric-query", "raw",
                                                 {"metric": "sp", "predictions": rng.random((1, floats)),
                                                  "query_id": f"q{k}"}))
        envelopes.append(ids["compliance"].seal("data-center", "metric-answer", "raw",
                                                {"metric": "sp", "values": rng.random(1), "query_id": f"q{k}"}))
    path = Path(tempfile.mkdtemp(prefix="parley-bench-")) / "transcript.jsonl"
    append = verify = read = float("inf")
    for _ in range(repeats):
        writer = TranscriptWriter(path, ring, ids)
        started = time.perf_counter()
        for envelope in envelopes:
            writer.append(envelope)
        append = min(append, time.perf_counter() - started)
        writer.close()
        started = time.perf_counter()
        assert check_transcript(path).messages == len(envelopes)
        verify = min(verify, time.perf_counter() - started)
        started = time.perf_counter()
        assert len(read_transcript(path, verify=False)) == len(envelopes)
        read = min(read, time.perf_counter() - started)
    mb = path.stat().st_size / 1e6
    print(f"{len(envelopes)} messages, {mb:.1f} MB: append {1e6 * append / len(envelopes):.0f} us/message; "
          f"verify {mb / verify:.1f} MB/s, unchecked read {mb / read:.1f} MB/s "
          f"(verify takes {verify / read:.2f}x the unchecked read)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
