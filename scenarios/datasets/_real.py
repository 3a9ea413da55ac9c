"""Readers for the three public data sets the papers use: Adult, German Credit and COMPAS.

Sources (vendored as gzip in ``data/``, digests in :mod:`._integrity`):

- UCI Adult (1994 census income), Kohavi and Becker; UCI ML Repository, CC BY 4.0.
  32,561 + 16,281 rows (``adult.data`` + ``adult.test``).
- UCI Statlog (German Credit Data), Hofmann; UCI ML Repository, CC BY 4.0. 1,000 rows.
- ProPublica COMPAS two-year recidivism (``compas-scores-two-years.csv``), from
  ProPublica's public analysis "Machine Bias" (Angwin et al., 2016). 7,214 rows.

Each reader returns a :class:`Table` whose ``a = 1`` is the advantaged group and ``y = 1``
the favourable outcome; the protected column is removed from the features.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from parley.scenarios.datasets._integrity import verify
from parley.scenarios.datasets._params import AdultParams, CompasParams, GermanParams
from parley.scenarios.datasets._table import Table

__all__ = ["read_adult", "read_german", "read_compas", "FILES"]

# Vendored files each reader needs; the loader verifies them before every read.
FILES: dict[str, tuple[str, ...]] = {
    "adult": ("adult.data.gz", "adult.test.gz"),
    "german": ("german.data.gz", "german_values_maps.json"),
    "compas": ("compas-scores-two-years.csv.gz",),
}

# Column names and order from adult.names.
ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip

# The 20 attributes of german.doc in file order, then the label. The categorical names are
# the keys of german_values_maps.json so the A-codes can be mapped to readable values.
GERMAN_COLUMNS = (
    "status", "duration", "credit_history", "purpose", "credit_amount", "savings",
    "present_employment", "installment_rate", "status_sex", "other_debtors",
    "present_residence", "property", "age", "installment_plans", "housing",
    "existing_credits", "job", "num_dependents", "telephone", "foreign_worker", "credit",
)  # fmt: skip
GERMAN_MALE_CODES = ("A91", "A93", "A94")  # A92, A95 are female
GERMAN_AGE_THRESHOLD = 25  # a = 1 iff age > 25, the usual split in the fairness literature

COMPAS_FEATURES = (
    "age", "age_cat", "sex", "race", "juv_fel_count", "juv_misd_count",
    "juv_other_count", "priors_count", "c_charge_degree",
)  # fmt: skip


#: Bin edges (right-closed) of COMPAS's numeric columns for ``features="expanded"``.
COMPAS_BINS = {
    "age": (-np.inf, 21, 23, 25, 28, 31, 35, 40, 45, 50, 60, np.inf),
    "juv_fel_count": (-np.inf, 0, 1, np.inf),
    "juv_misd_count": (-np.inf, 0, 1, np.inf),
    "juv_other_count": (-np.inf, 0, 1, np.inf),
    "priors_count": (-np.inf, 0, 1, 2, 3, 5, 8, 12, np.inf),
}


def expand_compas(features: pd.DataFrame) -> pd.DataFrame:
    """COMPAS features as categories: each column binned, plus every pairwise cross of them.

    Numeric columns are cut at :data:`COMPAS_BINS`; every column then becomes text, and each
    pair (c1, c2) adds a column ``c1*c2`` whose value is the pair of values, so one-hot
    encoding gives every main effect and every pairwise interaction of the bins (several hundred
    indicators against 12 for the standard encoding). Linear models on these span far more
    directions than the distributed-fair-learning paper's 200 random hypotheses can, so the
    accepted hypotheses of Alg. 1 span a proper subspace (docs/reproductions.md, Table II).
    """
    binned = pd.DataFrame(index=features.index)
    for column in features.columns:
        if column in COMPAS_BINS:
            codes = pd.cut(features[column], bins=list(COMPAS_BINS[column]), labels=False)
            binned[column] = "b" + codes.astype(int).astype(str)
        else:
            binned[column] = features[column].astype(str)
    columns = list(binned.columns)
    crosses = {f"{c1}*{c2}": binned[c1] + "|" + binned[c2]
               for i, c1 in enumerate(columns) for c2 in columns[i + 1:]}
    return pd.concat([binned, pd.DataFrame(crosses, index=features.index)], axis=1)


def _frozen(values: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(values, dtype=np.int8)
    out.setflags(write=False)
    return out


def read_adult(params: AdultParams) -> Table:
    """Read UCI Adult: ``adult.data`` and ``adult.test`` concatenated.

    Rows with ``"?"`` in any used column are dropped (45,222 rows remain). ``y = 1`` means
    income >50K. ``protected="race"`` keeps White (``a = 1``) and Black (``a = 0``) rows
    only; ``protected="sex"`` keeps all races with Male ``a = 1`` and Female ``a = 0``.
    ``protected="race3"`` keeps every row with three groups: Black ``a = 0``, White ``a = 1`` and
    the other races together ``a = 2`` (Asian-Pac-Islander, Amer-Indian-Eskimo, Other; too few
    rows each for a group of their own), for k-ary protocols such as ``rr-release``.
    ``fnlwgt`` is dropped: it is the census sampling weight (how many people a row stands
    for, see adult.names), not an attribute of the person, and as a feature it only adds noise.

    ``variant="openml-1590"`` reads the same files as OpenML data set 1590 (the form the
    reconstruction-correction authors load): all 48,842 rows, ``fnlwgt`` kept, a missing value
    ``"?"`` a category of its own, and every categorical column ordinal-encoded (integer codes
    of its sorted categories, as scikit-learn's ``OrdinalEncoder``), so they reach the models as
    numbers rather than one-hot indicators.
    """
    train_path, test_path = (verify(f) for f in FILES["adult"])
    read = dict(header=None, names=ADULT_COLUMNS, skipinitialspace=True, na_values="?", keep_default_na=False)
    frame = pd.concat(
        # adult.test opens with a "|1x3 Cross validator" line and its labels end with ".".
        [pd.read_csv(train_path, **read), pd.read_csv(test_path, skiprows=1, **read)],
        ignore_index=True,
    )
    openml = params.variant == "openml-1590"
    if openml:
        categorical = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c]) and c != "income"]
        frame = frame.fillna({c: "?" for c in categorical})
    else:
        frame = frame.drop(columns="fnlwgt").dropna().reset_index(drop=True)
    income = frame.pop("income").str.rstrip(".")
    groups: tuple[str, ...]
    if params.protected == "race":
        keep = frame["race"].isin(["White", "Black"]).to_numpy()
        frame, income = frame[keep].reset_index(drop=True), income[keep].reset_index(drop=True)
        a, groups = frame.pop("race") == "White", ("Black", "White")
    elif params.protected == "race3":
        race = frame.pop("race")
        a, groups = np.where(race == "Black", 0, np.where(race == "White", 1, 2)), ("Black", "White", "Other")
    else:
        a, groups = frame.pop("sex") == "Male", ("Female", "Male")
    if openml:
        for column in [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]:
            frame[column] = pd.Categorical(frame[column], categories=sorted(frame[column].unique())).codes
    return Table(
        name="adult",
        features=frame,
        y=_frozen(income == ">50K"),
        a=_frozen(a),
        protected=params.protected,
        groups=groups,
        label="income >50K",
    )


def read_german(params: GermanParams) -> Table:
    """Read UCI Statlog German Credit (1,000 rows, 20 attributes).

    ``y = 1`` means a good credit risk (code 1), ``y = 0`` a bad one (code 2). Categorical
    A-codes are mapped to readable values through ``german_values_maps.json``.
    ``protected="sex"``: ``a = 1`` for the male personal-status codes A91, A93, A94 and
    ``a = 0`` for the female codes A92, A95; the personal-status column is removed, since
    it is sex combined with marital status and its marital categories differ by sex.
    ``protected="age"``: ``a = 1`` iff age > 25 (the usual threshold in the fairness
    literature: applicants up to 25 are the younger, disadvantaged group); the age column
    is removed.
    """
    data_path, maps_path = (verify(f) for f in FILES["german"])
    frame = pd.read_csv(data_path, sep=" ", header=None, names=GERMAN_COLUMNS, dtype={"status_sex": str})
    maps = json.loads(maps_path.read_text())
    credit = frame.pop("credit").astype(str).map(maps["credit"])
    status_sex = frame["status_sex"].copy()
    for column, mapping in maps.items():
        if column in frame:  # the digest check guarantees every code has a mapping
            readable = {code: v.strip() if isinstance(v, str) else v for code, v in mapping.items()}
            frame[column] = frame[column].map(readable)
    if params.protected == "sex":
        frame = frame.drop(columns="status_sex")
        a, groups = status_sex.isin(GERMAN_MALE_CODES), ("female", "male")
    else:
        a = frame.pop("age") > GERMAN_AGE_THRESHOLD
        groups = (f"age <= {GERMAN_AGE_THRESHOLD}", f"age > {GERMAN_AGE_THRESHOLD}")
    return Table(
        name="german",
        features=frame,
        y=_frozen(credit == "good"),
        a=_frozen(a),
        protected=params.protected,
        groups=groups,
        label="good credit risk",
    )


def read_compas(params: CompasParams) -> Table:
    """Read ProPublica's COMPAS two-year recidivism data (7,214 rows).

    ``y = 1`` means NO recidivism within two years (``two_year_recid == 0``), the
    favourable outcome. ``filter="propublica"`` applies ProPublica's filter
    (``days_b_screening_arrest`` within [-30, 30], ``is_recid != -1``,
    ``c_charge_degree != "O"``, ``score_text != "N/A"``), leaving 6,172 rows; ``"none"``
    keeps every row. ``protected="race"`` keeps African-American (``a = 0``) and
    Caucasian (``a = 1``) rows only. ``protected="sex"`` keeps all rows with Male
    ``a = 0`` and Female ``a = 1``: ``a = 1`` is always the group COMPAS rates as lower
    risk (women are labelled medium/high risk less often than men, as Caucasians are
    less often than African-Americans), so ``a = 1`` is the advantaged group for both
    attributes. Features: age, age_cat, sex, race, juvenile felony/misdemeanour/other
    counts, priors_count and c_charge_degree, minus the protected column;
    ``decile_score`` and ``score_text`` are the COMPAS output and never features.
    ``features="expanded"`` replaces them by :func:`expand_compas` of the same columns.
    """
    (path,) = (verify(f) for f in FILES["compas"])
    # keep_default_na=False so a literal "N/A" score_text stays a string the filter can see.
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    if params.filter == "propublica":
        keep = (
            frame["days_b_screening_arrest"].between(-30, 30)
            & (frame["is_recid"] != -1)
            & (frame["c_charge_degree"] != "O")
            & (frame["score_text"] != "N/A")
        )
        frame = frame[keep]
    if params.protected == "race":
        frame = frame[frame["race"].isin(["African-American", "Caucasian"])]
    frame = frame.reset_index(drop=True)
    y = frame["two_year_recid"] == 0
    features = frame[list(COMPAS_FEATURES)].copy()
    if params.protected == "race":
        a, groups = features.pop("race") == "Caucasian", ("African-American", "Caucasian")
    else:
        a, groups = features.pop("sex") == "Female", ("Male", "Female")
    if params.features == "expanded":
        features = expand_compas(features)
    return Table(
        name="compas",
        features=features,
        y=_frozen(y),
        a=_frozen(a),
        protected=params.protected,
        groups=groups,
        label="no recidivism within two years",
    )
