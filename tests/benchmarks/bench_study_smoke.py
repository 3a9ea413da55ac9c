"""The catalog study ``smoke`` end to end with 1 and 2 workers, each a fresh process as ``parley study`` is.

Each measurement is one new Python process that does what ``parley study smoke --no-runs --workers N``
does (load the study, start a private Ray, run every row into a fresh folder, write the summary) and
prints its :attr:`~parley.scenarios.study.engine.StudyRun.timeline`. Runs alternate between 1 and 2
workers (``--rounds`` of each), so that a change of load on the machine hits both alike; the medians
are compared. Three ratios, from the widest to the narrowest span:

* ``command``: the whole process, interpreter start to exit (what a user waits for);
* ``study``: :func:`run_study`'s own wall time (Ray start-up included);
* ``after_ray``: from Ray being up to the last row (the part a second worker can share: the workers'
  start-up and the rows), and beside it ``after_ray_ceiling``, the most two perfectly balanced
  workers could gain there given the start-up and row times measured (:func:`two_worker_ceiling`).

Every run's ``results.csv`` must hold the same values (the columns that measure time or name the
node aside): the benchmark stops otherwise. ``--baseline PATH`` runs a source copy of another parley
commit (one that has :attr:`StudyRun.timeline`, e.g. ``git archive 6e73b98 | tar -x -C PATH``) in
the same rounds, alternated with this checkout, and its results must be the same too.

Ray starts its worker processes at nice 15 (``RAY_worker_niceness``), below the study's own driver and
Ray's daemons; ``--worker-niceness 0`` gives them the same priority (Ray reads the variable when the
study starts its instance). On Linux with ``sched_autogroup_enabled = 1`` niceness ranks processes
within their session only, and the kernel shares the CPU between sessions first: while other sessions
run, a study gets its session's share whatever its number of workers (docs/design.md, "Performance").

Run: ``PYTHONPATH=. python tests/benchmarks/bench_study_smoke.py [--rounds 3] [--party-hosts ...]
[--baseline PATH] [--worker-niceness N]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Columns of results.csv that measure time or name where a row ran: they differ between runs.
VOLATILE_COLUMNS = ("node", "cell_wall_s", "wall_s", "attack_decode_s", "solve_s")


def _child(workers: int, out: str, extra: dict[str, Any]) -> None:
    """One measurement (runs in its own process): the study, then its timeline as one JSON line."""
    began = time.time()
    from parley.scenarios.study import Study
    from parley.scenarios.study.engine import run_study

    imported = time.time()
    study = Study.load("smoke")
    done = run_study(study, out, workers=workers, keep_runs=False, progress=False, **extra)
    assert done.failed == 0, done.results[["status", "failure"]]
    print("TIMELINE " + json.dumps({"began": began, "imported": imported - began, "wall_s": done.wall_s,
                                    "timeline": done.timeline}))


def stable_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a results.csv without the columns that vary between runs, sorted by cell and repeat."""
    import pandas as pd

    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    frame = frame.drop(columns=[c for c in VOLATILE_COLUMNS if c in frame.columns])
    frame = frame.astype(object).where(frame.notna(), None)  # NaN != NaN; empty cells compare as None
    return frame.sort_values(["cell", "repeat"]).to_dict("records")


#: This checkout's root (the child processes import parley from here unless given a baseline).
ROOT = Path(__file__).resolve().parents[2]


def _measure(workers: int, extra: dict[str, Any], code: Path,
             niceness: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One study in a fresh process importing parley from ``code``; its summary and its stable rows."""
    with tempfile.TemporaryDirectory() as folder:
        load = os.getloadavg()[0]
        started = time.time()
        env = {**os.environ, "PYTHONPATH": str(code)}  # the Ray workers inherit it and import the same parley
        if niceness is not None:
            env["RAY_worker_niceness"] = str(niceness)
        proc = subprocess.run([sys.executable, __file__, "--child", str(workers), "--out", folder,
                               "--extra", json.dumps(extra)], capture_output=True, text=True, check=False,
                              env=env, cwd=code)
        command = time.time() - started
        if proc.returncode != 0:
            raise SystemExit(f"the study failed:\n{proc.stderr[-3000:]}")
        line = next(x for x in proc.stdout.splitlines() if x.startswith("TIMELINE "))
        record = json.loads(line.removeprefix("TIMELINE "))
        record["command_s"] = round(command, 3)
        record["load"] = load
        return record, stable_rows(Path(folder) / "results.csv")


def fixed_and_row(timeline: dict[str, Any], since: float = 0.0) -> tuple[float, float]:
    """A run's fixed cost per worker and its median row time (rows after each worker's first).

    The fixed cost is the slowest worker's: its time from ``since`` (seconds into :func:`run_study`)
    to ready, plus its first row's time over the median later row (the imports a fresh worker process
    does there).
    """
    workers = list(timeline["workers"].values())
    row = statistics.median(c[3] - c[2] for w in workers for c in w["cells"][1:])
    fixed = max(w["ready"] - since + (w["cells"][0][3] - w["cells"][0][2]) - row for w in workers)
    return fixed, row


def two_worker_ceiling(rows: int, fixed_1: float, row_1: float, fixed_2: float, row_2: float) -> float:
    """The speedup 2 workers could reach over 1 given each one's fixed start-up cost and row time.

    1 worker needs ``fixed_1 + rows * row_1``; 2 perfectly balanced workers, each paying its own
    start-up (it cannot be shared), ``fixed_2 + ceil(rows / 2) * row_2``.
    """
    return round((fixed_1 + rows * row_1) / (fixed_2 + -(-rows // 2) * row_2), 3)


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    timeline = record["timeline"]
    ray_up = timeline["ray_up"]
    workers = timeline["workers"].values()
    first = [min(c[3] - c[2] for c in w["cells"][:1]) for w in workers]
    later = [c[3] - c[2] for w in workers for c in w["cells"][1:]]
    later_cpu = [c[4] for w in workers for c in w["cells"][1:] if len(c) > 4]  # older timelines lack it
    return {"command": record["command_s"], "study": record["wall_s"], "after_ray": timeline["cells_done"] - ray_up,
            "ray_up": ray_up, "imports": record["imported"],
            "worker_ready": max(w["ready"] for w in workers) - ray_up,
            "first_cell": max(first), "later_cell_median": statistics.median(later) if later else 0.0,
            "later_cell_cpu_median": statistics.median(later_cpu) if later_cpu else 0.0,
            "outputs": timeline["outputs_written"] - timeline["cells_done"], "load": record["load"],
            "rows": len(later) + len(first), "fixed_after_ray": fixed_and_row(timeline, since=ray_up)[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--party-hosts", choices=("worker", "actors"), default=None,
                        help="run_study's party_hosts (default: run_study's own default)")
    parser.add_argument("--baseline", help="a source copy of another parley commit, run alternated with this one")
    parser.add_argument("--worker-niceness", type=int, help="RAY_worker_niceness for the studies (Ray's default: 15)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--extra", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.out, json.loads(args.extra))
        return
    extra = {} if args.party_hosts is None else {"party_hosts": args.party_hosts}
    codes = {"this": ROOT, **({"baseline": Path(args.baseline).resolve()} if args.baseline else {})}
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {(code, w): [] for code in codes for w in (1, 2)}
    reference = None
    for _ in range(args.rounds):
        for code, path in codes.items():
            for workers in (1, 2):
                record, rows = _measure(workers, extra if code == "this" else {}, path, args.worker_niceness)
                if reference is None:
                    reference = rows
                elif rows != reference:
                    raise SystemExit(f"results.csv differs ({code}, {workers} workers) from the first run's")
                summary = _summary(record)
                runs[code, workers].append(summary)
                print(f"{code} workers={workers} " + " ".join(f"{k}={v:.2f}" for k, v in summary.items()),
                      file=sys.stderr)
    medians = {key: {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]} for key, rows in runs.items()}
    out: dict[str, Any] = {"benchmark": "study-smoke", "rounds": args.rounds, "party_hosts": args.party_hosts,
                           "worker_niceness": args.worker_niceness, "target_speedup": 1.7}
    for code in codes:
        ratios = {span: round(medians[code, 1][span] / medians[code, 2][span], 3)
                  for span in ("command", "study", "after_ray")}
        one, two = medians[code, 1], medians[code, 2]  # what the workers' own start-up leaves after Ray
        ratios["after_ray_ceiling"] = two_worker_ceiling(int(one["rows"]), one["fixed_after_ray"],
                                                         one["later_cell_median"], two["fixed_after_ray"],
                                                         two["later_cell_median"])
        print(f"{code}: smoke, medians of {args.rounds}: 1 worker {medians[code, 1]}, 2 workers {medians[code, 2]}; "
              f"1/2 = {ratios}", file=sys.stderr)
        out[code] = {"median_1_worker": medians[code, 1], "median_2_workers": medians[code, 2], "speedup": ratios}
    if args.baseline:
        out["baseline_over_this"] = {
            f"{w}_workers_{span}": round(medians["baseline", w][span] / medians["this", w][span], 3)
            for w in (1, 2) for span in ("command", "study", "after_ray")}
        print(f"baseline / this (time): {out['baseline_over_this']}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
