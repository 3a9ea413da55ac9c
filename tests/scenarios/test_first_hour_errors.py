"""A new user's first mistakes get one line that says what to do, at once, with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from parley.parties.learners.base_model import BAD_PARAM
from parley.scenarios.catalog import IS_A_SCENARIO, IS_A_STUDY
from parley.scenarios.cli import EXIT_USAGE, NOT_A_TRANSCRIPT_MSG, main
from parley.scenarios.datasets._csv import MSG_ROWS_DROPPED
from parley.scenarios.report import ROWS_DROPPED

ROOT = Path(__file__).resolve().parents[2]
#: What a scenario's validation error must not wait for.
HEAVY = ("ray", "pandas", "sklearn", "scipy")


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert len(err) == 1 and err[0].startswith("parley: error: "), err
    return err[0].removeprefix("parley: error: ")


def test_an_estimator_parameter_scikit_learn_rejects_is_a_user_error_naming_the_key(capsys):
    line = _one_line_error(capsys, ["run", "--set", "model.params.max_iter=-5"])
    reason = "The 'max_iter' parameter of LogisticRegression must be an int in the range [0, inf). Got -5 instead."
    assert line == BAD_PARAM.format(key="max_iter", reason=reason)
    assert line.startswith("model.params.max_iter: ")
    line = _one_line_error(capsys, ["run", "--set", "model.params.max_itr=50"])
    assert line.startswith("model.params.max_itr: ") and "max_iter" in line  # the parameters it takes


def test_verify_of_a_result_json_says_what_to_give_instead(tmp_path, capsys):
    folder = tmp_path / "runs" / "x"
    folder.mkdir(parents=True)
    result = folder / "result.json"
    result.write_text(json.dumps({"scenario": "x"}))
    line = _one_line_error(capsys, ["verify", str(result)])
    assert line == NOT_A_TRANSCRIPT_MSG.format(path=result, folder=folder, transcript=folder / "transcript.jsonl")
    assert "--expect" in line and "does not exist" not in line


def test_a_study_given_to_run_points_to_parley_study_and_back(capsys):
    assert _one_line_error(capsys, ["run", "smoke"]) == IS_A_STUDY.format(name="smoke")
    assert "`parley study smoke`" in IS_A_STUDY.format(name="smoke")
    assert _one_line_error(capsys, ["study", "adult-conceal"]) == IS_A_SCENARIO.format(name="adult-conceal")


def test_a_scenario_validation_error_imports_none_of_the_heavy_stack():
    probe = ("import sys\nfrom parley.scenarios.cli import main\n"
             "code = main(['run', '--set', 'protocol.decimals=true'])\n"
             f"print([m for m in {HEAVY!r} if m in sys.modules])\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "protocol.decimals" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout.strip() == "[]"


@pytest.mark.system  # the CLI end to end (a subprocess); tests/unit/scenarios/test_csv_honesty.py counts the rows
def test_a_csv_run_reports_the_rows_it_dropped(tmp_path):
    gen = np.random.default_rng(5)
    n = 240
    frame = pd.DataFrame({"age": gen.integers(20, 60, n).astype(float), "income": gen.normal(50, 10, n).round(1),
                          "group": np.where(np.arange(n) % 3 == 0, "B", "A"), "hired": gen.integers(0, 2, n)})
    frame.loc[[2, 7, 9], "age"] = np.nan  # lines 4, 9 and 11
    data = tmp_path / "applicants.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "run"
    sets = ["backend=local", "dataset.name=csv", f"dataset.path={json.dumps(str(data))}", "dataset.label=hired",
            "dataset.protected=group", "dataset.privileged=A", "dataset.audit_size=100", "attack.targets=5"]
    done = subprocess.run([sys.executable, "-m", "parley.scenarios.cli", "run", "--out", str(out),
                           *(arg for key in sets for arg in ("--set", key))],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert MSG_ROWS_DROPPED.format(path=data, count=3, examples="line 4, line 9, line 11") in done.stderr
    record = json.loads((out / "result.json").read_text())
    assert record["sizes"]["rows_dropped"] == 3 and record["sizes"]["n_audit"] == 100
    assert record["sizes"]["n_train"] == n - 3 - 100
    assert ROWS_DROPPED.format(count=3) in (out / "report.md").read_text()


def test_a_csv_whose_data_is_refused_leaves_no_run_folder(tmp_path, monkeypatch, capsys):
    """The file's mistake is found before any folder is made (a run used to leave an empty one with a lock)."""
    data = tmp_path / "applicants.csv"
    data.write_text("age,group,hired\n" + "".join(f"{20 + i},{'AB'[i % 2]},{i % 2}\n" for i in range(40))
                    + "33,A,yes\n")
    monkeypatch.chdir(tmp_path)
    sets = ["dataset.name=csv", f"dataset.path={json.dumps(str(data))}", "dataset.label=hired",
            "dataset.protected=group", "dataset.privileged=A", "dataset.audit_size=10", "attack.targets=2"]
    error = _one_line_error(capsys, ["run", *(arg for key in sets for arg in ("--set", key))])
    assert "'yes'" in error and "line 42" in error
    assert not (tmp_path / "runs").exists()


def test_a_reader_that_goes_away_stops_the_command_quietly():
    """`parley list | head -1` used to end in "internal error ... BrokenPipeError" and a bug log."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written: every write fails
    try:
        done = subprocess.run([sys.executable, "-m", "parley.scenarios.cli", "list"], cwd=ROOT, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 141 and "internal error" not in done.stderr and "Traceback" not in done.stderr, \
        done.stderr


def test_verify_of_a_scenarios_folder_of_runs_checks_its_latest_run(tmp_path, monkeypatch, capsys):
    import parley

    monkeypatch.chdir(tmp_path)
    scenario = parley.Scenario.from_dict({
        "name": "verify-latest", "backend": "local", "dataset": {"name": "synthetic", "audit_size": 60, "minority": 10},
        "protocol": {"name": "raw"}, "attack": {"name": "single-query", "targets": 2}})
    done = parley.run(scenario)
    assert main(["verify", "runs/verify-latest"]) == 0
    out = capsys.readouterr().out
    assert f"verified {done.metrics['messages']} messages in runs/verify-latest/latest/transcript.jsonl" in out


def test_a_comparison_refused_by_its_plan_leaves_no_folder(tmp_path):
    """`parley.compare("no-such-data")` used to leave an empty compare/no-such-data behind."""
    from parley.protocols.errors import ConfigError
    from parley.scenarios.compare import compare

    for kwargs in ({"dataset": "no-such-data"}, {"dataset": "adult", "rows": ("no-such-row",)}):
        with pytest.raises(ConfigError):
            compare(out=tmp_path / "cmp", **kwargs)
        assert not (tmp_path / "cmp").exists()
