"""How a run's ``Result``, a ``StudyRun`` and a ``Comparison`` show in a notebook (and at a Python prompt).

``__repr__`` is one line (what ran, the headline numbers, the folder); ``_repr_html_`` a
small self-contained block: the headline metrics, the leakage beside its bound where the
result has one, and the figures the run wrote (PNG files of its folder) inline as base64
``<img>`` tags, so a notebook saved to disk keeps them.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["MAX_FIGURES", "figures_html", "metrics_html", "page", "result_html", "result_repr", "study_html",
           "study_repr", "comparison_html", "comparison_repr"]

#: At most this many figures are inlined (the first, by file name); a folder can hold hundreds.
MAX_FIGURES = 8
#: Headline metrics of a run, in this order, where present (the leakage's bound is shown beside it).
RUN_HEADLINE = ("exact_recovery", "attacked", "correct", "queries", "messages", "bytes", "epsilon_spent",
                "delta_spent", "budget_refusals", "base_accuracy", "observer_leakage", "wall_s")
#: Columns of a study's or comparison's results shown in its table, where present.
STUDY_COLUMNS = ("cell", "repeat", "status", "leakage", "leakage_bound", "queries", "epsilon_spent", "wall_s")
#: Rows of a results table shown inline.
MAX_ROWS = 10
STYLE = ("<style>.parley-nb table{border-collapse:collapse;margin:4px 0}.parley-nb td,.parley-nb th"
         "{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}.parley-nb img{max-width:100%}</style>")


def _fmt(value: Any) -> str:
    from parley.scenarios.report import _fmt as report_fmt

    return report_fmt(value)


def _e(value: Any) -> str:
    return html.escape(str(value))


def _pct(value: Any) -> str:
    """A percentage to one decimal, without a trailing ``.0``: ``49.6``, ``100``."""
    return f"{float(value):.1f}".removesuffix(".0")


def leakage_text(metrics: Mapping[str, Any]) -> str:
    """``49.6 %`` or ``49.6 % (bound 88.1 %)``; ``-`` when nothing was attacked."""
    leakage = metrics.get("leakage")
    text = "-" if leakage is None else f"{_pct(leakage)} %"
    if metrics.get("leakage_bound") is not None:
        text += f" (bound {_pct(metrics['leakage_bound'])} %)"
    return text


def metrics_html(rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column table: name, value."""
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def figures_html(folder: Path, limit: int = MAX_FIGURES) -> str:
    """The PNG files directly in ``folder`` (sorted by name, at most ``limit``) as inline ``<img>`` tags."""
    try:
        pngs = sorted(p for p in Path(folder).glob("*.png") if p.is_file())
    except OSError:
        return ""
    tags = []
    for png in pngs[:limit]:
        try:
            data = base64.b64encode(png.read_bytes()).decode("ascii")
        except OSError:
            continue
        tags.append(f'<figure><img alt="{_e(png.name)}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{_e(png.name)}</figcaption></figure>")
    more = f"<p>{len(pngs) - limit} more figures in {_e(folder)}</p>" if len(pngs) > limit else ""
    return "".join(tags) + more


def page(title: str, *parts: str) -> str:
    """A titled, styled ``<div>`` holding ``parts``."""
    return f'<div class="parley-nb">{STYLE}<h4>{_e(title)}</h4>{"".join(parts)}</div>'


def _frame_html(frame: Any, columns: Iterable[str] = STUDY_COLUMNS) -> str:
    shown = [c for c in columns if c in frame.columns]
    if not shown or frame.empty:
        return ""
    head = frame[shown].head(MAX_ROWS)
    more = f"<p>{len(frame) - MAX_ROWS} more rows</p>" if len(frame) > MAX_ROWS else ""
    rendered: str = head.to_html(index=False, na_rep="-", float_format=lambda v: _fmt(float(v)), border=0) + more
    return rendered


# --- a run ---------------------------------------------------------------------------------------------------------


def result_repr(result: Any) -> str:
    """``Result(adult-raw-double-query: raw protocol, double-query attack, leakage 100 %, 21 queries, runs/x)``."""
    record, metrics = result.record, result.record.get("metrics", {})
    queries = metrics.get("queries")
    return (f"Result({record.get('scenario')}: {record.get('protocol')} protocol, {record.get('attack')} attack, "
            f"leakage {leakage_text(metrics)}, {'-' if queries is None else _fmt(queries)} queries, "
            f"folder {result.run_dir})")


def result_html(result: Any) -> str:
    """A run: what ran, the headline metrics with the leakage beside its bound, the folder's figures."""
    record, metrics = result.record, result.record.get("metrics", {})
    rows = [("leakage", leakage_text(metrics))]
    rows += [(key, _fmt(metrics[key])) for key in RUN_HEADLINE if key in metrics]
    rows.append(("folder", str(result.run_dir)))
    what = (f"<p>{_e(record.get('protocol'))} protocol, {_e(record.get('attack'))} attack, "
            f"{_e(record.get('dataset'))} data set, threat model {_e(record.get('threat_model'))}</p>")
    return page(f"parley run {record.get('scenario')}", what, metrics_html(rows), figures_html(result.run_dir))


# --- a study and a comparison --------------------------------------------------------------------------------------


def _leakage_summary(frame: Any) -> str:
    if "leakage" not in frame.columns or frame["leakage"].dropna().empty:
        return "-"
    leakage = frame["leakage"].dropna().astype(float)
    text = f"{_pct(leakage.min())} to {_pct(leakage.max())} %"
    if "leakage_bound" in frame.columns and not frame["leakage_bound"].dropna().empty:
        bound = frame["leakage_bound"].dropna().astype(float)
        text += f" (bound {_pct(bound.min())} to {_pct(bound.max())} %)"
    return text


def study_repr(done: Any) -> str:
    """``StudyRun(smoke: 12 rows run, 0 already done, 0 failed, leakage ... %, 40.1 s, folder studies/smoke)``."""
    return (f"StudyRun({done.out.name}: {done.ran} rows run, {done.skipped} already done, {done.failed} failed, "
            f"leakage {_leakage_summary(done.results)}, {done.wall_s:.1f} s, folder {done.out})")


def study_html(done: Any) -> str:
    """A study: the counts, the first rows of its results, its plots."""
    rows = [("rows run", done.ran), ("already done", done.skipped), ("failed", done.failed),
            ("leakage", _leakage_summary(done.results)), ("wall time", f"{done.wall_s:.1f} s"),
            ("folder", str(done.out))]
    return page(f"parley study {done.out.name}", metrics_html(rows), _frame_html(done.results),
                figures_html(done.out))


def comparison_repr(done: Any) -> str:
    """``Comparison(adult: 96 runs, 9 audits, leakage ... %, 180 s, folder compare/adult)``."""
    dataset = getattr(done.plan, "dataset", "?")
    return (f"Comparison({dataset}: {len(done.results)} runs, {len(done.audits)} audits, "
            f"leakage {_leakage_summary(done.results)}, {done.wall_s:.0f} s, folder {done.out})")


def comparison_html(done: Any) -> str:
    """A comparison: the counts, mean leakage by protocol row and attack column, its figures."""
    results = done.results
    rows = [("data set", getattr(done.plan, "dataset", "?")), ("runs", len(results)),
            ("leakage", _leakage_summary(results)), ("audits", len(done.audits)), ("wall time", f"{done.wall_s:.0f} s"),
            ("folder", str(done.out))]
    grid = ""
    if {"row", "column", "leakage"} <= set(results.columns) and not results.empty:
        try:
            table = results.pivot_table(index="row", columns="column", values="leakage", aggfunc="mean")
            grid = "<p>mean leakage (%) by protocol row and attack column</p>" + table.to_html(
                na_rep="-", float_format=lambda v: _fmt(float(v)), border=0)
        except (ValueError, TypeError):
            grid = ""
    return page(f"parley compare {rows[0][1]}", metrics_html(rows), grid, figures_html(done.out))
