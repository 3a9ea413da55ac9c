"""Unit tests of parley.scenarios.datasets: row counts, encodings, seeding, integrity, CSV, errors."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest
from pydantic import TypeAdapter, ValidationError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from parley.protocols.errors import ConfigError, DatasetError
from parley.scenarios.datasets import (
    DATASET_NAMES,
    AdultParams,
    CompasParams,
    CsvParams,
    DatasetParams,
    GermanParams,
    Split,
    SyntheticParams,
    Table,
    _csv,
    _integrity,
    _load,
    _split,
    load_split,
    load_table,
)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- row counts


def test_adult_race_keeps_white_and_black_rows_without_missing_values():
    table = load_table(AdultParams(protected="race"))
    # 45,222 complete rows (adult.names), of which 38,903 White and 4,228 Black.
    assert len(table.y) == 43131
    assert np.bincount(table.a).tolist() == [4228, 38903]
    assert 0.09 <= 1 - table.a.mean() <= 0.11
    assert table.groups == ("Black", "White")
    assert not table.features.isna().any().any()


def test_adult_sex_keeps_all_races():
    table = load_table(AdultParams(protected="sex"))
    assert len(table.y) == 45222
    assert np.bincount(table.a).tolist() == [14695, 30527]
    assert table.groups == ("Female", "Male")
    assert set(table.features["race"]) == {"White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"}
    # Positive rate from adult.names (without unknowns): 24.78 %.
    assert table.y.mean() == pytest.approx(0.2478, abs=0.001)


def test_adult_openml_1590_keeps_every_row_and_ordinal_encodes_categories():
    table = load_table(AdultParams(protected="sex", variant="openml-1590"))
    complete = load_table(AdultParams(protected="sex"))
    # OpenML 1590: 48,842 rows, 23.93 % positive, fnlwgt a feature; 16,192 women.
    assert len(table.y) == 48842 and table.y.mean() == pytest.approx(0.2393, abs=0.0005)
    assert np.bincount(table.a).tolist() == [16192, 32650]
    assert "fnlwgt" in table.features.columns and "sex" not in table.features.columns
    assert all(pd.api.types.is_integer_dtype(d) for d in table.features.dtypes)
    # Codes of the sorted categories; '?' (2,799 missing workclass values, adult.names) sorts first.
    assert (table.features["workclass"] == 0).sum() == 2799
    assert sorted(set(complete.features["workclass"])) == ["Federal-gov", "Local-gov", "Private", "Self-emp-inc",
                                                           "Self-emp-not-inc", "State-gov", "Without-pay"]
    assert table.features["workclass"].max() == 8  # '?', the 7 above and 'Never-worked' (only in rows with '?')
    # The split standardises the codes (numbers, not one-hot): one column per feature.
    split = load_split(AdultParams(protected="sex", variant="openml-1590", audit_size=32561), rng(0))
    assert split.X_train.shape == (16281, 13) and split.X_audit.shape == (32561, 13)


def test_adult_race3_keeps_every_row_in_three_groups():
    table = load_table(AdultParams(protected="race3"))
    # Black 4,228, White 38,903, and 2,091 of the three smaller races together.
    assert np.bincount(table.a).tolist() == [4228, 38903, 2091]
    assert table.groups == ("Black", "White", "Other") and "race" not in table.features
    split = load_split(AdultParams(protected="race3", audit_size=500, train_size=500), np.random.default_rng(0))
    assert set(np.unique(split.a_audit)) == {0, 1, 2}


@pytest.mark.parametrize(("protected", "counts"), [("sex", [310, 690]), ("age", [190, 810])])
def test_german_has_1000_rows(protected, counts):
    table = load_table(GermanParams(protected=protected))
    assert len(table.y) == 1000
    assert np.bincount(table.a).tolist() == counts
    assert int(table.y.sum()) == 700  # 700 good, 300 bad credit risks
    assert "savings" in table.features and "unknown/ no savings account" in set(table.features["savings"])


@pytest.mark.parametrize(
    ("protected", "filter_", "rows", "counts"),
    [
        ("race", "propublica", 5278, [3175, 2103]),
        ("race", "none", 6150, [3696, 2454]),
        ("sex", "propublica", 6172, [4997, 1175]),
        ("sex", "none", 7214, [5819, 1395]),
    ],
)
def test_compas_counts_with_and_without_propublica_filter(protected, filter_, rows, counts):
    table = load_table(CompasParams(protected=protected, filter=filter_))
    assert len(table.y) == rows
    assert np.bincount(table.a).tolist() == counts
    assert not {"decile_score", "score_text", "two_year_recid"} & set(table.features.columns)


def test_compas_y_is_no_recidivism():
    raw = pd.read_csv(_integrity.DATA_DIR / "compas-scores-two-years.csv.gz")
    table = load_table(CompasParams(protected="sex", filter="none"))
    np.testing.assert_array_equal(table.y, 1 - raw["two_year_recid"].to_numpy())


def test_compas_expanded_features_cross_every_pair_of_binned_columns():
    standard = load_table(CompasParams(protected="race", filter="none"))
    expanded = load_table(CompasParams(protected="race", filter="none", features="expanded"))
    np.testing.assert_array_equal(standard.y, expanded.y)
    np.testing.assert_array_equal(standard.a, expanded.a)
    base = list(standard.features.columns)
    pairs = [f"{c1}*{c2}" for i, c1 in enumerate(base) for c2 in base[i + 1:]]
    assert list(expanded.features.columns) == base + pairs
    # Each cross is the pair of its columns' values, so it determines both of them.
    row = expanded.features.iloc[0]
    assert row["age*priors_count"] == f"{row['age']}|{row['priors_count']}"
    assert expanded.features["priors_count"].nunique() == 8 and expanded.features["age"].nunique() == 11


def test_compas_expanded_features_have_more_directions_than_table2_hypotheses():
    # The point of the expanded encoding (study compas-table2-span): linear models on it span more than
    # the 200 random hypotheses of Table II, while the standard encoding has 12 columns.
    standard = load_split(CompasParams(protected="race", filter="none", audit_size=1538), rng(0))
    expanded = load_split(CompasParams(protected="race", filter="none", audit_size=1538, features="expanded"), rng(0))
    assert standard.X_train.shape[1] == 12
    np.testing.assert_array_equal(standard.a_train, expanded.a_train)
    assert np.linalg.matrix_rank(expanded.X_train) > 200


# --------------------------------------------------------------------------- encodings

ALL_REAL = [
    (AdultParams(protected="race"), "race"),
    (AdultParams(protected="sex"), "sex"),
    (GermanParams(protected="sex"), "status_sex"),
    (GermanParams(protected="age"), "age"),
    (CompasParams(protected="race"), "race"),
    (CompasParams(protected="sex"), "sex"),
]


@pytest.mark.parametrize(("params", "column"), ALL_REAL, ids=lambda p: getattr(p, "protected", p))
def test_split_types_and_protected_column_absent(params, column):
    split = load_split(params, rng(1))
    assert isinstance(split, Split) and isinstance(split.table, Table)
    for arr in (split.y_train, split.a_train, split.y_audit, split.a_audit):
        assert arr.dtype == np.int8
        assert set(np.unique(arr)) == {0, 1}
    assert split.X_train.dtype == split.X_audit.dtype == np.float64
    assert split.X_audit.shape == (params.audit_size, len(split.feature_names))
    assert split.X_train.shape[0] == len(split.table.y) - params.audit_size
    assert all(name != column and not name.startswith(column + "_") for name in split.feature_names)
    assert column not in split.table.features.columns


def test_preprocessing_is_fitted_on_training_rows_only():
    split = load_split(GermanParams(), rng(2))
    j = split.feature_names.index("credit_amount")
    assert split.X_train[:, j].mean() == pytest.approx(0.0, abs=1e-12)
    assert split.X_train[:, j].std() == pytest.approx(1.0, abs=1e-12)
    assert abs(split.X_audit[:, j].mean()) > 1e-6  # audit rows did not shape the scaler


def test_cache_returns_copies_callers_cannot_corrupt():
    first = load_table(GermanParams())
    first.features.loc[:, "duration"] = -1
    with pytest.raises(ValueError, match="assignment destination is read-only"):  # numpy's refusal: y is frozen
        first.y[0] = 1 - first.y[0]
    again = load_table(GermanParams())
    assert (again.features["duration"] > 0).all()


# --------------------------------------------------------------------------- seeding


def test_same_seed_same_split_and_different_seed_different_audit_set():
    one, two, other = (load_split(AdultParams(), rng(seed)) for seed in (7, 7, 8))
    for field in ("X_train", "y_train", "a_train", "X_audit", "y_audit", "a_audit"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field))
    assert one.feature_names == two.feature_names
    # Two uniform 1000-row draws out of 43,131 share ~23 rows; identical ones mean the seed is ignored.
    shared = {row.tobytes() for row in one.X_audit} & {row.tobytes() for row in other.X_audit}
    assert len(shared) < 200


def test_synthetic_same_seed_identical_arrays():
    params = SyntheticParams(audit_size=500, minority=60, train_size=800, n_features=4)
    one, two = load_split(params, rng(3)), load_split(params, rng(3))
    for field in ("X_train", "y_train", "a_train", "X_audit", "y_audit", "a_audit"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field))
    assert one.feature_names == ("x0", "x1", "x2", "x3")


@pytest.mark.parametrize(("audit_size", "minority", "train_size"), [(1000, 100, 5000), (200, 1, 333), (50, 49, 7)])
def test_synthetic_minority_count_is_exact(audit_size, minority, train_size):
    params = SyntheticParams(audit_size=audit_size, minority=minority, train_size=train_size)
    split = load_split(params, rng(4))
    assert split.a_audit.size == audit_size and int((split.a_audit == 0).sum()) == minority
    assert split.a_train.size == train_size
    assert int((split.a_train == 0).sum()) == round(train_size * minority / audit_size)


def test_synthetic_strength_controls_how_well_x_predicts_a():
    def auc(strength: float) -> float:
        params = SyntheticParams(audit_size=2000, minority=600, train_size=4000, strength=strength)
        split = load_split(params, rng(5))
        model = LogisticRegression().fit(split.X_train, split.a_train)
        return roc_auc_score(split.a_audit, model.decision_function(split.X_audit))

    assert 0.45 <= auc(0.0) <= 0.55
    assert auc(3.0) > 0.8


def test_synthetic_needs_a_generator():
    with pytest.raises(ConfigError, match=re.escape(_load.MSG_SYNTHETIC_RNG.format(rng=None))):
        load_table(SyntheticParams())


# --------------------------------------------------------------------------- integrity


def test_vendored_files_match_recorded_digests():
    for name, expected in _integrity.EXPECTED_SHA256.items():
        assert _integrity.sha256_of(_integrity.DATA_DIR / name) == expected


def test_altered_digest_is_detected_on_load(monkeypatch):
    name = "german.data.gz"
    actual = _integrity.EXPECTED_SHA256[name]
    monkeypatch.setitem(_integrity.EXPECTED_SHA256, name, "0" * 64)
    message = _integrity.MSG_ALTERED.format(file=_integrity.DATA_DIR / name, expected="0" * 64, actual=actual)
    with pytest.raises(DatasetError, match=re.escape(message)):
        load_table(GermanParams())  # also after the table has been cached


def test_altered_and_missing_copies_are_detected(tmp_path):
    name = "german_values_maps.json"
    copy = tmp_path / name
    shutil.copyfile(_integrity.DATA_DIR / name, copy)
    assert _integrity.verify(name, tmp_path) == copy
    copy.write_bytes(copy.read_bytes() + b" ")
    expected = _integrity.EXPECTED_SHA256[name]
    altered = _integrity.MSG_ALTERED.format(file=copy, expected=expected, actual=_integrity.sha256_of(copy))
    with pytest.raises(DatasetError, match=re.escape(altered)):
        _integrity.verify(name, tmp_path)
    copy.unlink()
    with pytest.raises(DatasetError, match=re.escape(_integrity.MSG_MISSING.format(file=copy, expected=expected))):
        _integrity.verify(name, tmp_path)


# --------------------------------------------------------------------------- CSV


@pytest.fixture
def small_csv(tmp_path):
    gen = rng(9)
    n = 60
    frame = pd.DataFrame(
        {
            "income": gen.normal(50, 10, n).round(1),
            "city": gen.choice(["north", "south", "east"], n),
            "group": np.where(np.arange(n) % 3 == 0, "B", "A"),
            "approved": np.arange(n) % 2,
        }
    )
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_csv_loads_and_compares_values_as_text(small_csv):
    path, frame = small_csv
    params = CsvParams(path=str(path), label="approved", favourable="1", protected="group", privileged="A")
    table = load_table(params)
    np.testing.assert_array_equal(table.y, frame["approved"].to_numpy())
    np.testing.assert_array_equal(table.a, (frame["group"] == "A").to_numpy())
    assert list(table.features.columns) == ["income", "city"]
    split = load_split(params.model_copy(update={"audit_size": 20}), rng(0))
    assert split.X_train.shape == (40, 4)
    assert set(split.feature_names) == {"income", "city_east", "city_north", "city_south"}


def test_csv_numeric_column_with_stray_text_is_an_error_naming_it(tmp_path):
    # 3,000 rows of Adult's numeric columns with three typed-in words: read as text, they would become
    # thousands of one-hot categories and a different model, with exit 0.
    adult = pd.read_csv(_integrity.DATA_DIR / "adult.data.gz", header=None, skipinitialspace=True, nrows=3000)
    frame = pd.DataFrame({"age": adult[0], "hours": adult[12], "sex": adult[9], "income": adult[14]})
    frame["age"] = frame["age"].astype(object)
    frame.loc[[10, 500, 2999], "age"] = ["thirty", "n/a?", "x"]
    path = tmp_path / "typos.csv"
    frame.to_csv(path, index=False)
    params = CsvParams(path=str(path), label="income", favourable=">50K", protected="sex", privileged="Male")
    with pytest.raises(DatasetError) as exc:
        load_table(params)
    assert str(exc.value).startswith(f"column 'age' of {path} holds numbers except in 3 row(s): line 12 'thirty', "
                                     "line 502 'n/a?', line 3001 'x'")
    frame.loc[[10, 500, 2999], "age"] = None  # empty cells are missing values, dropped as before
    frame.to_csv(path, index=False)
    assert list(load_table(params).features.columns) == ["age", "hours"]


def test_csv_missing_column_names_it_and_lists_columns(small_csv):
    path, _ = small_csv
    params = CsvParams(path=str(path), label="approved", protected="group", privileged="A", features=["income", "zip"])
    message = _csv.MSG_MISSING_COLUMN.format(
        path=path, column="zip", role="feature", columns=["income", "city", "group", "approved"]
    )
    with pytest.raises(DatasetError, match=re.escape(message)):
        load_table(params)


def test_csv_audit_set_without_a_group_is_refused(tmp_path):
    path = tmp_path / "rare.csv"
    pd.DataFrame({"x": np.arange(40.0), "g": [0] + [1] * 39, "y": np.arange(40) % 2}).to_csv(path, index=False)
    params = CsvParams(path=str(path), label="y", protected="g", privileged=1, audit_size=2)
    misses = [s for s in range(50) if 0 not in _split.draw_indices(load_table(params), 2, None, rng(s))[0]]
    seed = misses[0]  # the a=0 row is drawn with probability 1/20
    message = _split.MSG_ONE_GROUP.format(name="csv", missing=0, group="g != 1")
    with pytest.raises(DatasetError, match=re.escape(message)):
        load_split(params, rng(seed))


# --------------------------------------------------------------------------- validation


def test_sizes_beyond_row_count_raise_config_error():
    message = _split.MSG_SIZES.format(
        audit_size=300, train_size=800, total=1100, rows=1000, name="german", protected="sex"
    )
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_split(GermanParams(audit_size=300, train_size=800), rng(0))
    with pytest.raises(ConfigError, match=re.escape("audit_size=1000 leaves no training rows")):
        load_split(GermanParams(audit_size=1000), rng(0))


def test_params_reject_unknown_keys_and_pick_the_model_by_name():
    with pytest.raises(ValidationError, match="extra_forbidden"):
        AdultParams(protected="race", seed=3)
    adapter = TypeAdapter(DatasetParams)
    with pytest.raises(ValidationError, match="extra_forbidden"):
        adapter.validate_python({"name": "german", "protected": "sex", "filter": "none"})
    assert isinstance(adapter.validate_python({"name": "compas", "filter": "none"}), CompasParams)
    assert set(adapter.json_schema()["discriminator"]["mapping"]) == set(DATASET_NAMES)


def test_params_validate_ranges():
    with pytest.raises(ValidationError, match="minority must satisfy"):
        SyntheticParams(audit_size=100, minority=100)
    with pytest.raises(ValidationError, match="greater than or equal to 2"):
        AdultParams(audit_size=1)
    with pytest.raises(ValidationError, match="cannot also be listed in features"):
        CsvParams(path="x.csv", label="y", protected="g", privileged=1, features=["g"])
    assert hash(CsvParams(path="x.csv", label="y", protected="g", privileged=1, features=["a"]))
