"""A study's outputs: ``summary.md`` (mean ± std per cell, the spec's tables) and its PNG plots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: studies run on headless machines and clusters
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from parley.parties.run_secrets import RunSecrets  # noqa: E402
from parley.scenarios.report import HEADLINE  # noqa: E402
from parley.scenarios.study.plan import PlotSpec, Study, TableSpec  # noqa: E402

__all__ = ["NOTHING_FINISHED", "summarise", "pivot", "plot", "write_outputs"]

NOTHING_FINISHED = "No row finished: nothing to tabulate (the errors are listed below)."


def _mean_std(values: pd.Series) -> str:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "-"
    mean = values.mean()
    if len(values) == 1:
        return f"{mean:.4g}"
    return f"{mean:.4g} ± {values.std(ddof=1):.2g}"


def _summary_metrics(study: Study, frame: pd.DataFrame) -> list[str]:
    wanted = study.outputs.metrics or [m for m in HEADLINE if m != "wall_s"]
    numeric = [c for c in wanted if c in frame and pd.to_numeric(frame[c], errors="coerce").notna().any()]
    return numeric


def summarise(study: Study, frame: pd.DataFrame) -> pd.DataFrame:
    """One row per grid cell, in grid order: its values, ok repeats, mean ± std of each metric."""
    ok = frame[frame["status"] == "ok"]
    metrics = _summary_metrics(study, ok)
    rows = []
    # grid points that give the same scenario (e.g. a grid over seed) share one cell
    first: dict[str, dict[str, Any]] = {}
    for cell in study.cells():
        first.setdefault(cell.cell, cell.assignment)
    for cid, assignment in first.items():
        part = ok[ok["cell"] == cid]
        rows.append({**assignment, "n": len(part), **{m: _mean_std(part[m]) for m in metrics}})
    return pd.DataFrame(rows)


def _natural(values: pd.Series) -> list[Any]:
    """Distinct values sorted as numbers when they all are, else as text."""
    distinct = list(values.dropna().unique())
    try:
        return sorted(distinct, key=float)
    except (TypeError, ValueError):
        return sorted(distinct, key=str)


def _selected(frame: pd.DataFrame, where: Mapping[str, str | int | float | bool]) -> pd.DataFrame:
    """The ok rows whose fields equal ``where``'s values (numbers compared as numbers, the rest as text)."""
    ok = frame[frame["status"] == "ok"]
    for key, value in where.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = ok[pd.to_numeric(ok[key], errors="coerce") == value]
        else:
            ok = ok[ok[key].astype(str).str.lower() == str(value).lower()]
    return ok


def pivot(frame: pd.DataFrame, spec: TableSpec) -> pd.DataFrame:
    """mean ± std of ``spec.value`` by ``spec.rows`` (and ``spec.columns``), over the rows ``spec.where`` selects."""
    ok = _selected(frame, spec.where)
    keys = [spec.rows] + ([spec.columns] if spec.columns else [])
    cells = ok.groupby(keys, sort=True, dropna=False)[spec.value].apply(_mean_std)
    return cells.unstack(spec.columns) if spec.columns else cells.to_frame(spec.value)


def _cell_text(value: object) -> str:
    """A table cell: '-' for a missing scalar; a grid value that is a table or list as its text."""
    if isinstance(value, (list, tuple, dict)):
        return str(value)
    return "-" if pd.isna(value) else str(value)


def _markdown(frame: pd.DataFrame, index: bool = False) -> str:
    frame = frame.reset_index() if index else frame
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell_text(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def plot(frame: pd.DataFrame, spec: PlotSpec, out: Path) -> Path:
    """Draw ``spec`` from the ok rows into ``out/spec.file``."""
    ok = _selected(frame, spec.where).copy()
    ok[spec.y] = pd.to_numeric(ok[spec.y], errors="coerce")
    facets = _natural(ok[spec.facet]) if spec.facet else [None]
    fig, axes = plt.subplots(1, len(facets), figsize=(5 * len(facets), 4), squeeze=False, sharey=True)
    for ax, facet in zip(axes[0], facets, strict=True):
        part = ok if facet is None else ok[ok[spec.facet] == facet]
        colours = _natural(part[spec.colour]) if spec.colour else [None]
        for colour in colours:
            line = part if colour is None else part[part[spec.colour] == colour]
            stats = line.groupby(spec.x, sort=True)[spec.y].agg(["mean", "std"]).reset_index()
            label = None if colour is None else f"{spec.colour} = {colour}"
            ax.errorbar(stats[spec.x], stats["mean"], yerr=stats["std"].fillna(0.0), marker="o", capsize=3,
                        label=label)
        ax.set_xlabel(spec.x)
        ax.set_title(f"{spec.facet} = {facet}" if facet is not None else spec.title)
        if spec.logx:
            ax.set_xscale("log")
        ax.grid(True, alpha=0.3)
        if spec.colour:
            ax.legend(fontsize="small")
    axes[0][0].set_ylabel(f"{spec.y} (mean ± std)")
    if spec.title and spec.facet:
        fig.suptitle(spec.title)
    fig.tight_layout()
    path = out / spec.file
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_outputs(study: Study, frame: pd.DataFrame, out: Path, secrets: RunSecrets | None = None) -> Path:
    """Write ``summary.md`` and every plot the study names; return the summary's path.

    ``secrets``: the study's, of which the summary says where they came from (never what they are).
    """
    ok = int((frame["status"] == "ok").sum()) if not frame.empty else 0
    errors = frame[frame["status"] != "ok"] if not frame.empty else frame
    lines = [f"# Study {study.name}", "", study.description, "",
             f"{len(study.assignments())} grid cells × {study.repeats} repeat(s) (study seed {study.seed}); "
             f"{ok} rows ok, {len(errors)} with errors. Each row is in `results.csv`.", "",
             *([f"Parties' secrets: {secrets.describe()['note']}.", ""] if secrets is not None else []),
             "## Mean ± std per cell", "", _markdown(summarise(study, frame)), ""]
    for spec in study.outputs.tables:
        table = _markdown(pivot(frame, spec), index=True) if ok else NOTHING_FINISHED
        lines += [f"## {spec.title or f'{spec.value} by {spec.rows}'}", "", table, ""]
    for plot_spec in study.outputs.plots:
        if ok:
            plot(frame, plot_spec, out)
            lines += [f"![{plot_spec.title or plot_spec.file}]({plot_spec.file})", ""]
    if len(errors):
        lines += ["## Errors", "", _markdown(errors[["cell", "repeat", "failure"]]), ""]
    path = out / "summary.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
