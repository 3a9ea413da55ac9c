"""A generated table's description (:class:`Table`) and the formatting its renderers share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias, cast

import pandas as pd

MINUS = "\u2212"
_CATALOG = "scenarios/catalog/"

Frame: TypeAlias = pd.DataFrame


Renderer = Callable[[Frame, Frame], list[str]]


@dataclass(frozen=True)
class Table:
    """One generated table: the study runs it reads, how it is drawn, and what its numbers depend on."""

    name: str
    runs: tuple[tuple[str, str], ...]  # (folder under --studies, the command that fills it)
    roots: tuple[str, ...]             # parley modules (dotted) whose import closure the numbers depend on
    renderer: Renderer
    files: tuple[str, ...] = field(default=())  # further repo files (catalog TOMLs) the numbers depend on
    paper_text: bool = False  # hand the renderer the paper's numbers as typed (text), not parsed
    #: The table whose ``NAME.paper.csv`` this one reads (a paper's number is typed once); default: its own.
    paper: str = ""
    #: Computed from the code at every render (cheap, no study): the default tier re-runs it in full.
    compute: Callable[[], Frame] | None = None


def _n(value: float) -> str:
    """An integer with a thousands separator (1,000)."""
    return f"{int(round(value)):,}"


def _signed(value: float, digits: int = 2) -> str:
    text = f"{value:+.{digits}f}"
    return text.replace("-", MINUS)


def _g(value: float) -> str:
    """A number as the tables print it: no trailing zeros, a thousands separator from 1,000."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _ok(frame: pd.DataFrame, **where: object) -> pd.DataFrame:
    """The finished rows whose columns equal ``where`` (numbers compared as numbers)."""
    rows = frame[frame["status"] == "ok"]
    for key, value in where.items():
        column = key.replace("__", ".")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            rows = rows[pd.to_numeric(rows[column], errors="coerce") == value]
        else:
            rows = rows[rows[column].astype(str) == str(value)]
    return cast(pd.DataFrame, rows)


def _num(rows: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(rows[column], errors="coerce").dropna()


def _truthy(rows: pd.DataFrame, column: str) -> pd.Series:
    return rows[column].astype(str).str.lower().isin(["true", "1", "1.0"])


STUDY = "parley study {name} --out studies/{out} --workers {workers} --no-runs --set backend=local{extra}"


def _study(name: str, out: str = "", workers: int = 2, extra: str = "") -> tuple[str, str]:
    return out or name, STUDY.format(name=name, out=out or name, workers=workers, extra=extra)


def _exponents(values: pd.Series) -> str:
    """Distinct values with their counts: ``8 (×6), 16, 128 (×3)``."""
    counts = values.round(6).value_counts().sort_index()
    return ", ".join(f"{_g(v)}" + (f" (×{c})" if c > 1 else "") for v, c in counts.items())


def _claims(paper: pd.DataFrame) -> str:
    """The paper's claims as one sentence: ``claim (source); claim (source)``."""
    return "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
