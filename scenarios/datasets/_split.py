"""Split a :class:`Table` into training and audit sets and preprocess them.

The audit set (held by the compliance party) is drawn uniformly without replacement; the
training set comes from the remaining rows, so the two never share a row. Preprocessing
(one-hot encoding of categorical columns, standardisation of numeric ones) is fitted on
the training rows only, as the data center would: the audit set must not leak into the
model through the scaler's means or the encoder's categories.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from parley.protocols.errors import ConfigError, DatasetError
from parley.scenarios.datasets._load import load_table
from parley.scenarios.datasets._params import SyntheticParams
from parley.scenarios.datasets._registry import dataset_of
from parley.scenarios.datasets._table import Split, Table

__all__ = [
    "load_split",
    "split_table",
    "draw_indices",
    "MSG_SIZES",
    "MSG_NO_TRAIN_ROWS",
    "MSG_ONE_GROUP",
    "MSG_COLUMN_TYPE",
]

MSG_SIZES = (
    "audit_size={audit_size} + train_size={train_size} = {total} exceeds the {rows} rows "
    "available in {name} (protected={protected})"
)
MSG_NO_TRAIN_ROWS = (
    "audit_size={audit_size} leaves no training rows: {name} (protected={protected}) has {rows} rows"
)
MSG_ONE_GROUP = (
    "the audit set drawn from {name} has no row with a={missing} ({group}); "
    "the audit needs every group: use a larger audit_size or another seed"
)
MSG_COLUMN_TYPE = "feature column {column!r} of {name} has dtype {dtype}, neither numeric nor categorical"


def draw_indices(
    table: Table, audit_size: int, train_size: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw disjoint audit and training row indices uniformly without replacement.

    Raises
    ------
    ConfigError
        If ``audit_size + train_size`` exceeds the rows available (or, with
        ``train_size=None``, no row is left for training).
    """
    rows = len(table.y)
    context = dict(name=table.name, protected=table.protected, rows=rows, audit_size=audit_size)
    if train_size is None:
        if audit_size >= rows:
            raise ConfigError(MSG_NO_TRAIN_ROWS.format(**context))
        train_size = rows - audit_size
    elif audit_size + train_size > rows:
        raise ConfigError(MSG_SIZES.format(train_size=train_size, total=audit_size + train_size, **context))
    # The first audit_size entries of a uniform permutation are a uniform draw without
    # replacement; the next train_size entries are one from the remaining rows.
    order = rng.permutation(rows)
    return order[:audit_size], order[audit_size : audit_size + train_size]


def _is_categorical(dtype: Any) -> bool:
    import pandas as pd  # here, not at the top: importing the data set registry does not pay for pandas

    kinds = pd.api.types
    return (
        kinds.is_bool_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
        or kinds.is_object_dtype(dtype)
        or kinds.is_string_dtype(dtype)
    )


def _preprocess(
    table: Table, train_idx: np.ndarray, audit_idx: np.ndarray
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], tuple[str, ...]]:
    # Imported here so that `import parley.scenarios.datasets` (done by spec parsing and the
    # CLI) does not pay for scikit-learn.
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame = table.features
    categorical, numeric = [], []
    for column, dtype in frame.dtypes.items():
        if _is_categorical(dtype):
            categorical.append(column)
        elif pd.api.types.is_numeric_dtype(dtype):
            numeric.append(column)
        else:
            raise DatasetError(MSG_COLUMN_TYPE.format(column=column, name=table.name, dtype=dtype))
    # Categories as text: one encoder then handles bool, category and mixed object columns.
    frame = frame.astype({c: str for c in categorical})
    steps = []
    if categorical:
        steps.append(("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical))
    if numeric:
        steps.append(("numeric", StandardScaler(), numeric))
    transformer = ColumnTransformer(steps, verbose_feature_names_out=False)
    X_train = transformer.fit_transform(frame.iloc[train_idx])
    X_audit = transformer.transform(frame.iloc[audit_idx])
    names = tuple(str(n) for n in transformer.get_feature_names_out())
    return np.asarray(X_train, dtype=np.float64), np.asarray(X_audit, dtype=np.float64), names


def split_table(table: Table, audit_idx: np.ndarray, train_idx: np.ndarray) -> Split:
    """Build a :class:`Split` from given row indices, preprocessing on the training rows."""
    X_train, X_audit, names = _preprocess(table, train_idx, audit_idx)
    return Split(
        X_train=X_train,
        y_train=table.y[train_idx].astype(np.int8),
        a_train=table.a[train_idx].astype(np.int8),
        X_audit=X_audit,
        y_audit=table.y[audit_idx].astype(np.int8),
        a_audit=table.a[audit_idx].astype(np.int8),
        feature_names=names,
        table=table,
    )


def load_split(params: Any, rng: np.random.Generator, table: Table | None = None) -> Split:
    """Load a data set and split it into training and audit sets.

    Parameters
    ----------
    params : DatasetParams
        Which data set; ``audit_size`` and ``train_size`` fix the set sizes.
    rng : numpy.random.Generator
        Draws the audit and training rows (and generates synthetic data); the same seed
        gives identical arrays.
    table : Table, optional
        The parsed table of ``params``, when the caller already holds it (a study shares
        one copy through Ray's object store); ignored for seeded data sets (synthetic),
        which are generated from ``rng``.

    Returns
    -------
    Split
        float64 design matrices, int8 ``y``/``a``, the feature names and the table.

    Raises
    ------
    ConfigError
        The requested sizes exceed the rows available.
    DatasetError
        The audit set drawn from a real data set misses a group, or loading failed.
    """
    if table is None or dataset_of(params).seeded:
        table = load_table(params, rng)
    if isinstance(params, SyntheticParams):
        # The generator lays out the audit part first; keep it so N0 stays exact.
        audit_idx = np.arange(params.audit_size)
        train_idx = np.arange(params.audit_size, params.audit_size + params.train_size)
        return split_table(table, audit_idx, train_idx)
    audit_idx, train_idx = draw_indices(table, params.audit_size, params.train_size, rng)
    present = np.bincount(table.a[audit_idx], minlength=len(table.groups))
    for group in range(len(table.groups)):
        if present[group] == 0:
            raise DatasetError(MSG_ONE_GROUP.format(name=table.name, missing=group, group=table.groups[group]))
    return split_table(table, audit_idx, train_idx)
