"""Parameters of the data sets a scenario can name (pydantic v2, frozen, no extra keys).

Each model carries a literal ``name`` so that :data:`DatasetParams` is a discriminated
union: a scenario file says ``name = "adult"`` and pydantic picks :class:`AdultParams`,
reporting errors against that model only. The models are frozen and therefore hashable,
which is what lets the loaders cache parsed tables keyed on the parameters.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AdultParams",
    "GermanParams",
    "CompasParams",
    "SyntheticParams",
    "CsvParams",
    "DatasetParams",
    "DatasetParamsBase",
    "DATASET_NAMES",
    "MSG_MINORITY_RANGE",
    "MSG_CSV_COLUMN_CLASH",
    "MSG_CSV_BOTH_CLASSES",
]

#: The built-in data sets (``DATASETS`` in :mod:`parley.scenarios.datasets` also holds the plug-ins).
DATASET_NAMES: tuple[str, ...] = ("adult", "german", "compas", "synthetic", "csv")

MSG_MINORITY_RANGE = "minority must satisfy 1 <= minority < audit_size={audit_size}; received minority={minority}"
MSG_CSV_COLUMN_CLASH = "{what} column {column!r} cannot also be listed in features"
MSG_CSV_BOTH_CLASSES = "the label value {value!r} cannot be both favourable and unfavourable"

# Sizes: an audit set needs at least one row of each group, hence >= 2.
AuditSize = Annotated[int, Field(ge=2, description="rows in the audit set (held by the compliance party)")]
TrainSize = Annotated[
    int | None,
    Field(ge=1, description="rows in the training set; None = every row not drawn for the audit set"),
]
Scalar = bool | int | float | str
#: What every data set's ``name`` field says.
_NAME_HELP = "the data set (picks this parameter model)"


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatasetParamsBase(_Params):
    """Base of a plug-in data set's parameters: its ``name`` and the sizes of the audit and training sets.

    A subclass fixes ``name`` to its data set's name (``name: Literal["mine"] = "mine"``)
    and adds its own fields; parley draws ``audit_size`` audit rows and ``train_size``
    training rows (None = every other row) from the table the data set loads.
    """

    name: str = Field(description=_NAME_HELP)
    audit_size: AuditSize = 1000
    train_size: TrainSize = None


class AdultParams(_Params):
    """UCI Adult (1994 census income); see :mod:`parley.scenarios.datasets._real`."""

    name: Literal["adult"] = Field("adult", description=_NAME_HELP)
    protected: Literal["race", "sex", "race3"] = Field(
        "race", description="A: race (White a = 1, Black a = 0, other rows dropped), sex (Male a = 1, Female a = 0) "
        "or race3 (Black 0, White 1, every other race 2)")
    audit_size: AuditSize = 1000
    train_size: TrainSize = None
    variant: Literal["complete", "openml-1590"] = Field(
        "complete", description="complete: the 45,222 rows without missing values, fnlwgt dropped, categories "
        "one-hot; openml-1590: all 48,842 rows as OpenML data set 1590 (fnlwgt kept, '?' a category of its own), "
        "categories ordinal-encoded")

    @property
    def group_count(self) -> int:
        """k, the number of values of A: 3 for ``race3``, else 2."""
        return 3 if self.protected == "race3" else 2


class GermanParams(_Params):
    """UCI Statlog German Credit; see :mod:`parley.scenarios.datasets._real`."""

    name: Literal["german"] = Field("german", description=_NAME_HELP)
    protected: Literal["sex", "age"] = Field(
        "sex", description="A: sex (a = 1 for the male personal-status codes) or age (a = 1 iff age > 25)")
    audit_size: AuditSize = 300
    train_size: TrainSize = None


class CompasParams(_Params):
    """ProPublica COMPAS two-year recidivism; see :mod:`parley.scenarios.datasets._real`.

    ``filter="propublica"`` applies ProPublica's row filter, ``"none"`` keeps every row.
    ``features="expanded"`` bins the numeric columns and adds every pairwise cross (see
    :func:`parley.scenarios.datasets._real.expand_compas`).
    """

    name: Literal["compas"] = Field("compas", description=_NAME_HELP)
    protected: Literal["race", "sex"] = Field(
        "race", description="A: race (Caucasian a = 1, African-American a = 0, other rows dropped) or sex "
        "(Female a = 1, Male a = 0)")
    audit_size: AuditSize = 1000
    train_size: TrainSize = None
    filter: Literal["propublica", "none"] = Field(
        "propublica", description="propublica: ProPublica's row filter (6,172 rows); none: every row (7,214)")
    features: Literal["standard", "expanded"] = Field(
        "standard", description="standard: the 8 columns (12 after encoding); expanded: every column binned and "
        "one-hot, plus every pairwise cross of the binned columns (hundreds of indicators)")


class SyntheticParams(_Params):
    """Synthetic data with an exact minority count; see :mod:`parley.scenarios.datasets._synthetic`.

    ``minority`` is N0, the exact number of ``a = 0`` rows in the audit set; the training
    set gets the same minority share, rounded. ``strength`` scales how far every feature's
    mean moves with ``a`` (0 = features independent of ``a``).
    """

    name: Literal["synthetic"] = Field("synthetic", description=_NAME_HELP)
    audit_size: AuditSize = 1000
    minority: int = Field(100, ge=1, description="exact count of a=0 rows in the audit set")
    train_size: int = Field(5000, ge=1, description="rows in the training set, with the audit set's minority share "
                                                   "(rounded)")
    strength: float = Field(1.0, ge=0.0, allow_inf_nan=False,
                            description="every feature's mean differs between the groups by this many standard "
                                        "deviations (0 = features independent of a)")
    n_features: int = Field(10, ge=1, description="feature columns x0, x1, ...")

    @model_validator(mode="after")
    def _minority_below_audit_size(self) -> SyntheticParams:
        if not 1 <= self.minority < self.audit_size:
            raise ValueError(MSG_MINORITY_RANGE.format(audit_size=self.audit_size, minority=self.minority))
        return self


class CsvParams(_Params):
    """A user CSV file; see :mod:`parley.scenarios.datasets._csv`.

    ``favourable`` is the ``label`` value meaning ``y = 1`` and ``privileged`` the
    ``protected`` value meaning ``a = 1``; both are compared to the file's cells after
    ``str()`` so that ``"1"`` matches ``1``. ``features=None`` uses every other column.
    ``features`` is stored as a tuple (a list is accepted) so the model stays hashable.
    """

    name: Literal["csv"] = Field("csv", description=_NAME_HELP)
    path: str = Field(min_length=1, description="the CSV file (in a scenario file, relative to that file's folder)")
    label: str = Field(min_length=1, description="the label column")
    favourable: Scalar = Field(1, description="the label value meaning y = 1 (compared as text)")
    unfavourable: Scalar | tuple[Scalar, ...] | None = Field(
        None, description="the label value(s) meaning y = 0 (compared as text); none = the one other value in the "
        "column: a label cell that is neither is refused, naming its line")
    protected: str = Field(min_length=1, description="the protected attribute's column (never a feature)")
    privileged: Scalar = Field(description="the protected value meaning a = 1 (compared as text)")
    features: tuple[str, ...] | None = Field(
        None, min_length=1, description="the feature columns; none = every column but label and protected")
    audit_size: AuditSize = 1000
    train_size: TrainSize = None
    delimiter: str = Field(",", min_length=1, max_length=1,
                           description="the character between cells: ',' (default), ';', '\\t' (tab) or '|'")

    @model_validator(mode="after")
    def _columns_distinct(self) -> CsvParams:
        if self.label == self.protected:
            raise ValueError(f"label and protected must be different columns; both are {self.label!r}")
        if self.features is not None:
            for what, column in (("label", self.label), ("protected", self.protected)):
                if column in self.features:
                    raise ValueError(MSG_CSV_COLUMN_CLASH.format(what=what, column=column))
            if len(set(self.features)) != len(self.features):
                raise ValueError(f"features lists a column twice: {list(self.features)}")
        unfavourable = self.unfavourable if isinstance(self.unfavourable, tuple) else (self.unfavourable,)
        if self.unfavourable is not None and str(self.favourable) in map(str, unfavourable):
            raise ValueError(MSG_CSV_BOTH_CLASSES.format(value=self.favourable))
        return self


DatasetParams = Annotated[
    AdultParams | GermanParams | CompasParams | SyntheticParams | CsvParams,
    Field(discriminator="name"),
]
"""Any data set's parameters; pydantic picks the model from the ``name`` key."""
