"""Reader for a user's own CSV file.

The user names the label column and its favourable value, and the protected column and
its privileged value. Values are compared as text so ``"1"`` in a TOML spec matches the
integer 1 pandas reads; an integer column that pandas widened to float (``1.0``) still
matches ``1``. Rows with a missing value in any used column are dropped, as Adult's
``"?"`` rows are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from parley.protocols.errors import DatasetError
from parley.scenarios.datasets._params import CsvParams
from parley.scenarios.datasets._table import Table

__all__ = [
    "read_csv",
    "MSG_NO_FILE",
    "MSG_MISSING_COLUMN",
    "MSG_VALUE_ABSENT",
    "MSG_ONE_VALUE",
    "MSG_NO_ROWS",
    "MSG_STRAY_TEXT",
]

MSG_NO_FILE = "CSV file {path} does not exist"
MSG_MISSING_COLUMN = "CSV file {path} has no column {column!r} (named as {role}); its columns are: {columns}"
MSG_VALUE_ABSENT = "{role} value {value!r} never occurs in column {column!r} of {path}; values seen: {seen}"
MSG_ONE_VALUE = (
    "every row of column {column!r} in {path} equals the {role} value {value!r}; "
    "rows of both kinds are needed"
)
MSG_NO_ROWS = "CSV file {path} has no row without missing values in the used columns"
MSG_STRAY_TEXT = ("column {column!r} of {path} holds numbers except in {count} row(s): {examples}; "
                  "fix those cells or leave them empty (a column of text would become {levels} categories)")
#: A text column whose non-empty cells are numbers in at least this share is a numeric column with typos.
NUMERIC_SHARE = 0.9


def _check_numeric(frame: pd.DataFrame, columns: list[str], path: Path) -> None:
    """Refuse a numeric column that pandas read as text because a few cells are not numbers.

    One stray word among thousands of ages would turn the column into thousands of one-hot
    categories and quietly change every model; the error names the column and the first bad
    cells by their line in the file (the header is line 1).
    """
    for column in columns:
        values = frame[column]
        if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
            continue
        present = values.dropna()
        numbers = pd.to_numeric(present, errors="coerce")
        bad = numbers.isna()
        if present.empty or not bad.any() or 1 - bad.mean() < NUMERIC_SHARE:
            continue
        rows = present.index[bad.to_numpy()]
        examples = ", ".join(f"line {row + 2} {present[row]!r}" for row in rows[:5])
        raise DatasetError(MSG_STRAY_TEXT.format(column=column, path=path, count=len(rows), examples=examples,
                                                 levels=present.nunique()))


def _as_text(values: pd.Series) -> pd.Series:
    """Cells as text; integral floats lose their ``.0`` so ``1.0`` reads ``"1"``."""
    if pd.api.types.is_float_dtype(values):
        integral = values == np.round(values)
        return values.map(lambda v: str(int(v))).where(integral, values.astype(str))
    return values.astype(str)


def _value_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _indicator(frame: pd.DataFrame, column: str, value: object, role: str, path: Path) -> np.ndarray:
    text = _as_text(frame[column])
    hit = (text == _value_text(value)).to_numpy()
    if not hit.any():
        seen = sorted(text.unique())[:20]
        raise DatasetError(MSG_VALUE_ABSENT.format(role=role, value=value, column=column, path=path, seen=seen))
    if hit.all():
        raise DatasetError(MSG_ONE_VALUE.format(column=column, path=path, role=role, value=value))
    out = hit.astype(np.int8)
    out.setflags(write=False)
    return out


def read_csv(params: CsvParams) -> Table:
    """Read a user CSV into a :class:`Table`.

    Raises
    ------
    DatasetError
        If the file is missing, a named column is absent (the message lists the file's
        columns), or the favourable/privileged value never occurs (or is all there is).
    """
    path = Path(params.path)
    if not path.is_file():
        raise DatasetError(MSG_NO_FILE.format(path=path))
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot parse CSV file {path}: {exc}") from exc
    features = list(params.features) if params.features is not None else [
        c for c in frame.columns if c not in (params.label, params.protected)
    ]
    named = [(params.label, "label"), (params.protected, "protected")] + [(c, "feature") for c in features]
    for column, role in named:
        if column not in frame.columns:
            raise DatasetError(
                MSG_MISSING_COLUMN.format(path=path, column=column, role=role, columns=list(frame.columns))
            )
    if not features:
        raise DatasetError(
            f"CSV file {path} has no feature column besides {params.label!r} and {params.protected!r}"
        )
    _check_numeric(frame, features, path)
    frame = frame[[params.label, params.protected, *features]].dropna().reset_index(drop=True)
    if frame.empty:
        raise DatasetError(MSG_NO_ROWS.format(path=path))
    y = _indicator(frame, params.label, params.favourable, "favourable", path)
    a = _indicator(frame, params.protected, params.privileged, "privileged", path)
    return Table(
        name="csv",
        features=frame[features].copy(),
        y=y,
        a=a,
        protected=params.protected,
        groups=(f"{params.protected} != {params.privileged}", f"{params.protected} == {params.privileged}"),
        label=f"{params.label} == {params.favourable}",
    )
