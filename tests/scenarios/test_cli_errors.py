"""User errors on the command line are one line and exit 2; Ctrl-C is one line and exit 130; bugs say so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parley.scenarios.cli import BUG, EXIT_BUG, EXIT_INTERRUPTED, EXIT_USAGE, INTERRUPTED, main

PARLEY = [sys.executable, "-m", "parley.scenarios.cli"]


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert len(err) == 1 and err[0].startswith("parley: error: "), err
    return err[0]


@pytest.mark.parametrize("command", [["run"], ["study", "smoke"], ["compare", "--quick"]])
def test_out_pointing_at_a_file_is_one_line(tmp_path, capsys, command):
    target = tmp_path / "result.txt"
    target.write_text("someone's file")
    line = _one_line_error(capsys, [*command, "--out", str(target)])
    assert f"{target} is a file, not a folder" in line
    assert target.read_text() == "someone's file"  # nothing was written over it


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "plain").write_text("x")
    line = _one_line_error(capsys, ["run", "--out", str(tmp_path / "plain" / "run")])
    assert "cannot write the run folder" in line and "Not a directory" in line


def test_out_where_nothing_can_be_written_is_one_line(capsys):
    unwritable = Path("/sys/parley-cannot-write")
    try:  # the control: this location must really refuse a folder, even to root
        unwritable.mkdir()
    except OSError:
        pass
    else:
        unwritable.rmdir()
        pytest.skip("/sys accepts new folders on this machine")
    for command in (["run"], ["study", "smoke"]):
        line = _one_line_error(capsys, [*command, "--out", str(unwritable)])
        assert "cannot write the" in line and str(unwritable) in line


def test_a_bug_is_one_line_naming_its_log(tmp_path, capsys, monkeypatch):
    # A real internal failure: the catalog's scenario file becomes unreadable bytes mid-way.
    from parley.scenarios import catalog

    broken = tmp_path / "adult-raw-double-query.toml"
    broken.write_bytes(b"\xff\xfe not utf-8")
    monkeypatch.setattr(catalog, "_catalog", lambda: tmp_path)
    code = main(["run", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BUG and len(err) == 1
    assert err[0].startswith(BUG.split("{error}")[0]) and "UnicodeDecodeError" in err[0]
    log = Path(err[0].rsplit("traceback in ", 1)[1])
    assert "Traceback" in log.read_text()
    log.unlink()


@pytest.mark.ray
def test_ctrl_c_is_one_line_and_the_study_resumes(tmp_path):
    out = tmp_path / "study"
    # 2 repeats: 24 rows of about 0.1 s each, so the study is still running when the interrupt lands after the
    # first row
    args = [*PARLEY, "study", "smoke", "--out", str(out), "--workers", "1", "--set", "dataset.audit_size=300",
            "--set", "repeats=2"]
    # Ctrl-C's default action, whatever this process inherited: a shell starts a background job (a CI script
    # run with '&') with SIGINT ignored, and Python then installs no KeyboardInterrupt for it
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.csv"
    deadline = time.monotonic() + 600
    # Strike after the first finished row is on disk (a state, not a time): the interrupt lands mid-study.
    while not (results.is_file() and len(results.read_text().splitlines()) >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no row finished in 10 minutes"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert len(results.read_text().splitlines()) - 1 < 24, "the study ended before the interrupt: nothing tested"
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err
    messages = [line for line in err.splitlines() if line.startswith("parley:")]  # the rest is the progress bar
    assert messages == [INTERRUPTED]
    done_before = len(results.read_text().splitlines()) - 1
    again = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    assert f"{done_before} already done" in again.stdout


def test_a_folder_named_like_a_catalog_entry_does_not_shadow_it(tmp_path, monkeypatch, capsys):
    """``parley run`` writes runs/<scenario>/ and ``parley study`` studies/<study>/: from inside those folders
    the same names must still reach the catalog (they once failed with "scenario file ... does not exist")."""
    from parley.scenarios.catalog import resolve_scenario, resolve_study, scenario_path

    (tmp_path / "adult-raw-double-query").mkdir()
    (tmp_path / "smoke").mkdir()
    monkeypatch.chdir(tmp_path)
    assert resolve_scenario("adult-raw-double-query") == scenario_path("adult-raw-double-query")
    assert resolve_study("smoke").parent.name == "studies" and resolve_study("smoke").stem == "smoke"
    # End to end: the name is read from the catalog, so the error is about the bad --set value, not the file.
    assert main(["run", "adult-raw-double-query", "--set", "protocol.decimals=true"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "protocol.decimals" in err and "does not exist" not in err and len(err.strip().splitlines()) == 1


def test_verify_of_a_folder_without_a_transcript_names_the_file_it_looked_for(tmp_path, capsys):
    from parley.scenarios.cli import NO_TRANSCRIPT_MSG

    assert main(["verify", str(tmp_path)]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err == f"parley: error: {NO_TRANSCRIPT_MSG.format(path=tmp_path / 'transcript.jsonl')}"
