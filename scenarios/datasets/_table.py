"""The two containers the data set layer hands out: a loaded :class:`Table` and a :class:`Split`.

They sit in their own module so that every reader (real, synthetic, CSV) and the split
code can import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where a table is loaded, not with the data set registry
    import numpy as np
    import pandas as pd

__all__ = ["Table", "Split"]


@dataclass(frozen=True)
class Table:
    """One data set after loading, before splitting.

    Attributes
    ----------
    name : str
        Data set name, one of :data:`DATASET_NAMES`.
    features : pandas.DataFrame
        Model inputs; the protected column and the label are removed.
    y : numpy.ndarray
        int8, 1 = favourable outcome (see ``label``).
    a : numpy.ndarray
        int8, 1 = advantaged/privileged group, 0 = disadvantaged group.
    protected : str
        Name of the protected attribute, e.g. ``"race"``.
    groups : tuple of str
        ``(label of a=0, label of a=1, ...)``, e.g. ``("Black", "White")``; more than two
        for a k-ary attribute (Adult ``race3``).
    label : str
        What ``y = 1`` means, e.g. ``"income >50K"``.
    rows_dropped : int
        Rows of the source the loader dropped for a missing value (a user CSV's blank cells); 0 if none
        or not counted.
    """

    name: str
    features: pd.DataFrame
    y: np.ndarray
    a: np.ndarray
    protected: str
    groups: tuple[str, ...]
    label: str
    rows_dropped: int = 0

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class Split:
    """A training set and an audit set, preprocessed on the training rows only.

    Attributes
    ----------
    X_train, X_audit : numpy.ndarray
        float64 design matrices (one-hot categorical columns, standardised numeric ones).
    y_train, y_audit, a_train, a_audit : numpy.ndarray
        int8 labels and protected attributes, same meaning as in :class:`Table`.
    feature_names : tuple of str
        Column names of the design matrices, from the fitted transformer.
    table : Table
        Provenance: name, protected attribute, group labels and label meaning.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    a_train: np.ndarray
    X_audit: np.ndarray
    y_audit: np.ndarray
    a_audit: np.ndarray
    feature_names: tuple[str, ...]
    table: Table
