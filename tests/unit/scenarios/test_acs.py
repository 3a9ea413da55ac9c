"""A user's own ACS extract runs through the csv data set (ACSIncome, ACSPublicCoverage; Ferry et al. Table II)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from parley.protocols.errors import ConfigError, DatasetError
from parley.scenarios.acs import ACS_TASKS, acs_frame, main, write_acs_csv
from parley.scenarios.datasets import CsvParams, load_split, load_table

PUMS = ["AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P", "PINCP", "PWGTP", "PUBCOV",
        "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE", "DREM", "ESR", "ST", "FER"]


def _pums(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """An ACS-shaped person file: PUMS column names and codes, random values."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({c: rng.integers(1, 5, n) for c in PUMS})
    frame["AGEP"] = rng.integers(10, 90, n)
    frame["WKHP"] = rng.integers(0, 60, n)
    frame["PINCP"] = rng.integers(-1000, 120_000, n)
    frame["RAC1P"] = rng.integers(1, 10, n)
    frame["PUBCOV"] = rng.integers(1, 3, n)
    frame["PWGTP"] = rng.integers(0, 100, n)
    frame["ST"] = 48
    return frame


@pytest.fixture
def pums(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    frame = _pums()
    path = tmp_path / "psam_p48.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_income_follows_folktables_filter_and_the_papers_a(pums):
    path, raw = pums
    frame, notes = acs_frame(path, "income")
    kept = raw[(raw.AGEP > 16) & (raw.PINCP > 100) & (raw.WKHP > 0) & (raw.PWGTP >= 1)]
    assert len(frame) == len(kept) and "rows after the filter" in notes[0]
    np.testing.assert_array_equal(frame["y"], (kept.PINCP > 50000).astype(int))
    np.testing.assert_array_equal(frame["a"], (kept.RAC1P == 1).astype(int))
    assert "RAC1P" not in frame.columns  # A is never a feature
    assert list(frame.columns[:-2]) == list(ACS_TASKS["income"].features)


def test_public_coverage_a_is_the_youngest_quartile(pums):
    path, raw = pums
    frame, _ = acs_frame(path, "public-coverage")
    kept = raw[(raw.AGEP < 65) & (raw.PINCP <= 30000)]
    np.testing.assert_array_equal(frame["a"], (kept.AGEP.quantile(0.25) < kept.AGEP).astype(int))
    np.testing.assert_array_equal(frame["y"], (kept.PUBCOV == 1).astype(int))
    assert "AGEP" not in frame.columns


def test_the_written_file_loads_as_a_csv_data_set(pums, tmp_path):
    path, _ = pums
    out = tmp_path / "acs-income.csv"
    notes = write_acs_csv(path, "income", out)
    assert "privileged = 1" in notes[-1]
    params = CsvParams(path=str(out), label="y", protected="a", privileged=1, audit_size=50)
    table = load_table(params)
    frame = pd.read_csv(out)
    np.testing.assert_array_equal(table.y, frame["y"])
    np.testing.assert_array_equal(table.a, frame["a"])
    assert list(table.features.columns) == list(ACS_TASKS["income"].features)
    split = load_split(params, np.random.default_rng(0))
    assert split.X_audit.shape[0] == 50 and split.X_train.shape[0] == len(frame) - 50


def test_folktables_output_with_a_boolean_label(tmp_path):
    raw = _pums(300, 1)
    raw = raw[(raw.AGEP > 16) & (raw.PINCP > 100) & (raw.WKHP > 0)]
    folk = raw[list(ACS_TASKS["income"].features) + ["RAC1P"]].copy()
    folk["PINCP"] = raw["PINCP"] > 50000  # folktables' label: True/False, no PWGTP
    path = tmp_path / "folk.csv"
    folk.to_csv(path, index=False)
    frame, notes = acs_frame(path, "income")
    np.testing.assert_array_equal(frame["y"], folk["PINCP"].astype(int))
    assert any("PWGTP" in note and "skipped" in note for note in notes)


def test_bad_extracts_are_refused_naming_what_is_wrong(pums, tmp_path):
    path, raw = pums
    with pytest.raises(ConfigError, match="unknown ACS task 'employment'"):
        acs_frame(path, "employment")
    with pytest.raises(DatasetError, match="does not exist"):
        acs_frame(tmp_path / "none.csv", "income")
    short = tmp_path / "short.csv"
    raw.drop(columns=["OCCP", "RAC1P"]).to_csv(short, index=False)
    with pytest.raises(DatasetError, match="lacks the column\\(s\\) OCCP, RAC1P"):
        acs_frame(short, "income")
    empty = tmp_path / "young.csv"
    raw.assign(AGEP=10).to_csv(empty, index=False)
    with pytest.raises(DatasetError, match="no row is left"):
        acs_frame(empty, "income")
    text = tmp_path / "text.csv"
    raw.assign(PUBCOV="yes").to_csv(text, index=False)
    with pytest.raises(DatasetError, match="neither numbers nor True/False"):
        acs_frame(text, "public-coverage")


def test_command_line(pums, tmp_path, capsys):
    path, _ = pums
    assert main(["public-coverage", str(path), str(tmp_path / "pc.csv")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["income", str(tmp_path / "missing.csv"), str(tmp_path / "x.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
