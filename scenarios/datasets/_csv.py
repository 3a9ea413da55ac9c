"""Reader for a user's own CSV file.

The user names the label column and its favourable value, and the protected column and
its privileged value. Values are compared as text so ``"1"`` in a TOML spec matches the
integer 1 pandas reads; an integer column that pandas widened to float (``1.0``) still
matches ``1``. Rows with a missing value in any used column are dropped, as Adult's
``"?"`` rows are; how many is logged and kept in :attr:`Table.rows_dropped` (result.json's
``sizes.rows_dropped``, report.md). A label cell that is neither the favourable value nor a
declared unfavourable one (by default: the one other value of the column) is refused, naming
its line, so that a stray ``yes`` in a 0/1 column is not silently read as y = 0. Lines are
counted as in the file: the header is line 1 and blank lines count.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from parley.protocols.errors import ConfigError, DatasetError
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
    "MSG_STRAY_LABEL",
    "MSG_DELIMITER_HINT",
    "MSG_ROWS_DROPPED",
]

_log = logging.getLogger(__name__)

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
MSG_STRAY_LABEL = ("label column {column!r} of {path} holds {values} in {count} row(s) that mean neither y = 1 "
                   "(favourable = {favourable!r}) nor y = 0 ({unfavourable}): {examples}; fix those cells, or "
                   "list every value meaning y = 0 in dataset.unfavourable")
#: Added to :data:`MSG_MISSING_COLUMN` when the header read as one column holding another separator.
MSG_DELIMITER_HINT = ("; the header was read as one column but holds {name}: if cells are separated by {name}, "
                      "set delimiter = {toml} in [dataset] (on the command line: --set 'dataset.delimiter={toml}')")
MSG_ROWS_DROPPED = "CSV file {path}: {count} row(s) dropped for a missing value in a used column ({examples})"
#: Separators other than the comma, by name, as the hint names them.
DELIMITERS = {";": "semicolons", "\t": "tabs", "|": "pipes", ",": "commas"}
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
    out: np.ndarray = hit.astype(np.int8)
    out.setflags(write=False)
    return out


def _lines(index: pd.Index, count: int = 5) -> str:
    """``line 4, line 9, ...`` of the first ``count`` rows of ``index`` (header = line 1)."""
    more = f" and {len(index) - count} more" if len(index) > count else ""
    return ", ".join(f"line {row + 2}" for row in index[:count]) + more


def _delimiter_hint(columns: list[str], delimiter: str) -> str:
    """The hint for a header that was read as one column although it holds another separator."""
    if len(columns) != 1:
        return ""
    for char, name in DELIMITERS.items():
        if char != delimiter and char in str(columns[0]):
            return MSG_DELIMITER_HINT.format(name=name, toml=json.dumps(char))
    return ""


def _check_label(frame: pd.DataFrame, params: CsvParams, path: Path) -> None:
    """Refuse label cells that are neither the favourable value nor an unfavourable one (ConfigError naming lines).

    With ``unfavourable`` declared, every other value is refused; without, the column may hold the
    favourable value and one other: of any more, the most frequent other value is taken for y = 0
    and the rest are refused.
    """
    text = _as_text(frame[params.label])
    favourable = _value_text(params.favourable)
    if not (text == favourable).any():
        return  # the favourable value never occurs: _indicator says so, listing the values seen
    if params.unfavourable is not None:
        declared = params.unfavourable if isinstance(params.unfavourable, tuple) else (params.unfavourable,)
        allowed = {favourable, *map(_value_text, declared)}
        unfavourable = "unfavourable = " + ", ".join(repr(v) for v in declared)
    else:
        others = text[text != favourable].value_counts()
        if len(others) <= 1:
            return
        allowed = {favourable, others.index[0]}
        unfavourable = f"taken to be {others.index[0]!r}, the most frequent other value"
    stray = ~text.isin(allowed)
    if not stray.any():
        return
    rows = text.index[stray.to_numpy()]
    values = sorted(text[stray].unique())
    examples = ", ".join(f"line {row + 2} {text[row]!r}" for row in rows[:5])
    raise ConfigError(MSG_STRAY_LABEL.format(
        column=params.label, path=path, values="the value " + repr(values[0]) if len(values) == 1 else
        "the values " + ", ".join(map(repr, values[:10])), count=len(rows), favourable=params.favourable,
        unfavourable=unfavourable, examples=examples))


def read_csv(params: CsvParams) -> Table:
    """Read a user CSV into a :class:`Table`.

    Raises
    ------
    DatasetError
        If the file is missing, a named column is absent (the message lists the file's
        columns, and names the separator when the header holds another), or the
        favourable/privileged value never occurs (or is all there is).
    ConfigError
        A label cell means neither y = 1 nor y = 0 (the message names its line and value).
    """
    path = Path(params.path)
    if not path.is_file():
        raise DatasetError(MSG_NO_FILE.format(path=path))
    try:
        # Blank lines are kept (then skipped below) so that a row's index + 2 is its line in the file.
        frame = pd.read_csv(path, sep=params.delimiter, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot parse CSV file {path}: {exc}") from exc
    frame = frame[frame.notna().any(axis=1)]
    features = list(params.features) if params.features is not None else [
        c for c in frame.columns if c not in (params.label, params.protected)
    ]
    named = [(params.label, "label"), (params.protected, "protected")] + [(c, "feature") for c in features]
    for column, role in named:
        if column not in frame.columns:
            raise DatasetError(
                MSG_MISSING_COLUMN.format(path=path, column=column, role=role, columns=list(frame.columns))
                + _delimiter_hint(list(frame.columns), params.delimiter)
            )
    if not features:
        raise DatasetError(
            f"CSV file {path} has no feature column besides {params.label!r} and {params.protected!r}"
        )
    _check_numeric(frame, features, path)
    used = frame[[params.label, params.protected, *features]]
    missing = used.isna().any(axis=1)
    frame = used[~missing]
    if frame.empty:
        raise DatasetError(MSG_NO_ROWS.format(path=path))
    dropped = int(missing.sum())
    if dropped:
        _log.warning(MSG_ROWS_DROPPED.format(path=path, count=dropped, examples=_lines(used.index[missing.to_numpy()])))
    _check_label(frame, params, path)
    frame = frame.reset_index(drop=True)
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
        rows_dropped=dropped,
    )
