"""UCI Communities and Crime, as Table I of the distributed-fair-learning paper uses it.

Source (vendored, SHA-256 checked on every load): ``communities.data.gz`` and
``communities.names``, Redmond; UCI ML Repository, CC BY 4.0. 1,994 communities, 128
columns (1990 US census, 1990 LEMAS police survey, 1995 FBI crime data), every
predictive column normalized to [0, 1] by the donors; ``?`` marks a missing value.

Hu, Liu, Wang & Lan (ICDM 2019, Sec. VI-A): "1993 communities described by 128 features;
community crime rate is the label; we treated a community as minority if its fraction of
African-American residents is above 0.5". The paper prints nothing more; our choices:

- **Columns.** The five non-predictive columns (state, county, community, communityname,
  fold; communities.names) are dropped, and so are the 22 police (LEMAS) columns missing
  in 1,675 of 1,994 rows each (84 %): no imputation can recover them. The complete police
  column ``LemasPctOfficDrugUn`` stays.
- **Rows.** The one row missing ``OtherPerCap`` is dropped, leaving **1,993 rows**, the
  paper's count. With ``racepctblack`` removed (it defines A) 99 features remain, the
  99 columns (``DataSample(:, 2:100)``) the authors' public Matlab code reads for Crime.
- **A.** ``racepctblack > 0.5`` is the minority (``a = 0``, 238 rows, 12 %); every other
  community ``a = 1``. ``racepctblack`` itself is not a feature (it would be A).
- **Label.** The paper's Table I reports a classifier error, so the normalized violent
  crime rate ``ViolentCrimesPerPop`` is cut at ``label_threshold`` (default 0.5, 13.9 %
  of communities above). ``y = 1`` is the favourable outcome, a rate *at or below* the
  threshold (parley's convention). 0.5 is a choice: it is the one that fits the paper's
  FRR row (error 0.110 below the 0.139 of the constant model; error parity 0.226 with
  error disparate 0.732 put the groups' errors near 0.31 and 0.084, which with 12 %
  minority gives 0.11). Statistical parity, error and error parity do not depend on
  which side is called 1; normed disparate does.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.scenarios.datasets._integrity import verify
from parley.scenarios.datasets._params import AuditSize, DatasetParamsBase, TrainSize
from parley.scenarios.datasets._registry import Dataset, register_dataset
from parley.scenarios.datasets._table import Table

__all__ = ["Crime", "CrimeParams", "CRIME_FILES", "NON_PREDICTIVE", "read_crime"]

CRIME_FILES = ("communities.data.gz", "communities.names")
#: Identifiers and the cross-validation fold of communities.names: never features.
NON_PREDICTIVE = ("state", "county", "community", "communityname", "fold")
LABEL_COLUMN = "ViolentCrimesPerPop"
PROTECTED_COLUMN = "racepctblack"
#: A column missing in more rows than this share is dropped; a row missing any other column is dropped.
MAX_MISSING_SHARE = 0.5


class CrimeParams(DatasetParamsBase):
    """UCI Communities and Crime; see :mod:`parley.scenarios.datasets._crime`."""

    name: Literal["crime"] = Field("crime", description="the data set (picks this parameter model)")
    protected: Literal["race"] = Field(
        "race", description="A: race (racepctblack > minority_threshold is the minority a = 0)")
    audit_size: AuditSize = 498  # 25 % of the 1,993 rows
    train_size: TrainSize = None
    minority_threshold: float = Field(
        0.5, gt=0.0, lt=1.0, description="a community is minority (a = 0) if racepctblack exceeds this (paper: 0.5)")
    label_threshold: float = Field(
        0.5, gt=0.0, lt=1.0,
        description="y = 1 (favourable) if the normalized violent crime rate is at or below this")


def _column_names(names_text: str) -> list[str]:
    return [line.split()[1] for line in names_text.splitlines() if line.startswith("@attribute")]


def read_crime(params: CrimeParams) -> Table:
    """Read UCI Communities and Crime: 1,993 rows, 99 features (module docstring)."""
    import pandas as pd

    data_path, names_path = (verify(f) for f in CRIME_FILES)
    columns = _column_names(names_path.read_text())
    frame = pd.read_csv(data_path, header=None, names=columns, na_values="?", keep_default_na=False)
    frame = frame.drop(columns=list(NON_PREDICTIVE))
    sparse = [c for c in frame.columns if frame[c].isna().mean() > MAX_MISSING_SHARE]
    frame = frame.drop(columns=sparse).dropna().reset_index(drop=True)
    crime = frame.pop(LABEL_COLUMN)
    black = frame.pop(PROTECTED_COLUMN)
    return Table(
        name="crime",
        features=frame.astype(np.float64),
        y=_frozen(crime <= params.label_threshold),
        a=_frozen(black <= params.minority_threshold),
        protected=params.protected,
        groups=(f"racepctblack > {params.minority_threshold:g}", f"racepctblack <= {params.minority_threshold:g}"),
        label=f"violent crime rate <= {params.label_threshold:g} (normalized)",
    )


def _frozen(values: object) -> np.ndarray:
    out = np.ascontiguousarray(values, dtype=np.int8)
    out.setflags(write=False)
    return out


@register_dataset
class Crime(Dataset[CrimeParams]):
    """UCI Communities and Crime (Hu et al.'s Table I): :func:`read_crime`."""

    name: ClassVar[str] = "crime"
    Params = CrimeParams
    summary: ClassVar[str] = "UCI Communities and Crime, A = racepctblack > 0.5 (minority), y = low crime rate"

    def load(self, rng: np.random.Generator | None) -> Table:
        return _cached(self.params).copy_fresh()


def _cached(params: CrimeParams) -> _Cached:
    return _CACHE.setdefault(params, _Cached(read_crime(params)))


class _Cached:
    """A parsed table kept per parameters; each load verifies the files and copies the features."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def copy_fresh(self) -> Table:
        import dataclasses

        for name in CRIME_FILES:
            verify(name)
        return dataclasses.replace(self.table, features=self.table.features.copy(deep=True))


_CACHE: dict[CrimeParams, _Cached] = {}
