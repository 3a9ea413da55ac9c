"""Study engine: speedup of 2 workers over 1, a worker's start-up, and the per-cell overhead of the engine.

* speedup: one grid of 16 Adult cells whose base model is gradient boosting on
  ~42,000 rows (a few seconds of work per cell, like the cells of a real study)
  run with 1 worker, then with 2, each into a fresh folder; ratio of wall times
  (median over ``--rounds`` alternated pairs). Ray is started once, before all.
  The same ratio for the light grid (logistic regression, well under a second per
  cell) is printed too: there the workers' start-up weighs more. With each ratio, the
  ceiling that start-up leaves (:func:`_ceiling`): the ratio two perfectly balanced
  workers would reach with the fixed cost per worker and the row times the same pair of
  runs measured, nothing else counted. Both with the
  party hosts inside the study workers (``party_hosts="worker"``, the default) and,
  as the baseline, in party host actors of their own (``party_hosts="actors"``).
* worker start-up: from :func:`run_study`'s start to the moment the last worker is
  ready (:attr:`StudyRun.timeline`, Ray already up), and the first row's extra time
  over the median row (the imports a fresh worker process does in its first cell).
* per-cell overhead: tiny synthetic cells (one query each) through the study
  engine with 1 worker: the median cell time inside the engine minus the same
  cell run in-process in this driver, with the parties inside the worker, in
  party host actors reused across cells, and in fresh actors per cell.

Every grid's ``results.csv`` must hold the same values whatever the worker count and
the party hosts (the columns that measure time or name the node aside).

``--worker-niceness 0`` sets ``RAY_worker_niceness`` before Ray starts (see
``bench_study_smoke.py``: Ray's workers run at nice 15 and yield to every other job on the machine).

Run: ``PYTHONPATH=. python tests/benchmarks/bench_study.py [--rounds 1] [--worker-niceness N] [--light-only]``.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from parley.parties.ray.cluster import ensure_ray
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario
from parley.scenarios.study import Study
from parley.scenarios.study.engine import StudyRun, run_study
from tests.benchmarks.bench_study_smoke import fixed_and_row, stable_rows, two_worker_ceiling

LIGHT = {"name": "bench-speedup", "scenario": "adult-raw-double-query",
         "grid": {"dataset.audit_size": [500, 1000], "attack.name": ["single-query", "double-query"],
                  "protocol.decimals": [6, 8], "attack.targets": [10, 20]}}
HEAVY = {**LIGHT, "name": "bench-speedup-heavy",
         "set": {"model.estimator": "sklearn.ensemble.HistGradientBoostingClassifier",
                 "model.params": {"max_iter": 200}}}
TINY_SCENARIO = {"dataset": {"name": "synthetic", "audit_size": 100, "minority": 20, "train_size": 200},
                 "attack": {"name": "single-query", "targets": 1}}
TINY_CELLS = 12


def _run(study: Study, workers: int, reference: dict[str, Any], **kwargs: Any) -> StudyRun:
    """Run ``study`` into a fresh folder; its results must equal the first run's of the same study."""
    with tempfile.TemporaryDirectory() as out:
        done = run_study(study, Path(out), workers=workers, progress=False, keep_runs=False, **kwargs)
        assert done.failed == 0, done.results[["status", "failure"]]
        rows = stable_rows(Path(out) / "results.csv")
        if reference.setdefault(study.name, rows) != rows:
            raise SystemExit(f"{study.name}: results.csv differs with workers={workers}, {kwargs}")
        return done


def _cpu_share(done: StudyRun) -> float:
    """CPU time the workers' processes spent on the rows over the rows' wall time (party host actors not counted).

    With the parties inside the workers it says how much of a core each row got: 1.0 on an idle core,
    0.5 when two runnable processes share it.
    """
    cells = [c for w in done.timeline["workers"].values() for c in w["cells"]]
    return round(sum(c[4] for c in cells) / sum(c[3] - c[2] for c in cells), 3)


def _ceiling(one: StudyRun, two: StudyRun) -> dict[str, float]:
    """The speedup 2 workers could reach given the start-up and row times this pair of runs measured.

    See :func:`two_worker_ceiling`. It bounds the measured ratio from above, apart from noise: what
    the measured ratio falls short of it is imbalance and the driver's work between rows, what the
    ceiling falls short of the target is start-up.
    """
    (f1, r1), (f2, r2) = fixed_and_row(one.timeline), fixed_and_row(two.timeline)
    return {"fixed_1_worker_s": round(f1, 3), "fixed_2_workers_s": round(f2, 3), "row_1_worker_s": round(r1, 3),
            "row_2_workers_s": round(r2, 3), "ceiling": two_worker_ceiling(one.ran, f1, r1, f2, r2)}


def _speedup(study: Study, rounds: int, reference: dict[str, Any], **kwargs: Any) -> dict[str, float]:
    """Median wall time with 1 and 2 workers over ``rounds`` alternated pairs, their ratio, the rows' CPU share,
    and the median of each pair's :func:`_ceiling`."""
    walls: dict[int, list[float]] = {1: [], 2: []}
    shares: dict[int, list[float]] = {1: [], 2: []}
    ceilings: list[dict[str, float]] = []
    for _ in range(rounds):
        pair = {workers: _run(study, workers, reference, **kwargs) for workers in (1, 2)}
        for workers, done in pair.items():
            walls[workers].append(done.wall_s)
            shares[workers].append(_cpu_share(done))
        ceilings.append(_ceiling(pair[1], pair[2]))
    one, two = statistics.median(walls[1]), statistics.median(walls[2])
    return {"wall_1_worker_s": round(one, 3), "wall_2_workers_s": round(two, 3), "speedup": round(one / two, 3),
            "cpu_share_1_worker": statistics.median(shares[1]), "cpu_share_2_workers": statistics.median(shares[2]),
            **{key: statistics.median(c[key] for c in ceilings) for key in ceilings[0]}}


def _startup(done: StudyRun) -> dict[str, float]:
    """When the last worker was ready (since run_study began) and the first rows' extra time over the median."""
    workers = done.timeline["workers"].values()
    cells = [c[3] - c[2] for w in workers for c in w["cells"]]
    firsts = [w["cells"][0][3] - w["cells"][0][2] for w in workers]
    return {"worker_ready_s": round(max(w["ready"] for w in workers), 3),
            "first_cell_extra_s": round(max(firsts) - statistics.median(cells), 3)}


def _overhead(study: Study, inline_s: float, reference: dict[str, Any], **kwargs: Any) -> dict[str, float]:
    """Median per-cell engine time minus in-process time, and the worker's start-up (1 worker)."""
    done = _run(study, 1, reference, **kwargs)
    walls = done.results["cell_wall_s"].astype(float)
    return {"per_cell_s": round(float(walls.iloc[1:].median()) - inline_s, 3), **_startup(done)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="alternated 1-worker/2-worker pairs per grid")
    parser.add_argument("--worker-niceness", type=int, help="RAY_worker_niceness (Ray's default: 15)")
    parser.add_argument("--light-only", action="store_true",
                        help="only the light grid, parties inside the workers (a minute instead of several)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.worker_niceness is not None:
        os.environ["RAY_worker_niceness"] = str(args.worker_niceness)  # noqa: SIM112 (Ray spells it so)
    ensure_ray(num_cpus=2)
    reference: dict[str, Any] = {}
    heavy, light = Study.from_dict(HEAVY), Study.from_dict(LIGHT)
    warm = light.with_overrides(["name=bench-warm", "grid.dataset.audit_size=[500]",
                                 "grid.attack.name=['single-query']", "grid.protocol.decimals=[6]",
                                 "grid.attack.targets=[10]"])
    _run(warm, 1, reference)  # the first Ray workers of the session start here
    load = os.getloadavg()[0]
    if args.light_only:
        light_figures = _speedup(light, args.rounds, reference)
        print(f"party hosts in worker: light cells {light_figures}", file=sys.stderr)
        print(json.dumps({"benchmark": "study", "rounds": args.rounds, "load_average": round(load, 2),
                          "worker_niceness": args.worker_niceness, "target_speedup": 1.7,
                          "light_speedup": light_figures["speedup"], "light": light_figures}))
        return
    figures: dict[str, Any] = {}
    for hosts in ("worker", "actors"):
        figures[hosts] = {"heavy": _speedup(heavy, args.rounds, reference, party_hosts=hosts),
                          "light": _speedup(light, args.rounds, reference, party_hosts=hosts)}
        print(f"party hosts in {hosts}: {len(heavy.cells())} gradient-boosting cells {figures[hosts]['heavy']}; "
              f"light cells {figures[hosts]['light']}", file=sys.stderr)

    tiny = Study.from_dict({"name": "bench-overhead", "scenario": TINY_SCENARIO,
                            "grid": {"attack.targets": list(range(1, TINY_CELLS + 1))}})
    inline = []
    for cell in tiny.cells():
        start = time.perf_counter()
        # As the engine runs a row whose folder is not kept: no report.md, no report.html.
        run(Scenario.from_dict({**cell.scenario, "backend": "local"}), out=tempfile.mkdtemp(), reports=False)
        inline.append(time.perf_counter() - start)
    inline_s = statistics.median(inline)
    overhead = {"worker": _overhead(tiny, inline_s, reference),
                "actors_reused": _overhead(tiny, inline_s, reference, party_hosts="actors"),
                "actors_fresh": _overhead(tiny, inline_s, reference, party_hosts="actors", reuse_hosts=False)}
    print(f"per-cell overhead and start-up (in-process cell {inline_s:.3f} s): {overhead}", file=sys.stderr)
    print(json.dumps({"benchmark": "study", "rounds": args.rounds, "load_average": round(load, 2),
                      "worker_niceness": args.worker_niceness,
                      "cells": len(heavy.cells()), "target_speedup": 1.7,
                      "speedup": figures["worker"]["heavy"]["speedup"],
                      "light_speedup": figures["worker"]["light"]["speedup"],
                      "baseline_actors": {"speedup": figures["actors"]["heavy"]["speedup"],
                                          "light_speedup": figures["actors"]["light"]["speedup"]},
                      "grids": figures, "overhead": overhead, "inline_cell_s": round(inline_s, 3)}))


if __name__ == "__main__":
    main()
