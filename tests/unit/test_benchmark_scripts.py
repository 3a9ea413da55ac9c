"""The benchmark scripts a reader runs by hand: sensible defaults, one line and exit 2 on a missing input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.system  # the benchmark script in a process of its own
def test_rr_figure1_without_arguments_says_what_to_run_and_exits_2(tmp_path):
    done = _run("rr_figure1.py", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "rr_figure1.py: studies/rr-figure1/results.csv not found; run `parley study rr-figure1 --out "
        "studies/rr-figure1` first"]


@pytest.mark.system  # the benchmark script in a process of its own
def test_rr_figure1_refuses_a_table_that_is_not_a_study_result_in_one_line(tmp_path):
    (tmp_path / "results.csv").write_text("a,b\n1,2\n")
    done = _run("rr_figure1.py", str(tmp_path), str(tmp_path / "f.png"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "is not an rr-figure1 results table" in done.stderr and not (tmp_path / "f.png").exists()


@pytest.mark.system  # the benchmark script in a process of its own
@pytest.mark.parametrize("given", [False, True])
def test_rr_figure1_plots_a_study_folder_at_the_default_or_given_places(tmp_path, given):
    folder = tmp_path / "studies" / "rr-figure1"
    folder.mkdir(parents=True)
    rows = ["status,protocol.epsilon,step1_disc,step1_accuracy,two_step_disc,two_step_accuracy"]
    rows += [f"ok,{eps},{0.2 + r / 100},{0.8},{0.1 + r / 100},{0.79}" for eps in (0.5, 2.0) for r in range(3)]
    (folder / "results.csv").write_text("\n".join(rows) + "\n")
    args = (str(folder), str(tmp_path / "out.png")) if given else ()
    done = _run("rr_figure1.py", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    figure = tmp_path / "out.png" if given else tmp_path / "docs" / "figures" / "rr-figure1.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| 0.5 | 3 |" in done.stdout and "| 2 | 3 |" in done.stdout


def _timeline_run(workers: list[list[tuple[float, float]]], ready: float) -> Any:
    """A StudyRun whose timeline holds ``workers``' rows as (started, ended), each worker ready at ``ready``."""
    from parley.scenarios.study.engine import StudyRun

    timeline = {"workers": {f"w{i}": {"ready": ready, "cells": [[k, 1, s, e, e - s] for k, (s, e) in enumerate(rows)]}
                            for i, rows in enumerate(workers)}}
    return StudyRun(out=Path("."), ran=sum(map(len, workers)), skipped=0, failed=0, wall_s=0.0,
                    results=pd.DataFrame(), timeline=timeline)


def test_bench_study_ceiling_charges_each_worker_its_own_start_up():
    from tests.benchmarks.bench_study import _ceiling

    # 1 worker: ready at 1.0 s, a first row of 1.5 s (1.0 s of imports over a 0.5 s row), 7 more of 0.5 s.
    one = _timeline_run([[(1.0, 2.5)] + [(2.5 + 0.5 * k, 3.0 + 0.5 * k) for k in range(7)]], ready=1.0)
    # 2 workers: the same start-up each, 4 rows each; later rows 0.6 s (the two share the machine).
    two = _timeline_run([[(1.0, 2.6)] + [(2.6 + 0.6 * k, 3.2 + 0.6 * k) for k in range(3)]] * 2, ready=1.0)
    got = _ceiling(one, two)
    assert got["fixed_1_worker_s"] == pytest.approx(2.0) and got["fixed_2_workers_s"] == pytest.approx(2.0)
    assert got["row_1_worker_s"] == pytest.approx(0.5) and got["row_2_workers_s"] == pytest.approx(0.6)
    # (2.0 + 8 x 0.5) / (2.0 + 4 x 0.6): start-up, not the rows, keeps it far from x2.
    assert got["ceiling"] == pytest.approx(6.0 / 4.4, abs=1e-3)


def test_bench_wire_floor_adds_two_signatures_two_checks_and_three_digest_passes():
    from tests.benchmarks.bench_wire import floor_ratio

    # 1.0 ms bare + 2 x 0.02 + 2 x 0.04 + 3 x 0.1 = 1.42 ms.
    assert floor_ratio(1.0, 0.1, {"sign_ms": 0.02, "verify_ms": 0.04}) == pytest.approx(1.42)
    assert floor_ratio(4.0, 0.0, {"sign_ms": 0.0, "verify_ms": 0.0}) == 1.0


def test_bench_study_smoke_counts_a_workers_start_up_from_ray_up():
    from tests.benchmarks.bench_study_smoke import fixed_and_row

    run = _timeline_run([[(1.0, 2.5), (2.5, 3.0), (3.0, 3.5)]], ready=1.0)
    assert fixed_and_row(run.timeline) == pytest.approx((2.0, 0.5))
    assert fixed_and_row(run.timeline, since=0.4) == pytest.approx((1.6, 0.5))
