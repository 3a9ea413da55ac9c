r"""A user's own ACS extract as a CSV data set: ACSIncome and ACSPublicCoverage (Ferry et al., Table II).

The reconstruction-correction paper (Ferry et al., SaTML 2023, Sec. IV-B1, Table II) uses two data
sets of Ding, Hardt, Miller and Schmidt's folktables (NeurIPS 2021), built from the American
Community Survey (ACS) Public Use Microdata Sample of Texas, 2018:

- **ACSIncome**: people older than 16 who worked at least one hour a week and earned more than
  $100 (folktables' ``adult_filter``: ``AGEP > 16``, ``PINCP > 100``, ``WKHP > 0``, ``PWGTP >= 1``);
  y = 1 iff ``PINCP > 50000``; A = race binarized, white (``RAC1P == 1``, a = 1) or other (a = 0).
  Features: ``AGEP, COW, SCHL, MAR, OCCP, POBP, RELP, WKHP, SEX`` (folktables' list without
  ``RAC1P``, which is A).
- **ACSPublicCoverage**: people younger than 65 with an income of at most $30,000 (folktables'
  ``public_coverage_filter``: ``AGEP < 65``, ``PINCP <= 30000``); y = 1 iff covered by public health
  insurance (``PUBCOV == 1``); A = age, the youngest quartile (``AGEP`` at most its first quartile on
  the filtered rows, a = 0) or the others (a = 1). Features: folktables' list without ``AGEP``
  (it is A): ``SCHL, MAR, SEX, DIS, ESP, CIT, MIG, MIL, ANC, NATIVITY, DEAR, DEYE, DREM, PINCP,
  ESR, ST, FER, RAC1P``.

parley cannot ship these files: the PUMS person files are downloaded from the Census Bureau at
run time (folktables' ``ACSDataSource(survey_year="2018", horizon="1-Year",
survey="person").get_data(states=["TX"], download=True)``, or the Bureau's ``csv_ptx.zip``), so they cannot be
vendored. :func:`write_acs_csv` turns a user's extract into
the CSV that parley's generic ``csv`` data set reads (columns ``y`` and ``a`` added, A's source
column never a feature)::

    python -m parley.scenarios.acs income psam_p48.csv acs-income.csv
    parley run adult-correction --set dataset.name=csv --set dataset.path=acs-income.csv \
        --set dataset.label=y --set dataset.protected=a --set dataset.privileged=1 ...

The input is either the raw person file (numeric ``PINCP``, ``PUBCOV`` coded 1/2) or folktables'
own output (``df_to_pandas``: the features and a True/False label column under the target's
name). A filter condition whose column the extract lacks is skipped and named in the summary
(folktables' output is already filtered and has no ``PWGTP``). Category codes (``COW``, ``SCHL``,
``OCCP``, ...) stay numbers, as folktables gives them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from parley.protocols.errors import ConfigError, DatasetError

__all__ = ["ACS_TASKS", "AcsTask", "acs_frame", "write_acs_csv", "MSG_NO_COLUMNS", "MSG_UNKNOWN_TASK",
           "MSG_NO_ROWS", "MSG_BAD_LABEL"]

MSG_UNKNOWN_TASK = "unknown ACS task {task!r}; known tasks: {known}"
MSG_NO_COLUMNS = "ACS extract {path} lacks the column(s) {missing} that task {task!r} needs; its columns are: {columns}"
MSG_NO_ROWS = "ACS extract {path}: no row is left after task {task!r}'s filter ({conditions})"
MSG_BAD_LABEL = ("ACS extract {path}: column {column!r} holds {values}, neither numbers nor True/False; "
                 "task {task!r} reads it as {rule}")
MSG_ONE_GROUP = "ACS extract {path}: every row left is in one group of A ({rule}); both groups are needed"


@dataclass(frozen=True)
class AcsTask:
    """One folktables task as Ferry et al. use it: filter, label rule, A rule and features."""

    name: str
    features: tuple[str, ...]
    target: str
    label_rule: str  # text, for messages and the summary
    protected: str
    protected_rule: str
    filters: tuple[tuple[str, str, float], ...]  # (column, operator, value), folktables' filter

    def label(self, column: pd.Series) -> np.ndarray:
        hit = column > 50000 if self.name == "income" else column == 1
        return np.asarray(hit, dtype=np.int8)

    def group(self, column: pd.Series) -> np.ndarray:
        hit = column == 1 if self.name == "income" else column > column.quantile(0.25)
        return np.asarray(hit, dtype=np.int8)


ACS_TASKS: dict[str, AcsTask] = {
    "income": AcsTask(
        "income", ("AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX"), "PINCP", "PINCP > 50000",
        "RAC1P", "a = 1 iff RAC1P == 1 (white)",
        (("AGEP", ">", 16), ("PINCP", ">", 100), ("WKHP", ">", 0), ("PWGTP", ">=", 1))),
    "public-coverage": AcsTask(
        "public-coverage", ("SCHL", "MAR", "SEX", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR",
                            "DEYE", "DREM", "PINCP", "ESR", "ST", "FER", "RAC1P"), "PUBCOV", "PUBCOV == 1",
        "AGEP", "a = 0 iff AGEP <= its first quartile (the youngest quartile)",
        (("AGEP", "<", 65), ("PINCP", "<=", 30000))),
}

_OPS = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal}


def _task(task: str) -> AcsTask:
    if task not in ACS_TASKS:
        raise ConfigError(MSG_UNKNOWN_TASK.format(task=task, known=", ".join(ACS_TASKS)))
    return ACS_TASKS[task]


def _boolean(column: pd.Series) -> pd.Series | None:
    """A True/False column (folktables' label) as 1/0, or None if it is not one."""
    text = column.astype(str).str.strip().str.lower()
    if text.isin(["true", "false"]).all():
        return (text == "true").astype(np.int8)
    return None


def acs_frame(path: Path, task: str) -> tuple[pd.DataFrame, list[str]]:
    """The extract at ``path`` filtered as ``task`` says, with columns ``y`` and ``a`` and the features; notes.

    Raises
    ------
    ConfigError
        ``task`` is not one of :data:`ACS_TASKS`.
    DatasetError
        The file is missing or unreadable, lacks a needed column, has a label column that is neither
        numeric nor True/False, or keeps no row (or one group of A only) after the filter.
    """
    spec = _task(task)
    if not path.is_file():
        raise DatasetError(f"ACS extract {path} does not exist")
    try:
        frame = pd.read_csv(path, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot parse ACS extract {path}: {exc}") from exc
    needed = [*spec.features, spec.target, spec.protected]
    missing = [c for c in dict.fromkeys(needed) if c not in frame.columns]
    if missing:
        raise DatasetError(MSG_NO_COLUMNS.format(path=path, missing=", ".join(missing), task=task,
                                                 columns=", ".join(map(str, frame.columns))))
    notes = []
    labels = _boolean(frame[spec.target])
    if labels is None and not pd.api.types.is_numeric_dtype(frame[spec.target]):
        values = ", ".join(map(repr, frame[spec.target].astype(str).unique()[:5]))
        raise DatasetError(MSG_BAD_LABEL.format(path=path, column=spec.target, values=values, task=task,
                                                rule=spec.label_rule))
    keep = np.ones(len(frame), dtype=bool)
    applied = []
    for column, op, value in spec.filters:
        if column not in frame.columns or (column == spec.target and labels is not None):
            notes.append(f"filter {column} {op} {value:g} skipped: the extract has no numeric {column} column")
            continue
        values = pd.to_numeric(frame[column], errors="coerce")
        keep &= _OPS[op](values.to_numpy(), value) & values.notna().to_numpy()
        applied.append(f"{column} {op} {value:g}")
    frame = frame[keep].reset_index(drop=True)
    if labels is not None:
        labels = labels[keep].reset_index(drop=True)
    if frame.empty:
        raise DatasetError(MSG_NO_ROWS.format(path=path, task=task, conditions=", ".join(applied) or "none"))
    y = labels.to_numpy(dtype=np.int8) if labels is not None else spec.label(pd.to_numeric(frame[spec.target]))
    a = spec.group(pd.to_numeric(frame[spec.protected], errors="coerce"))
    if a.min() == a.max():
        raise DatasetError(MSG_ONE_GROUP.format(path=path, rule=spec.protected_rule))
    out = frame[list(spec.features)].copy()
    out["y"], out["a"] = y, a
    notes.insert(0, f"{task}: {len(out):,} rows after the filter ({', '.join(applied) or 'none applied'}); "
                    f"y = 1 iff {spec.label_rule} ({y.mean():.1%}); {spec.protected_rule} ({a.mean():.1%} a = 1)")
    return out, notes


def write_acs_csv(source: Path, task: str, out: Path) -> list[str]:
    """Write the ``csv`` data set's file for ``task`` from the ACS extract ``source``; what was done, line by line."""
    frame, notes = acs_frame(source, task)
    frame.to_csv(out, index=False)
    return [*notes, f"wrote {out}: read it with dataset.name = 'csv', path = '{out}', label = 'y', "
                    f"protected = 'a', privileged = 1"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parley.scenarios.acs", description=__doc__.split("\n")[0])
    parser.add_argument("task", choices=sorted(ACS_TASKS))
    parser.add_argument("source", type=Path, help="the ACS extract (raw PUMS person CSV or folktables' output)")
    parser.add_argument("out", type=Path, help="the CSV to write for the csv data set")
    args = parser.parse_args(argv)
    try:
        for line in write_acs_csv(args.source, args.task, args.out):
            print(line)
    except (ConfigError, DatasetError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
