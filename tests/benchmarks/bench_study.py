"""Study engine: speedup of 2 workers over 1, and the per-cell overhead of the engine.

* speedup: one grid of 16 Adult cells whose base model is gradient boosting on
  ~42,000 rows (a few seconds of work per cell, like the cells of a real study)
  run with 1 worker, then with 2, each into a fresh folder; ratio of wall times.
  Ray is started once, before both. The same ratio for the light grid (logistic
  regression, under a second per cell) is printed too: there the workers'
  start-up weighs more.
* per-cell overhead: tiny synthetic cells (one query each) through the study
  engine with 1 worker: the median cell time inside the engine minus the same
  cell run in-process in this driver, with party host actors reused across cells
  (the default) and with fresh actors per cell; plus the one-off start-up of a
  worker (its first cell's extra time).

Run: ``python tests/benchmarks/bench_study.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from parley.parties.actors import ensure_ray
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario
from parley.scenarios.study import Study
from parley.scenarios.study.engine import run_study

LIGHT = {"name": "bench-speedup", "scenario": "adult-raw-double-query",
         "grid": {"dataset.audit_size": [500, 1000], "attack.name": ["single-query", "double-query"],
                  "protocol.decimals": [6, 8], "attack.targets": [10, 20]}}
HEAVY = {**LIGHT, "set": {"model.estimator": "sklearn.ensemble.HistGradientBoostingClassifier",
                          "model.params": {"max_iter": 200}}}
TINY_SCENARIO = {"dataset": {"name": "synthetic", "audit_size": 100, "minority": 20, "train_size": 200},
                 "attack": {"name": "single-query", "targets": 1}}
TINY_CELLS = 12


def _run(study: Study, workers: int, **kwargs):
    with tempfile.TemporaryDirectory() as out:
        done = run_study(study, Path(out), workers=workers, progress=False, keep_runs=False, **kwargs)
        assert done.failed == 0, done.results[["status", "error"]]
        return done


def _wall(study: Study, workers: int, **kwargs) -> float:
    return _run(study, workers, **kwargs).wall_s


def _steady_and_startup(study: Study, inline_s: float, **kwargs) -> tuple[float, float]:
    """Median per-cell engine time minus in-process time, and the first cell's extra time."""
    walls = _run(study, 1, **kwargs).results["cell_wall_s"].astype(float)
    steady = float(walls.iloc[1:].median())
    return steady - inline_s, float(walls.iloc[0]) - steady


def main() -> None:
    ensure_ray(num_cpus=2)
    heavy, light = Study.from_dict(HEAVY), Study.from_dict(LIGHT)
    _wall(light.with_overrides(["grid.dataset.audit_size=[500]", "grid.attack.name=['single-query']",
                                "grid.protocol.decimals=[6]", "grid.attack.targets=[10]"]), 1)  # warm-up
    one, two = _wall(heavy, 1), _wall(heavy, 2)
    light_one, light_two = _wall(light, 1), _wall(light, 2)
    cells = len(heavy.cells())
    print(f"speedup: {cells} gradient-boosting cells, 1 worker {one:.1f} s, 2 workers {two:.1f} s -> "
          f"x{one / two:.2f}; light cells {light_one:.1f} s vs {light_two:.1f} s -> x{light_one / light_two:.2f}",
          file=sys.stderr)

    tiny = Study.from_dict({"name": "bench-overhead", "scenario": TINY_SCENARIO,
                            "grid": {"attack.targets": list(range(1, TINY_CELLS + 1))}})
    inline = []
    for cell in tiny.cells():
        start = time.perf_counter()
        run(Scenario.from_dict({**cell.scenario, "backend": "local"}), out=tempfile.mkdtemp())
        inline.append(time.perf_counter() - start)
    inline_s = sum(inline) / len(inline)
    reused, startup = _steady_and_startup(tiny, inline_s)
    fresh, _ = _steady_and_startup(tiny, inline_s, reuse_hosts=False)
    print(f"per-cell overhead: reused party hosts {reused:.3f} s, fresh actors per cell {fresh:.3f} s "
          f"(in-process cell {inline_s:.3f} s); worker start-up {startup:.2f} s once", file=sys.stderr)
    print(json.dumps({"benchmark": "study", "cells": cells, "wall_1_worker_s": one, "wall_2_workers_s": two,
                      "speedup": round(one / two, 3), "target_speedup": 1.6,
                      "light_speedup": round(light_one / light_two, 3),
                      "per_cell_overhead_s": {"reused_hosts": round(reused, 3), "fresh_actors": round(fresh, 3)},
                      "worker_startup_s": round(startup, 3), "inline_cell_s": round(inline_s, 3)}))


if __name__ == "__main__":
    main()
