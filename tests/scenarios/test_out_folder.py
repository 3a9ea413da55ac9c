"""`--out` never mixes two scenarios' or studies' results: refused in one line, untouched, unless --replace."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from parley.scenarios.cli import EXIT_OK, EXIT_USAGE, main
from parley.scenarios.out_folder import FOREIGN_FOLDER, NOT_OURS, STUDY_MARKER, holding, study_fingerprint
from parley.scenarios.study import Study

SCENARIO = "adult-raw-single-query"
#: A quick real run of SCENARIO, in this process.
QUICK = ["--set", "backend=local", "--set", "attack.targets=3"]
TINY_STUDY = """\
name = "{name}"
seed = 0

[scenario.dataset]
name = "synthetic"
audit_size = 200
minority = 30
train_size = 2000

[scenario.protocol]
name = "raw"

[scenario.attack]
name = "double-query"
targets = 4

[grid]
"attack.targets" = [{targets}]
"""


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (what a refusal must leave exactly as it was)."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _refused(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert len(err) == 1 and err[0].startswith("parley: error: "), err
    return err[0].removeprefix("parley: error: ")


def _foreign_run(folder: Path, scenario: str = "adult-conceal") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps({"scenario": scenario, "metrics": {"leakage": 55.0}}))
    (folder / "report.md").write_text(f"# {scenario}\n\nleakage 55\n")
    (folder / "transcript.jsonl").write_text('{"record": "someone else\'s"}\n')


def _foreign_study(folder: Path, name: str = "conceal-table1", marker: bool = True) -> None:
    (folder / "cells" / "c1-r0").mkdir(parents=True)
    (folder / "cells" / "c1-r0" / "result.json").write_text(json.dumps({"scenario": "x"}))
    (folder / "results.csv").write_text("cell,repeat,seed,status\nc1,0,0,ok\n")
    (folder / "summary.md").write_text(f"# Study {name}\n\nrows\n")
    (folder / "leakage.png").write_bytes(b"\x89PNG not really")
    if marker:
        (folder / STUDY_MARKER).write_text(json.dumps({"study": name, "fingerprint": "0" * 64,
                                                       "plots": ["leakage.png"]}))


def test_a_run_into_another_scenarios_folder_is_refused_and_touches_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    _foreign_run(out)
    before = _snapshot(out)
    line = _refused(capsys, ["run", SCENARIO, "--out", str(out), *QUICK])
    held = holding(out)
    assert line == FOREIGN_FOLDER.format(folder="run folder", path=out, holds=held.describe(),
                                         new=f"the results of scenario {SCENARIO!r}")
    assert "adult-conceal" in line and "result.json, report.md, transcript.jsonl" in line and "--replace" in line
    assert _snapshot(out) == before and sorted(p.name for p in out.iterdir()) == sorted(before)


@pytest.mark.parametrize("marker", [True, False], ids=["study.json", "older-study-folder"])
def test_a_study_into_another_studys_folder_is_refused_and_touches_nothing(tmp_path, capsys, marker):
    out = tmp_path / "out"
    _foreign_study(out, marker=marker)
    before = _snapshot(out)
    line = _refused(capsys, ["study", "smoke", "--out", str(out)])
    assert line.startswith(f"study folder {out} holds the results of study 'conceal-table1' (")
    assert "the results of study 'smoke' would be mixed with them" in line and "--replace" in line
    assert _snapshot(out) == before  # no row moved to results-stale.csv, no summary rewritten, no plot removed


def test_a_run_into_a_study_folder_and_a_study_into_a_run_folder_are_refused(tmp_path, capsys):
    study_folder, run_folder = tmp_path / "study", tmp_path / "run"
    _foreign_study(study_folder, name="smoke")
    _foreign_run(run_folder, scenario="smoke")  # same name, other kind: still another's results
    before = _snapshot(study_folder), _snapshot(run_folder)
    line = _refused(capsys, ["run", SCENARIO, "--out", str(study_folder), *QUICK])
    assert line.startswith(f"run folder {study_folder} holds the results of study 'smoke'")
    line = _refused(capsys, ["study", "smoke", "--out", str(run_folder)])
    assert line.startswith(f"study folder {run_folder} holds the results of scenario 'smoke'")
    assert (_snapshot(study_folder), _snapshot(run_folder)) == before


@pytest.mark.system  # three full-size runs; the refusals stay in the default tier
def test_replace_deletes_the_other_results_and_the_same_scenario_runs_again(tmp_path, capsys):
    out = tmp_path / "out"
    _foreign_study(out)
    (out / "notes.txt").write_text("the user's own file")
    assert main(["run", SCENARIO, "--out", str(out), "--replace", *QUICK]) == EXIT_OK
    record = json.loads((out / "result.json").read_text())
    assert record["scenario"] == SCENARIO and record["metrics"]["queries"] == 3
    left = {p.name for p in out.iterdir()}
    assert not left & {STUDY_MARKER, "results.csv", "summary.md", "leakage.png", "cells"}  # really replaced
    assert (out / "notes.txt").read_text() == "the user's own file"  # nothing parley did not write
    assert holding(out).name == SCENARIO
    capsys.readouterr()
    # The same scenario into its own folder: runs as it always did, no flag needed.
    assert main(["run", SCENARIO, "--out", str(out), "--set", "backend=local", "--set", "attack.targets=4"]) == EXIT_OK
    assert json.loads((out / "result.json").read_text())["metrics"]["queries"] == 4
    capsys.readouterr()
    # Another scenario over it: replaced only when asked.
    _refused(capsys, ["run", "adult-raw-double-query", "--out", str(out), *QUICK])
    assert main(["run", "adult-raw-double-query", "--out", str(out), "--replace", *QUICK]) == EXIT_OK
    assert json.loads((out / "result.json").read_text())["scenario"] == "adult-raw-double-query"


@pytest.mark.ray
def test_a_study_folder_knows_its_study_resumes_it_and_refuses_another(ray_session, tmp_path, capsys):
    first, other, out = tmp_path / "tiny-a.toml", tmp_path / "tiny-b.toml", tmp_path / "out"
    first.write_text(TINY_STUDY.format(name="tiny-a", targets=4))
    other.write_text(TINY_STUDY.format(name="tiny-b", targets=3))
    assert main(["study", str(first), "--out", str(out), "--workers", "1"]) == EXIT_OK
    marker = json.loads((out / STUDY_MARKER).read_text())
    assert marker == {"study": "tiny-a", "plots": [],
                      "fingerprint": study_fingerprint(Study.load(str(first)).model_dump(mode="json"))}
    capsys.readouterr()
    assert main(["study", str(first), "--out", str(out), "--workers", "1"]) == EXIT_OK  # resumes as before
    assert "0 rows run, 1 already done" in capsys.readouterr().out
    before = _snapshot(out)
    line = _refused(capsys, ["study", str(other), "--out", str(out), "--workers", "1"])
    assert line.startswith(f"study folder {out} holds the results of study 'tiny-a' (study.json, results.csv")
    assert _snapshot(out) == before and not (out / "results-stale.csv").exists()
    assert main(["study", str(other), "--out", str(out), "--workers", "1", "--replace"]) == EXIT_OK
    results = pd.read_csv(out / "results.csv")
    assert list(results["attack.targets"]) == [3] and not (out / "results-stale.csv").exists()
    assert json.loads((out / STUDY_MARKER).read_text())["study"] == "tiny-b"
    assert sorted(p.name for p in (out / "cells").iterdir()) == [f"{results['cell'][0]}-r0"]


def test_files_that_only_look_like_a_studys_are_never_deleted_or_overwritten(tmp_path, capsys):
    """A user's own summary.md, figures and cells/ are not a study's: --replace leaves them, a study refuses."""
    out = tmp_path / "notes"
    (out / "cells").mkdir(parents=True)
    (out / "cells" / "thesis.tex").write_text("chapter 1")
    (out / "summary.md").write_text("# My notes\n")
    (out / "figure.png").write_bytes(b"\x89PNG mine")
    before = _snapshot(out)
    assert holding(out) is None
    line = _refused(capsys, ["study", "smoke", "--out", str(out), "--replace"])
    assert line == NOT_OURS.format(path=out, files="summary.md")
    assert _snapshot(out) == before
    assert main(["run", SCENARIO, "--out", str(out), "--replace", *QUICK]) == EXIT_OK
    after = _snapshot(out)
    assert {name: after[name] for name in before} == before  # every file of the user's is still there, unchanged
