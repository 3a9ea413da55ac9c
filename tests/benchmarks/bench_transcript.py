"""Transcript costs in one run: append, strict verification, and the unchecked read as the baseline.

    python tests/benchmarks/bench_transcript.py [MESSAGES] [FLOATS_PER_QUERY]
    python tests/benchmarks/bench_transcript.py --append [REPEATS]

The second form measures appending one envelope carrying a 3.2 MB array (400 x 1,000 float64;
its bytes go raw to the transcript's blob file) against a binary write of the same array's bytes
to a file, interleaved call by call, and prints the ratio of the medians; its last line is JSON.

Builds a transcript of query/answer pairs (each query one model of FLOATS_PER_QUERY
float64 scores), then prints per-message append time and the throughput of
``check_transcript`` (every check of ``parley verify``) against
``read_transcript(verify=False)`` (parse and decode only) on the same file.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from parley.parties.transcript import TranscriptWriter, blob_path, check_transcript, read_transcript
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
    blobs = blob_path(path)
    mb = (path.stat().st_size + (blobs.stat().st_size if blobs.exists() else 0)) / 1e6  # large arrays: blob file
    print(f"{len(envelopes)} messages, {mb:.1f} MB: append {1e6 * append / len(envelopes):.0f} us/message; "
          f"verify {mb / verify:.1f} MB/s, unchecked read {mb / read:.1f} MB/s "
          f"(verify takes {verify / read:.2f}x the unchecked read)")


def append_ratio(repeats: int = 200) -> dict[str, float]:
    """Median append time of a 3.2 MB envelope against a binary write of its array, interleaved."""
    ids = {name: Identity.generate(name, name) for name in ("compliance", "data-center")}
    ring = Keyring()
    for identity in ids.values():
        ring.add(identity.key_entry())
    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    appended, written = [], []
    for k in range(repeats + 10):
        H = rng.random((400, 1000))  # a fresh array each time, as a run sends
        envelope = ids["data-center"].seal("compliance", "metric-query", "raw",
                                           {"metric": "sp", "predictions": H, "query_id": f"q{k}"})
        # One file each, as small as a run's (the page cache grows alike for both).
        writer = TranscriptWriter(folder / "t.jsonl", ring, ids)
        with (folder / "b.bin").open("wb") as binary:
            started = time.perf_counter()
            binary.write(H.data)
            binary.flush()
            write = time.perf_counter() - started
        started = time.perf_counter()
        writer.append(envelope)
        writer.flush()
        append = time.perf_counter() - started
        writer.abort()
        if k >= 10:  # warm-up
            appended.append(append)
            written.append(write)
    a, w = 1e3 * statistics.median(appended), 1e3 * statistics.median(written)
    print(f"append of a 3.2 MB envelope {a:.3f} ms, binary write of its array {w:.3f} ms: x{a / w:.2f} "
          f"(medians of {repeats}, interleaved)", file=sys.stderr)
    return {"append_ms": round(a, 3), "binary_write_ms": round(w, 3), "ratio": round(a / w, 3), "goal": 1.5}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--append"]:
        result = append_ratio(*(int(a) for a in sys.argv[2:3]))
        print(json.dumps({"benchmark": "transcript-append", **result}))
    else:
        main(*(int(a) for a in sys.argv[1:3]))
