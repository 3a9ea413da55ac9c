"""The benchmark scripts a reader runs by hand: sensible defaults, one line and exit 2 on a missing input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_rr_figure1_without_arguments_says_what_to_run_and_exits_2(tmp_path):
    done = _run("rr_figure1.py", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "rr_figure1.py: studies/rr-figure1/results.csv not found; run `parley study rr-figure1 --out "
        "studies/rr-figure1` first"]


def test_rr_figure1_refuses_a_table_that_is_not_a_study_result_in_one_line(tmp_path):
    (tmp_path / "results.csv").write_text("a,b\n1,2\n")
    done = _run("rr_figure1.py", str(tmp_path), str(tmp_path / "f.png"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "is not an rr-figure1 results table" in done.stderr and not (tmp_path / "f.png").exists()


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
