"""The crime data set (UCI Communities and Crime, Table I of the distributed-fair-learning paper): files, rows, A, y."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from parley.protocols.errors import DatasetError
from parley.scenarios.datasets import DATASETS, CrimeParams, _crime, _integrity, load_split, load_table


def _raw() -> pd.DataFrame:
    names = _crime._column_names((_integrity.DATA_DIR / "communities.names").read_text())
    return pd.read_csv(_integrity.DATA_DIR / "communities.data.gz", header=None, names=names, na_values="?",
                       keep_default_na=False)


def test_vendored_files_match_their_digests():
    for name in _crime.CRIME_FILES:
        path = _integrity.verify(name)
        assert _integrity.sha256_of(path) == _integrity.EXPECTED_SHA256[name]


def test_an_altered_copy_is_refused(tmp_path):
    shutil.copy(_integrity.DATA_DIR / "communities.names", tmp_path / "communities.names")
    with open(tmp_path / "communities.names", "a") as handle:
        handle.write("\n")
    with pytest.raises(DatasetError, match="altered"):
        _integrity.verify("communities.names", tmp_path)


def test_raw_file_is_the_uci_file_the_readme_describes():
    raw = _raw()
    assert raw.shape == (1994, 128)
    missing = raw.isna().sum()
    assert missing["county"] == 1174 and missing["community"] == 1177 and missing["OtherPerCap"] == 1
    assert sorted(set(missing[missing == 1675].index)) == sorted(
        c for c in raw.columns if missing[c] == 1675) and (missing == 1675).sum() == 22


def test_table_has_the_papers_1993_rows_and_99_features():
    table = load_table(CrimeParams())
    assert table.features.shape == (1993, 99)
    assert not table.features.isna().any().any()
    dropped = set(_crime.NON_PREDICTIVE) | {"racepctblack", "ViolentCrimesPerPop", "PolicPerPop", "LemasSwornFT"}
    assert dropped.isdisjoint(table.features.columns)
    assert {"OtherPerCap", "LemasPctOfficDrugUn"} <= set(table.features.columns)  # complete but for one row / complete
    assert table.groups == ("racepctblack > 0.5", "racepctblack <= 0.5")


def test_minority_and_label_follow_the_raw_columns():
    table = load_table(CrimeParams())
    raw = _raw().dropna(subset=["OtherPerCap"]).reset_index(drop=True)
    np.testing.assert_array_equal(table.a, (raw["racepctblack"] <= 0.5).to_numpy())
    np.testing.assert_array_equal(table.y, (raw["ViolentCrimesPerPop"] <= 0.5).to_numpy())
    assert int((table.a == 0).sum()) == 238  # racepctblack > 0.5 (239 in the raw file, one lacks OtherPerCap)
    assert int((table.y == 0).sum()) == 277  # violent crime rate above 0.5
    stricter = load_table(CrimeParams(label_threshold=0.3, minority_threshold=0.2))
    assert (stricter.y == 0).sum() > 277 and (stricter.a == 0).sum() > 238


def test_split_is_75_25_and_standardised_on_training_rows():
    split = load_split(CrimeParams(), np.random.default_rng(0))
    assert split.X_train.shape == (1495, 99) and split.X_audit.shape == (498, 99)
    np.testing.assert_allclose(split.X_train.mean(0), 0.0, atol=1e-9)
    assert set(np.unique(split.a_audit)) == {0, 1}


def test_registered_and_validated():
    assert "crime" in DATASETS
    with pytest.raises(ValidationError):
        CrimeParams(minority_threshold=1.5)


def test_catalog_scenario_validates():
    from parley.scenarios.catalog import resolve_scenario
    from parley.scenarios.spec import Scenario
    from parley.scenarios.study.plan import Study

    scenario = Scenario.from_toml(resolve_scenario("crime-cov-threshold"))
    assert scenario.dataset.name == "crime" and scenario.dataset.audit_size == 498
    study = Study.load("crime-table1")
    assert study.repeats == 50
