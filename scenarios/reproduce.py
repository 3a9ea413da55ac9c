"""Reproduction tables written from study results, never typed: ``python -m parley.scenarios.reproduce``.

Every generated table of ``docs/reproductions.md`` sits between two markers::

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

and is written by :func:`render` from two checked-in files in ``docs/reproductions/``:

- ``NAME.paper.csv``: the paper's numbers, typed once, with the table they come from (``source``);
- ``NAME.results.csv``: the rows of the study run(s) the table needs (a ``run`` column names the study
  folder each row came from), recorded with ``NAME.meta.json``: the commit and the date of the
  recording, the command that produced each run, and a digest of the parley modules the study's
  numbers depend on (:func:`digest`, over the static import closure of :attr:`Table.roots`).

Commands::

    python -m parley.scenarios.reproduce list
    python -m parley.scenarios.reproduce write NAME [--studies DIR]   # record DIR/<run>/results.csv first
    python -m parley.scenarios.reproduce check [NAME ...]             # page == render, digest unchanged

``check`` fails when a printed number differs from what the recorded results give, and when the code
a table depends on changed after its results were recorded (then re-run the study and ``write``).
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import hashlib
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias, cast

import pandas as pd

__all__ = ["DOCS", "PAGE", "REPO", "TABLES", "Table", "check", "digest", "import_closure", "page_block", "record",
           "render", "write"]

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "reproductions"
PAGE = REPO / "docs" / "reproductions.md"
BEGIN = "<!-- generated: {name} -->"
END = "<!-- end generated -->"
MINUS = "\u2212"

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
    #: Computed from the code at every render (cheap, no study): the default tier re-runs it in full.
    compute: Callable[[], Frame] | None = None


# --------------------------------------------------------------------------------------------- formatting


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


# ------------------------------------------------------------------------------------------- the renderers


def _reveal_table1(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| n | m | paper (l1) | parley, l1 (Alg. 2) | parley, box-and-count LP | parley, AMP (two-point prior) |",
             "|---|---|---|---|---|---|"]
    for _, p in paper.iterrows():
        cells = []
        for decoder in ("l1", "box-count", "amp"):
            rows = _ok(results, dataset__audit_size=int(p["n"]), attack__max_queries=int(p["m"]),
                       attack__decoder=decoder)
            leak, exact = _num(rows, "leakage"), int(_truthy(rows, "exact_recovery").sum())
            if exact == len(rows):
                cells.append(f"{_g(leak.mean())} ({exact}/{len(rows)})")
            else:
                cells.append(f"{leak.mean():.1f} ± {leak.std(ddof=1):.1f} (exact {exact}/{len(rows)})")
        lines.append(f"| {_n(int(p['n']))} | {int(p['m'])} | {p['leakage']} | " + " | ".join(cells) + " |")
    times = [_num(_ok(results, dataset__audit_size=1000, attack__max_queries=400, attack__decoder=d),
                  "attack_decode_s").median() for d in ("l1", "box-count", "amp")]
    lines += ["", f"Median decode time at n = 1,000, m = 400: l1 {times[0]:.2g} s, box-and-count {times[1]:.2g} s, "
                  f"AMP {times[2]:.2g} s."]
    return lines


def _conceal_table1(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| n | m | ε | SP err, ours (smooth-cauchy) | SP err, Laplace | paper: ours / Lap. | leakage l1: ours / "
             "Lap. | leakage LAD: ours / Lap. | paper leakage: ours / Lap. |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, p in paper.iterrows():
        cell: dict[str, object] = {"dataset__audit_size": int(p["n"]), "attack__max_queries": int(p["m"]),
                                   "protocol__epsilon": float(p["epsilon"])}

        def err(protocol: str, cell: dict[str, object] = cell) -> str:
            rows = _ok(results, **cell, protocol__name=protocol, attack__decoder="l1")
            return f"{1000 * _num(rows, 'median_query_error').median():,.0f}"

        def leak(decoder: str, cell: dict[str, object] = cell) -> str:
            means = (_num(_ok(results, **cell, protocol__name=pr, attack__decoder=decoder), "leakage").mean()
                     for pr in ("smooth-cauchy", "laplace"))
            return " / ".join(f"{mean:.0f}" for mean in means)

        lines.append(f"| {_n(int(p['n']))} | {int(p['m'])} | {p['epsilon']} | {err('smooth-cauchy')} "
                     f"| {err('laplace')} | {p['err_ours']} / {p['err_lap']} | {leak('l1')} | {leak('robust')} "
                     f"| {p['leak_ours']} / {p['leak_lap']} |")
    return lines


def _conceal_synthetic(results: pd.DataFrame, paper: pd.DataFrame, keys: dict[str, tuple[str, str]]) -> list[str]:
    """Tables 2 and 3: one row per paper cell (``keys``: header -> paper column, results column), both decoders."""
    lines = ["| " + " | ".join(keys) + " | mean SP err, ours | median SP err, ours | paper (mean) | leakage l1 | "
             "leakage LAD | paper leakage |", "|---" * (len(keys) + 6) + "|"]
    for _, p in paper.iterrows():
        cell = {column: float(p[name]) for name, column in keys.values()}
        lad = _ok(results, **cell, attack__decoder="robust")
        l1 = _num(_ok(results, **cell, attack__decoder="l1"), "leakage")
        shown = (_n(int(p[name])) if str(p[name]).isdigit() else str(p[name]) for name, _ in keys.values())
        lines.append(f"| {' | '.join(shown)} | {1000 * _num(lad, 'avg_query_error').mean():,.0f} "
                     f"| {_g(1000 * _num(lad, 'median_query_error').median())} | {p['err']} "
                     f"| {f'{l1.mean():.0f}' if len(l1) else '–'} | {_num(lad, 'leakage').mean():.0f} "
                     f"| {p['leakage']} |")
    return lines


def _conceal_table2(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    return _conceal_synthetic(results, paper, {"n": ("n", "dataset__audit_size"), "m": ("m", "attack__max_queries"),
                                               "N0": ("N0", "dataset__minority")})


def _conceal_table3(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    return _conceal_synthetic(results, paper, {"n": ("n", "dataset__audit_size"), "N0": ("N0", "dataset__minority"),
                                               "ε": ("epsilon", "protocol__epsilon")})


def _conceal_table4(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| ε | m | mean SP err, ours | median SP err, ours | paper (mean) | recovered l1 (of {n}) | recovered LAD "
             "(of {n}) | leakage l1 / LAD | paper recovered (of 1,000) |", "|---|---|---|---|---|---|---|---|---|"]
    done = _ok(results)
    lines[0] = lines[0].format(n=_n(_num(done, "attacked").max()))
    for eps in sorted(_num(done, "protocol.epsilon").unique()):
        for m in sorted(_num(done, "attack.max_queries").unique()):
            cell = {"protocol__epsilon": float(eps), "attack__max_queries": float(m)}
            lad, l1 = (_ok(done, **cell, attack__decoder=d) for d in ("robust", "l1"))
            found = l1["correct"].astype(float)
            undecided = bool(len(l1)) and bool(((found == 0) & (_num(l1, "leakage") == 50.0)).all())
            recovered_l1 = "0 (no solution)" if undecided else f"{found.mean():.0f}"
            theirs = paper[(paper["epsilon"].astype(float) == eps) & (paper["m"].astype(float) == m)]
            err, got = (str(theirs.iloc[0][c]) if len(theirs) else "–" for c in ("err", "recovered"))
            lines.append(f"| {_g(float(eps))} | {int(m)} | {1000 * _num(lad, 'avg_query_error').mean():,.1f} "
                         f"| {1000 * _num(lad, 'median_query_error').median():,.1f} | {err} | {recovered_l1} "
                         f"| {_num(lad, 'correct').mean():.0f} | {_num(l1, 'leakage').mean():.0f} / "
                         f"{_num(lad, 'leakage').mean():.0f} | {got} |")
    return lines


def _exponents(values: pd.Series) -> str:
    counts = values.round(6).value_counts().sort_index()
    return ", ".join(f"{_g(v)}" + (f" (×{c})" if c > 1 else "") for v, c in counts.items())


CORRECTION_RUNS = (("authors (`correction-authors`)", "correction-authors"),
                   ("parley default (`correction-seeds`)", "correction-seeds"))


def _correction_authors(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| configuration | baseline | corrected | gain | corrected > baseline | balanced: baseline → corrected "
             "| exponents chosen |", "|---|---|---|---|---|---|---|"]
    longest = []
    for label, run in CORRECTION_RUNS:
        rows = _ok(results, run=run)
        if rows.empty:
            lines.append(f"| {label} | not recorded | | | | | |")
            continue
        base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy", "improvement"))
        lines.append(f"| {label} | {base.mean():.2f} ± {base.std(ddof=1):.2f} | {corr.mean():.2f} ± "
                     f"{corr.std(ddof=1):.2f} | {_signed(gain.mean())} ± {gain.std(ddof=1):.2f} "
                     f"| {int((gain > 0).sum())} of {len(gain)} | {_num(rows, 'baseline_leakage').mean():.1f} → "
                     f"{_num(rows, 'leakage').mean():.1f} | {_exponents(_num(rows, 'exponent'))} |")
        optimal = (rows["solver_status"].astype(str) == "optimal").all()
        longest.append(f"{label.split(' (')[0]} {_num(rows, 'solve_s').max():.1f} s"
                       + ("" if optimal else " (not every solve optimal)"))
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", "Longest correction solve (every one optimal unless said): " + ", ".join(longest) + ".", "",
                    f"The paper: {claim}."]


FORESTS = ((64, 2, 2, "parley default (unlimited depth, split 2, leaf 2)"),
           (6, 2, 2, "depth 6 (split 2, leaf 2)"),
           (6, 10, 1, "the authors' (depth 6, split 10, leaf 1)"))


def _forest_depth(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| forest | cells | baseline (%) | corrected (%) | mean gain | corrected ≥ baseline | better / unchanged "
             "/ worse | lowest gain | changes that were right |", "|---|---|---|---|---|---|---|---|---|"]
    for depth, split, leaf, label in FORESTS:
        rows = _ok(results, attack__max_depth=depth, attack__min_samples_split=split, attack__min_samples_leaf=leaf)
        base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy", "improvement"))
        changed, right = _num(rows, "changed").sum(), _num(rows, "changed_correctly").sum()
        eps = 1e-9
        share = f"{100 * right / changed:.1f} % ({_n(right)} of {_n(changed)})" if changed else "–"
        lines.append(f"| {label} | {len(rows)} | {base.mean():.1f} | {corr.mean():.1f} | {_signed(gain.mean())} "
                     f"| {int((gain >= -eps).sum())} of {len(gain)} | {int((gain > eps).sum())} / "
                     f"{int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} | {_signed(gain.min())} "
                     f"| {share} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


#: Table I's learners not in the paper: (label, the ``learner`` cell of results.csv).
CRIME_REFERENCES = (("ridge (FRR, λ = 0)", '{"name": "frr", "lam": 0.0}'),
                    ("logistic regression (FGR, η = 0)", '{"name": "fgr", "eta": 0.0}'))
#: Table I's methods parley does not implement: (learner, why); every row of the paper is implemented now.
CRIME_MISSING: dict[str, str] = {}


def _crime_row(label: str, rows: pd.DataFrame, k: bool) -> str:
    """One learner's line of parley's numbers: mean ± std of SP, ND and error; means of the rest."""
    if rows.empty:
        return f"| {label} | parley | not recorded | | | | | | |"
    sp, nd, er = (_num(rows, c) for c in ("statistical_parity", "normed_disparate", "error"))
    rates = rows[["positive_rate_a0", "positive_rate_a1"]].apply(pd.to_numeric, errors="coerce")
    one_class = int(((rates == 1.0).all(axis=1) | (rates == 0.0).all(axis=1)).sum())
    accepted = f"{_num(rows, 'accepted').mean():.1f}" if k else "–"
    return (f"| {label} | parley (n={len(rows)}) | {accepted} | {sp.mean():.4f} ± {sp.std(ddof=1):.4f} "
            f"| {nd.mean():.4f} ± {nd.std(ddof=1):.4f} | {er.mean():.4f} ± {er.std(ddof=1):.4f} "
            f"| {_num(rows, 'error_parity').mean():.4f} | {_num(rows, 'error_disparate').mean():.4f} "
            f"| {one_class} of {len(rows)} |")


def _crime_table1(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    header = ["| method | source | k of 200 | SP | ND | error | error parity | error disparate | one-class runs |",
              "|---|---|---|---|---|---|---|---|---|"]
    main, cut07 = (results[results["run"] == run] for run in ("crime-table1", "crime-table1-cut07"))
    lines = list(header)
    for _, p in paper.iterrows():
        label = str(p["method"]).split(" [")[0]
        lines.append(f"| *{label}* | *paper* | | *{p['sp']:.4f} ± {p['sp_std']:.4f}* | *{p['nd']:.4f} ± "
                     f"{p['nd_std']:.4f}* | *{p['error']:.4f} ± {p['error_std']:.4f}* | *{p['error_parity']:.4f}* "
                     f"| *{p['error_disparate']:.4f}* | |")
        if p["learner"] in CRIME_MISSING:
            lines.append(f"| {label} | parley | {CRIME_MISSING[str(p['learner'])]} | | | | | | |")
        else:
            cell = json.dumps({"name": p["learner"]})
            lines.append(_crime_row(label, _ok(main, learner=cell), label.startswith("DF")))
    for label, cell in CRIME_REFERENCES:
        lines.append(_crime_row(label, _ok(main, learner=cell), False))
    walls = _num(_ok(main), "wall_s")
    sdp = ", ".join(f"{name} {_num(_ok(main, learner=json.dumps({'name': name})), 'wall_s').median():.1f} s"
                    for name in ("fpca1", "fpca2"))
    lines += ["", f"Median wall time of a run: {walls.median():.1f} s ({len(walls)} runs); of a run of a fair PCA "
                  f"(its SDP included): {sdp}.", "",
              "The same study with the label cut at 0.7 (`--set dataset.label_threshold=0.7`, 20 repeats):", ""]
    lines += header
    for _, p in paper.iterrows():
        if p["learner"] not in CRIME_MISSING:
            label = str(p["method"]).split(" [")[0]
            lines.append(_crime_row(label, _ok(cut07, learner=json.dumps({"name": p["learner"]})),
                                    label.startswith("DF")))
    for label, cell in CRIME_REFERENCES:
        lines.append(_crime_row(label, _ok(cut07, learner=cell), False))
    sweep = results[results["run"] == "crime-table1-dfrr"]
    lines += ["", "DFRR at ρ = 0.1 over its penalty λ (per sample) and the number of hypotheses m "
                  "(`crime-table1-dfrr`, 5 repeats): SP / error / one-class runs", "",
              "| λ | m = 200: k | m = 200 | m = 2,000: k | m = 2,000 |", "|---|---|---|---|---|"]
    for lam in sorted(_num(sweep, "learner.lam").unique()):
        cells = []
        for m in (200, 2000):
            rows = _ok(sweep, learner__lam=float(lam), learner__hypotheses=m)
            if rows.empty:
                cells += ["–", "not recorded"]
                continue
            rates = rows[["positive_rate_a0", "positive_rate_a1"]].apply(pd.to_numeric, errors="coerce")
            one_class = int(((rates == 1.0).all(axis=1) | (rates == 0.0).all(axis=1)).sum())
            cells += [f"{_num(rows, 'accepted').mean():.1f}",
                      f"{_num(rows, 'statistical_parity').mean():.4f} / {_num(rows, 'error').mean():.4f} / "
                      f"{one_class} of {len(rows)}"]
        lines.append(f"| {_g(float(lam))} | " + " | ".join(cells) + " |")
    fpca = results[results["run"] == "crime-table1-fpca"]
    lines += ["", "FPCA1 and FPCA2 over the dimension d of their representation (`crime-table1-fpca`, the first 10 "
                  "splits): SP / error / error parity / one-class runs", "", "| d | FPCA1 | FPCA2 |", "|---|---|---|"]
    for d in sorted(int(v) for v in _num(fpca, "learner.components").unique()):
        cells = []
        for name in ("fpca1", "fpca2"):
            rows = _ok(fpca, learner__name=name, learner__components=d)
            if rows.empty:
                cells.append("not recorded")
                continue
            rates = rows[["positive_rate_a0", "positive_rate_a1"]].apply(pd.to_numeric, errors="coerce")
            one_class = int(((rates == 1.0).all(axis=1) | (rates == 0.0).all(axis=1)).sum())
            cells.append(f"{_num(rows, 'statistical_parity').mean():.4f} / {_num(rows, 'error').mean():.4f} / "
                         f"{_num(rows, 'error_parity').mean():.4f} / {one_class} of {len(rows)}")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return lines


def _sensitivities() -> pd.DataFrame:
    """One model's bounds as printed and as parley computes them, at n = 8 and n = 100 (the page's cells)."""
    from parley.protocols.dp import sensitivity as sens

    cells = {  # key: (printed, parley) at n = 8, then at n = 100
        "abs_sp_global": [(sens.paper_global_sensitivity("abs_sp", 1, n), sens.global_sensitivity("abs_sp", 1, n))
                          for n in (8, 100)],
        "eo_global": [(sens.paper_global_sensitivity("eo", 1, n), sens.global_sensitivity("eo", 1, n, n_pos=k))
                      for n, k in ((8, 5), (100, 25))],
        "abs_eo_global": [(sens.paper_global_sensitivity("abs_eo", 1, n),
                           sens.global_sensitivity("abs_eo", 1, n, n_pos=k)) for n, k in ((8, 5), (100, 25))],
        "abs_sp_local": [(sens.paper_local_sensitivity_abs_sp(1, *g), sens.local_sensitivity_abs_sp(1, *g))
                         for g in ((4, 4), (10, 90))],
        "abs_sp_smooth": [(sens.paper_smooth_sensitivity_abs_sp(1, *g, b), sens.smooth_sensitivity_abs_sp(1, *g, b))
                          for g, b in (((4, 4), 0.5), ((10, 90), 0.05))],
        "sp_smooth_literal": [(sens.paper_smooth_sensitivity_sp(1, *g, b), sens.smooth_sensitivity_sp(1, *g, b))
                              for g, b in (((6, 2), 0.5), ((90, 10), 0.05))],
    }
    return pd.DataFrame([{"key": key, "n8": pairs[0], "n100": pairs[1]} for key, pairs in cells.items()])


def _sensitivity_table(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| bound | printed | checked (parley uses) | n = 8: printed / parley | n = 100: printed / parley |",
             "|---|---|---|---|---|"]
    values = results.set_index("key")
    for _, p in paper.fillna("").iterrows():
        at = [" ".join(filter(None, [f"{printed:.4f} / {ours:.4f}", str(p[where])]))
              for (printed, ours), where in zip(values.loc[p["key"], ["n8", "n100"]], ("at8", "at100"), strict=True)]
        lines.append(f"| {p['bound']} | {p['printed']} | {p['checked']} | {at[0]} | {at[1]} |")
    return lines


#: What Table II's numbers depend on: the cov-threshold exchange and mechanism, the data sets, its learners' modules.
COMPAS_ROOTS = ("parley.scenarios.exchanges.cov_threshold", "parley.protocols.mechanisms.covariance_threshold",
                "parley.scenarios.datasets", *(f"parley.parties.learners.{module}" for module in (
                    "fair_span", "fair_baselines", "fair_kernel", "prejudice_remover", "lfr", "fair_pca")))
#: Learners of Table II trained with s: the accept set does not enter, so they run at one rho.
WITH_S = ("frr", "fkrr", "fgr", "lfr", "fpca1", "fpca2", "expgrad-dp")


def _compas_table2(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| learner | ρ | k of 200 | span rank | SP | ND | error | error parity | error disparate | leakage (%) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    done = _ok(results)
    names = [str(name) for name in paper["learner"]] + sorted(set(done["learner.name"]) - set(paper["learner"]))
    for name in names:
        rows = done[done["learner.name"] == name]
        for rho in sorted(_num(rows, "protocol.rho").unique(), reverse=True):
            cell = _ok(rows, protocol__rho=float(rho))
            sp, er = _num(cell, "statistical_parity"), _num(cell, "error")
            if name in WITH_S:
                rho_text = k = span = "—"
            else:
                accepted = _num(cell, "accepted")
                rho_text, k = _g(float(rho)), f"{accepted.mean():.0f} ({accepted.mean():.1f} ± {accepted.std():.1f})"
                span = f"{_num(cell, 'span_rank').mean():.3g} " + (  # kernel hypotheses live in R^n_train
                    "(kernel)" if name == "dfkrr" else f"of {_n(_num(cell, 'linear_rank').mean())}")
            lines.append(f"| {name} (n={len(cell)}) | {rho_text} | {k} | {span} | {sp.mean():.4f} ± {sp.std():.4f} "
                         f"| {_num(cell, 'normed_disparate').mean():.4f} | {er.mean():.4f} ± {er.std():.4f} "
                         f"| {_num(cell, 'error_parity').mean():.4f} | {_num(cell, 'error_disparate').mean():.4f} "
                         f"| {_num(cell, 'leakage').mean():.1f} |")
        match = paper[paper["learner"] == name]
        if rows.empty and not match.empty:
            lines.append(f"| {name} | | | | not run here | | | | | |")
        for _, p in match.iterrows():
            lines.append(f"| *paper {str(p['method']).split(' [')[0]}* | | | | *{p['sp']:.4f} ± {p['sp_std']:.4f}* "
                         f"| *{p['nd']:.4f}* | *{p['error']:.4f} ± {p['error_std']:.4f}* | *{p['error_parity']:.4f}* "
                         f"| *{p['error_disparate']:.4f}* | |")
    return lines


# Hidden fairness (Sec. V-B) and CorrelationRemover (App. E, Table V) of the reconstruction-correction paper.


def _valid(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's estimated constraint holds on the training set (its unfairness there <= the tolerance)."""
    def one(row: pd.Series) -> bool:
        measured = pd.to_numeric(row.get(f"target_train_{row['constraint_metric']}"), errors="coerce")
        return bool(measured <= float(row["constraint_tolerance"]) + 1e-12)
    return rows.apply(one, axis=1) if len(rows) else pd.Series(dtype=bool)


def _counts(values: pd.Series) -> str:
    counts = values.astype(str).str.upper().value_counts()
    return ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


REMOVER_SETS = (("adult", "Adult (sex)"), ("compas", "COMPAS (race)"), ("german", "German (sex)"))
BASELINES = (("xy", "A1"), ("xy-yhat", "A2"))


def _correction_remover(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | adversary | runs | baseline (%) | corrected (%) | gain | better / unchanged / worse "
             "| declined | metric estimated | tolerance estimated | estimate valid on the training set "
             "| target: accuracy, SP |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    eps = 1e-9
    for dataset, label in REMOVER_SETS:
        for baseline, adversary in BASELINES:
            rows = _ok(results, dataset__name=dataset, attack__baseline=baseline)
            if rows.empty:
                lines.append(f"| {label} | {adversary} | not recorded | | | | | | | | | |")
                continue
            base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy",
                                                              "improvement"))
            tol = _num(rows, "constraint_tolerance")
            declined = int((rows["solver_status"].astype(str) == "declined").sum())
            lines.append(
                f"| {label} | {adversary} | {len(rows)} | {base.mean():.2f} ± {base.std(ddof=1):.2f} "
                f"| {corr.mean():.2f} ± {corr.std(ddof=1):.2f} | {_signed(gain.mean())} ± {gain.std(ddof=1):.2f} "
                f"| {int((gain > eps).sum())} / {int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} "
                f"| {declined} | {_counts(rows['constraint_metric'])} | {tol.mean():.4f} ({tol.min():.4f}–"
                f"{tol.max():.4f}) | {int(_valid(rows).sum())} of {len(rows)} "
                f"| {100 * _num(rows, 'target_train_accuracy').mean():.1f} %, "
                f"{_num(rows, 'target_train_sp').mean():.3f} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


def _target(cell: str) -> tuple[str, str, str]:
    """(learner, metric trained, tolerance) of a results row's ``learner`` cell (a JSON table)."""
    spec = json.loads(cell.replace("'", '"'))
    name = str(spec["name"])
    metric = str(spec.get("metric", "sp" if name == "exponentiated-gradient" else "–"))
    tolerance = _g(float(spec.get("tolerance", 0.0))) if name == "exponentiated-gradient" else \
        ("0 (aimed at)" if name == "threshold-optimizer" else "none")
    return name, metric, tolerance


HIDDEN_TARGETS = {"exponentiated-gradient": "ExponentiatedGradient", "threshold-optimizer": "ThresholdOptimizer",
                  "correlation-remover": "CorrelationRemover"}


def _correction_hidden(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | target | trained: metric, tolerance | certified | corrected − baseline, certificate "
             "| estimated: metric, tolerance | estimate valid | corrected − baseline, estimated |",
             "|---|---|---|---|---|---|---|---|"]
    done = _ok(results)
    tally: dict[str, list[int]] = {}
    for dataset, label in REMOVER_SETS:
        rows = done[done["dataset.name"] == dataset]
        for cell in dict.fromkeys(rows["learner"].astype(str)):
            name, metric, tolerance = _target(cell)
            cert = rows[(rows["learner"].astype(str) == cell) & (rows["attack.fairness"] == "certificate")]
            est = rows[(rows["learner"].astype(str) == cell) & (rows["attack.fairness"] == "estimated")]
            if cert.empty or est.empty:
                lines.append(f"| {label} | {HIDDEN_TARGETS[name]} | {metric.upper()}, {tolerance} | not recorded "
                             "| | | | |")
                continue
            c, e = cert.iloc[0], est.iloc[0]
            valid = bool(_valid(est).iloc[0])
            found = str(e["constraint_metric"]) == metric
            counts = tally.setdefault(HIDDEN_TARGETS[name], [0, 0, 0, 0])
            counts[0] += 1
            counts[1] += int(found)
            counts[2] += int(valid)
            counts[3] += int(float(e["improvement"]) >= -1e-9)
            certified = f"{str(c['constraint_metric']).upper()} {float(c['certificate_value']):.4f}"
            lines.append(f"| {label} | {HIDDEN_TARGETS[name]} | {metric.upper()}, {tolerance} | {certified} "
                         f"| {_signed(100 * float(c['improvement']))} | {str(e['constraint_metric']).upper()}, "
                         f"{float(e['constraint_tolerance']):.4f} | {'yes' if valid else 'no'} "
                         f"| {_signed(100 * float(e['improvement']))} |")
    lines += ["", "| target | cells | estimate names the metric trained under | estimate valid on the training set "
                  "| estimated correction ≥ baseline |", "|---|---|---|---|---|"]
    for target, (cells, named_right, holds, kept) in tally.items():
        named = "– (optimises none)" if target == "CorrelationRemover" else f"{named_right} of {cells}"
        lines.append(f"| {target} | {cells} | {named} | {holds} of {cells} | {kept} of {cells} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


# ------------------------------------------------------ query-leakage figures and remarks (issue: every paper item)


def _leak_cell(rows: pd.DataFrame) -> str:
    """Leakage mean ± std over the repeats, and how many were exact."""
    if rows.empty:
        return "not recorded"
    leak, exact = _num(rows, "leakage"), int(_truthy(rows, "exact_recovery").sum())
    if exact == len(rows):
        return f"{_g(leak.mean())} ({exact}/{len(rows)})"
    spread = f" ± {leak.std(ddof=1):.1f}" if len(leak) > 1 else ""
    return f"{leak.mean():.1f}{spread} (exact {exact}/{len(rows)})"


def _protocol_is(rows: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rows whose ``protocol`` grid cell (a table of the protocol's fields) names ``name``."""
    return cast(pd.DataFrame, rows[rows["protocol"].astype(str).str.contains(f"'{name}'|\"{name}\"")])


def _remark3(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| n | paper: queries | parley `linear-n-1` (n − 1 flip-one models, Σ v = 0): queries, leakage | "
             "certified | parley `linear` (Alg. 1, n models): queries, leakage |", "|---|---|---|---|---|"]
    for _, p in paper.iterrows():
        n = int(p["n"])
        ours, alg1 = (_ok(results, dataset__audit_size=n, attack__name=a) for a in ("linear-n-1", "linear"))
        certified = int(_truthy(ours, "attack_certified").sum())
        lines.append(f"| {_n(n)} | {_n(int(p['queries']))} | {_exponents(_num(ours, 'queries'))}: {_leak_cell(ours)} "
                     f"| {certified} of {len(ours)} | {_exponents(_num(alg1, 'queries'))}: {_leak_cell(alg1)} |")
    claim = "; ".join(sorted({f"{r['claim']} ({r['source']})" for _, r in paper.iterrows()}))
    return lines + ["", f"The paper: {claim}."]


def _fig2a(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    raw, dp = (results[results["run"] == run] for run in ("fig2a-leakage-queries", "fig2a-conceal"))
    lines = ["| m | ε = ∞: l1 (Alg. 2) | ε = ∞: box-and-count LP | ε = 100: l1 | ε = 100: LAD | SP err at ε = 100 "
             "(×10⁻³): median of the runs' medians / mean of their means | paper (leakage ∞ / 100; err ×10⁻³) |",
             "|---|---|---|---|---|---|---|"]
    for m in sorted(_num(results, "attack.max_queries").unique()):
        cells = [_leak_cell(_ok(raw, attack__max_queries=int(m), attack__decoder=d)) for d in ("l1", "box-count")]
        noisy = [_ok(dp, attack__max_queries=int(m), attack__decoder=d) for d in ("l1", "robust")]
        cells += [f"{_num(rows, 'leakage').mean():.0f} ± {_num(rows, 'leakage').std(ddof=1):.0f}" for rows in noisy]
        cells.append(f"{_g(1000 * _num(noisy[0], 'median_query_error').median())} / "
                     f"{_g(1000 * _num(noisy[0], 'avg_query_error').mean())}")
        here = paper[pd.to_numeric(paper["m"], errors="coerce") == m]
        said = {str(r["epsilon"]): r for _, r in here.iterrows()}
        theirs = ""
        if said:
            inf, hundred = said.get("inf"), said.get("100")
            theirs = (f"{inf['leakage'] if inf is not None else '–'} / "
                      f"{hundred['leakage'] if hundred is not None else '–'}"
                      + (f"; {1000 * float(hundred['avg_sp_err']):.3g}" if hundred is not None else ""))
        lines.append(f"| {int(m)} | " + " | ".join(cells) + f" | {theirs} |")
    claims = [f"{r['claim']} ({r['source']})" for _, r in paper.iterrows() if isinstance(r["claim"], str)]
    return lines + ["", "Leakage in %, mean ± std over 5 repeats (raw answers: and how many repeats recovered "
                        "everyone). The paper: " + "; ".join(claims) + "."]


def _workshop_fig3(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| answers | decoder | leakage (%) | individuals recovered (of 1,000) | SP err: mean of the runs' means / "
             "median of their medians | "
             "paper |", "|---|---|---|---|---|---|"]
    labels = {"raw": "raw (ε = ∞)", "smooth-cauchy": "Attribute-Conceal, ε = 100"}
    for protocol, label in labels.items():
        said = paper[paper["protocol"] == protocol]
        theirs = "; ".join(f"{r['claim']} (Avg. SP err {r['avg_sp_err']:g})" for _, r in said.iterrows())
        for decoder in ("l1", "robust"):
            rows = _ok(_protocol_is(results, protocol), attack__decoder=decoder)
            err, med = _num(rows, "avg_query_error"), _num(rows, "median_query_error")
            lines.append(f"| {label} | {'l1 (Alg. 2)' if decoder == 'l1' else 'LAD'} | {_leak_cell(rows)} "
                         f"| {_num(rows, 'correct').mean():.1f} | {err.mean():.4g} / {med.median():.4g} "
                         f"| {theirs if decoder == 'l1' else ''} |")
    return lines + ["", "Mean over 5 repeats (each a new synthetic audit set with N0 = 10, new models and noise)."]


def _workshop_fig4(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    raw, dp = (results[results["run"] == run] for run in ("workshop-fig4", "workshop-fig4-conceal"))
    lines = ["| m | m / n | raw: recovered of 700 (leakage, exact) | ε = 1000, l1: recovered (leakage) | ε = 1000, "
             "LAD: recovered (leakage) | SP err at ε = 1000 (×10⁻³): median of the runs' medians / mean of "
             "their means |", "|---|---|---|---|---|---|"]
    for m in sorted(_num(results, "attack.max_queries").unique()):
        r = _ok(raw, attack__max_queries=int(m))
        cells = [f"{_num(r, 'correct').mean():.0f}; {_leak_cell(r)}"]
        for decoder in ("l1", "robust"):
            rows = _ok(dp, attack__max_queries=int(m), attack__decoder=decoder)
            cells.append(f"{_num(rows, 'correct').mean():.0f} ({_num(rows, 'leakage').mean():.0f})")
        noisy = _ok(dp, attack__max_queries=int(m), attack__decoder="l1")
        cells.append(f"{_g(1000 * _num(noisy, 'median_query_error').median())} / "
                     f"{_g(1000 * _num(noisy, 'avg_query_error').mean())}")
        lines.append(f"| {int(m)} | {m / 700:.2f} | " + " | ".join(cells) + " |")
    said = []
    for _, p in paper.iterrows():
        head = (f"m = {int(p['m'])}, " if pd.notna(p["m"]) else "") + f"ε = {p['epsilon']}"
        parts = ([f"{int(p['recovered'])} of 1,000 recovered"] if pd.notna(p["recovered"]) else []) + \
                ([f"Avg. SP err {1000 * float(p['avg_sp_err']):.3g}e-3"] if pd.notna(p["avg_sp_err"]) else [])
        said.append(f"{head}: " + ", ".join(parts + ([str(p["claim"])] if isinstance(p["claim"], str) else []))
                    + f" ({p['source']})")
    return lines + ["", "Means over 2 repeats; German Credit, sex, audit set of 700 (N0 about 210). The paper "
                        "(n = 1,000): " + "; ".join(said) + "."]


def _facct_fig3(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    ours, lap = (results[results["run"] == run] for run in ("facct-fig3-tradeoff", "facct-fig3-laplace"))
    lines = ["| n | N0 | m | ε | Attribute-Conceal: SP err (×10⁻³), median of the runs' medians / mean of their "
             "means | leakage l1 (%) | leakage LAD (%) | Laplace: SP err (×10⁻³), median / mean | Laplace: leakage "
             "LAD (%) |", "|---|---|---|---|---|---|---|---|---|"]
    cells = ours[["dataset.audit_size", "dataset.minority", "attack.max_queries", "protocol.epsilon"]]
    for n, n0, m, eps in sorted({tuple(float(v) for v in row) for row in cells.itertuples(index=False)}):
        cell = {"dataset__audit_size": int(n), "dataset__minority": int(n0), "protocol__epsilon": eps}
        l1, lad = (_ok(ours, **cell, attack__decoder=d) for d in ("l1", "robust"))
        base = _ok(lap, **cell)

        def err(rows: pd.DataFrame) -> str:
            if rows.empty:
                return "not recorded"
            return (f"{_g(1000 * _num(rows, 'median_query_error').median())} / "
                    f"{_g(1000 * _num(rows, 'avg_query_error').mean())}")

        lines.append(f"| {_n(n)} | {_n(n0)} | {int(m)} | {_g(eps)} | {err(lad)} | {_num(l1, 'leakage').mean():.0f} "
                     f"| {_num(lad, 'leakage').mean():.0f} | {err(base)} "
                     f"| {_num(base, 'leakage').mean():.0f} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    ratios: dict[str, list[float]] = {"Attribute-Conceal": [], "Laplace": []}
    for (run, n, n0, m, eps), rows in pd.concat([_ok(ours, attack__decoder="robust"), _ok(lap)]).groupby(
            ["run", "dataset.audit_size", "dataset.minority", "attack.max_queries", "protocol.epsilon"]):
        n, n0, m, eps = (float(v) for v in (n, n0, m, eps))
        if run == "facct-fig3-tradeoff":  # Thm. 7: Cauchy noise of scale 6 S / eps; the median of |Cauchy(s)| is s
            beta = eps / (6 * m)
            smooth = max(m / (n - n0 + 1) + m / n0, math.exp(-(n0 - 2) * beta) * (m / (n - 1) + m / 2))
            ratios["Attribute-Conceal"].append(_num(rows, "median_query_error").median() / (6 * smooth / eps))
        else:  # Thm. 5: Laplace noise of scale m (1/2 + 1/(n - 1)) / eps; the median of |Laplace(b)| is b ln 2
            ratios["Laplace"].append(_num(rows, "median_query_error").median()
                                     / (math.log(2) * m * (0.5 + 1 / (n - 1)) / eps))
    fit = "; ".join(f"{name} {min(r):.2f} to {max(r):.2f} (mean {sum(r) / len(r):.2f}, {len(r)} cells)"
                    for name, r in ratios.items() if r)
    return lines + ["", "Means over 3 repeats (the paper: 50); the errors of Attribute-Conceal are those of the LAD "
                        "rows. Each cell's median error over the median |noise| its theorem prescribes (Thm. 7: "
                        "6 S/ε with S = max(m/(N1 + 1) + m/N0, e^(−(N0 − 2)β) (m/(n − 1) + m/2)), β = ε/(6m); "
                        f"Thm. 5: ln 2 · m (1/2 + 1/(n − 1))/ε): {fit}.", "", f"The paper: {claim}."]



def _forest_search(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | forest | runs | baseline (%) | corrected (%) | gain | better / unchanged / worse "
             "| cross-validated accuracy of the search | depths chosen |", "|---|---|---|---|---|---|---|---|---|"]
    eps = 1e-9
    for dataset, label in REMOVER_SETS:
        for forest, name in (("fixed", "fixed (parley default)"), ("search", "searched (20 candidates, 3 folds)")):
            rows = _ok(results, dataset__name=dataset, attack__forest=forest)
            if rows.empty:
                lines.append(f"| {label} | {name} | not recorded | | | | | | |")
                continue
            base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy",
                                                              "improvement"))
            chosen = [ast.literal_eval(str(cell)) for cell in rows["attack_forest"].dropna()] \
                if "attack_forest" in rows else []
            depths = pd.Series([str(c.get("max_depth") or "unlimited") for c in chosen if isinstance(c, dict)])
            score = _num(rows, "attack_forest_cv_score") if "attack_forest_cv_score" in rows else pd.Series()
            lines.append(
                f"| {label} | {name} | {len(rows)} | {base.mean():.2f} ± {base.std(ddof=1):.2f} "
                f"| {corr.mean():.2f} ± {corr.std(ddof=1):.2f} | {_signed(gain.mean())} "
                f"| {int((gain > eps).sum())} / {int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} "
                f"| {f'{100 * score.mean():.1f} %' if len(score) else '–'} "
                f"| {', '.join(f'{d} (×{c})' if c > 1 else d for d, c in depths.value_counts().items()) or '–'} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


def _tolerance_49(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set, metric | tolerance | certified value | baseline (%) | corrected (%) | gain |",
             "|---|---|---|---|---|---|"]
    done = _ok(results)
    summary = []
    for (dataset, metric), rows in done.groupby(["dataset.name", "learner.metric"], sort=True):
        rows = rows.sort_values("learner.tolerance", key=lambda c: pd.to_numeric(c, errors="coerce"))
        for _, row in rows.iterrows():
            lines.append(f"| {dataset} {str(metric).upper()} | {_g(float(row['learner.tolerance']))} "
                         f"| {float(row['certificate_value']):.4f} | {100 * float(row['baseline_accuracy']):.2f} "
                         f"| {100 * float(row['corrected_accuracy']):.2f} "
                         f"| {_signed(100 * float(row['improvement']))} |")
        gain, tol = 100 * _num(rows, "improvement"), _num(rows, "learner.tolerance")
        tight, loose = gain[tol <= 0.01], gain[tol > 0.05]
        summary.append(f"{dataset} {str(metric).upper()}: {len(rows)} tolerances, better in "
                       f"{int((gain > 1e-9).sum())}, unchanged in {int((gain.abs() <= 1e-9).sum())}, worse in "
                       f"{int((gain < -1e-9).sum())}; mean gain {_signed(gain.mean())} points, "
                       f"{_signed(tight.mean())} at tolerances up to 0.01 ({len(tight)}), {_signed(loose.mean())} "
                       f"above 0.05 ({len(loose)}); median wall time of a cell {_num(rows, 'wall_s').median():.1f} s")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + [""] + [f"- {line}." for line in summary] + ["", f"The paper: {claim}."]


REVEAL_ROOTS = ("parley.parties.attacks.query_leakage", "parley.parties.attacks.decoders",
                "parley.protocols.mechanisms.raw", "parley.scenarios.datasets", "parley.parties.learners.base_model")
CONCEAL_ROOTS = REVEAL_ROOTS + ("parley.protocols.mechanisms.smooth_sensitivity", "parley.protocols.mechanisms.laplace",
                                "parley.protocols.dp")
CORRECTION_ROOTS = ("parley.parties.attacks.reconstruction_correction", "parley.parties.attacks.solvers",
                    "parley.protocols.mechanisms.fairness_certificate", "parley.parties.learners.fair_targets",
                    "parley.scenarios.datasets")
#: The flow, and the modules of the learners the crime studies name (the flow finds them by name in the registry,
#: which a static scan cannot follow): frr (fair_baselines), the span learners, fkrr, fgr, lfr, fpca1 and fpca2.
CRIME_ROOTS = ("parley.scenarios.exchanges.cov_threshold", "parley.parties.learners.fair_span",
               "parley.parties.learners.fair_baselines", "parley.parties.learners.fair_kernel",
               "parley.parties.learners.prejudice_remover", "parley.parties.learners.lfr",
               "parley.parties.learners.fair_pca", "parley.scenarios.datasets",
               "parley.protocols.mechanisms.covariance_threshold")
STUDY = "parley study {name} --out studies/{out} --workers {workers} --no-runs --set backend=local{extra}"


def _study(name: str, out: str = "", workers: int = 2, extra: str = "") -> tuple[str, str]:
    return out or name, STUDY.format(name=name, out=out or name, workers=workers, extra=extra)


TABLES: dict[str, Table] = {t.name: t for t in (
    Table("sensitivities", (), (), _sensitivity_table, paper_text=True, compute=_sensitivities),
    Table("reveal-table1", (_study("reveal-table1"),), REVEAL_ROOTS, _reveal_table1,
          ("scenarios/catalog/studies/reveal-table1.toml", "scenarios/catalog/adult-reveal-cs-iid.toml"), True),
    Table("conceal-table1", (_study("conceal-table1"),), CONCEAL_ROOTS, _conceal_table1,
          ("scenarios/catalog/studies/conceal-table1.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table2", (_study("conceal-table2"),), CONCEAL_ROOTS, _conceal_table2,
          ("scenarios/catalog/studies/conceal-table2.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table3", (_study("conceal-table3"),), CONCEAL_ROOTS, _conceal_table3,
          ("scenarios/catalog/studies/conceal-table3.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table4", (_study("conceal-table4"),), CONCEAL_ROOTS, _conceal_table4,
          ("scenarios/catalog/studies/conceal-table4.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("correction-authors", (
        _study("correction-authors", workers=1), _study("correction-seeds", workers=1)),
          CORRECTION_ROOTS, _correction_authors,
          ("scenarios/catalog/studies/correction-authors.toml", "scenarios/catalog/studies/correction-seeds.toml",
           "scenarios/catalog/adult-correction-authors.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-depth", (_study("correction-forest-depth"),), CORRECTION_ROOTS, _forest_depth,
          ("scenarios/catalog/studies/correction-forest-depth.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-remover", (_study("correction-remover"),),
          CORRECTION_ROOTS + ("parley.parties.learners.correlation_remover",), _correction_remover,
          ("scenarios/catalog/studies/correction-remover.toml", "scenarios/catalog/adult-correction-remover.toml")),
    Table("correction-hidden", (_study("correction-hidden"),),
          CORRECTION_ROOTS + ("parley.parties.learners.correlation_remover",), _correction_hidden,
          ("scenarios/catalog/studies/correction-hidden.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-search", (_study("correction-forest-search"),),
          CORRECTION_ROOTS + ("parley.parties.attacks.correction_search",), _forest_search,
          ("scenarios/catalog/studies/correction-forest-search.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-tolerance-49",
          (_study("correction-tolerance-49", "correction-tolerance-49-adult-sp",
                  extra=" --set 'grid.dataset.name,dataset.protected,dataset.audit_size=[[\"adult\",\"sex\",15074]]'"
                        " --set 'grid.learner.metric,protocol.metric=[[\"sp\",\"sp\"]]'"),),
          CORRECTION_ROOTS, _tolerance_49,
          ("scenarios/catalog/studies/correction-tolerance-49.toml", "scenarios/catalog/adult-correction.toml")),
    Table("compas-table2", (_study("compas-table2"),), COMPAS_ROOTS, _compas_table2,
          ("scenarios/catalog/studies/compas-table2.toml", "scenarios/catalog/compas-cov-threshold.toml")),
    Table("crime-table1", (_study("crime-table1"), _study("crime-table1-dfrr"),
                           _study("crime-table1", "crime-table1-cut07",
                                  extra=" --set dataset.label_threshold=0.7 --set repeats=20"),
                           _study("crime-table1-fpca")),
          CRIME_ROOTS, _crime_table1,
          ("scenarios/catalog/studies/crime-table1.toml", "scenarios/catalog/studies/crime-table1-dfrr.toml",
           "scenarios/catalog/studies/crime-table1-fpca.toml", "scenarios/catalog/crime-cov-threshold.toml")),
)}

#: The query-leakage paper's remarks and figures (FAccT Remark 3, Fig. 2(a), Fig. 3; the workshop text's Fig. 3, 4).
_CATALOG = "scenarios/catalog/"
TABLES.update({t.name: t for t in (
    Table("reveal-remark3", (_study("reveal-remark3"),), REVEAL_ROOTS + ("parley.parties.attacks.n_minus_one",),
          _remark3, (_CATALOG + "studies/reveal-remark3.toml", _CATALOG + "adult-reveal-n-minus-1.toml")),
    Table("fig2a", (_study("fig2a-leakage-queries"), _study("fig2a-conceal")), CONCEAL_ROOTS, _fig2a,
          (_CATALOG + "studies/fig2a-leakage-queries.toml", _CATALOG + "studies/fig2a-conceal.toml",
           _CATALOG + "adult-reveal-cs-iid.toml", _CATALOG + "adult-conceal.toml"), True),
    Table("workshop-fig3", (_study("workshop-fig3"),), CONCEAL_ROOTS, _workshop_fig3,
          (_CATALOG + "studies/workshop-fig3.toml", _CATALOG + "adult-conceal.toml")),
    Table("workshop-fig4", (_study("workshop-fig4"), _study("workshop-fig4-conceal")), CONCEAL_ROOTS, _workshop_fig4,
          (_CATALOG + "studies/workshop-fig4.toml", _CATALOG + "studies/workshop-fig4-conceal.toml",
           _CATALOG + "adult-reveal-cs-iid.toml", _CATALOG + "adult-conceal.toml"), True),
    Table("facct-fig3", (_study("facct-fig3-tradeoff"), _study("facct-fig3-laplace")), CONCEAL_ROOTS, _facct_fig3,
          (_CATALOG + "studies/facct-fig3-tradeoff.toml", _CATALOG + "studies/facct-fig3-laplace.toml",
           _CATALOG + "adult-conceal.toml")),
)})


# ------------------------------------------------------------------------------------ digests of the code


def _module_file(module: str) -> Path | None:
    """The file of a parley module in this checkout (``parley.a.b`` is ``a/b.py`` or ``a/b/__init__.py``)."""
    parts = module.split(".")[1:]
    if not parts:
        return REPO / "parley" / "__init__.py"
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


#: ``import parley.x`` / ``from parley.x import a, b`` / ``from .x import (a,\n b)``, at any indentation.
_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+(?P<plain>[\w., \t]+)|from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+"
                     r"(?:\((?P<group>[^)]*)\)|(?P<names>[^\n#]+)))", re.M)


def _imports(path: Path, module: str) -> set[str]:
    """The parley modules ``path`` imports (absolute or relative, at any depth of the file; a text scan)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    text = re.sub(r"#[^\n]*", "", path.read_text(encoding="utf-8"))  # a comment may hold a parenthesis
    for match in _IMPORT.finditer(text):
        if match["plain"]:
            found.update(name.split(" as ")[0].strip() for name in match["plain"].split(","))
            continue
        base = match["base"]
        level = len(base) - len(base.lstrip("."))
        if level:
            anchor = package.split(".")
            base = ".".join(anchor[:len(anchor) - level + 1] + ([base[level:]] if base[level:] else []))
        names = re.sub(r"#[^\n]*", "", match["group"] or match["names"] or "")
        members = [f"{base}.{name.split(' as ')[0].strip()}" for name in names.replace("\\", " ").split(",")
                   if name.strip()]
        modules = [member for member in members if _module_file(member) is not None]
        found.update(modules)
        if len(modules) < len(members):  # a name the package itself defines (or re-exports)
            found.add(base)
    return {name for name in found if name.startswith("parley.")}


def import_closure(roots: Iterable[str]) -> list[Path]:
    """Every file of the parley modules ``roots`` import, directly or not, and of their packages (sorted)."""
    followed, parents = _closure(roots)
    return sorted(followed | parents)


def _closure(roots: Iterable[str]) -> tuple[set[Path], set[Path]]:
    """The files of the modules ``roots`` import, directly or not (followed), and of their parent packages only.

    A module is followed into its own imports when it is imported (``import parley.x``, ``from
    parley.x import name`` with ``name`` defined in ``x``) or is a root. A package that is only the
    parent of such a module, or whose submodule is what ``from package import submodule`` takes, is
    hashed but not followed: its other submodules (other attacks, other protocols registering
    themselves) do not compute these numbers. ``parley/__init__.py`` is left out: it imports the rest
    only inside its functions.
    """
    followed: dict[str, Path] = {}
    parents: set[Path] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in followed:
            continue
        path = _module_file(module)
        if path is None:
            continue
        followed[module] = path
        for i in range(2, module.count(".") + 1):
            parent = _module_file(".".join(module.split(".")[:i]))
            if parent is not None:
                parents.add(parent)
        todo.extend(_imports(path, module))
    files = set(followed.values())
    return files, parents - files


def _code(path: Path, parent_only: bool = False) -> bytes:
    """What of ``path`` can change a number: a module's syntax tree without docstrings (comments are not in it).

    A reworded docstring or comment leaves the digest as it was; any change to the code changes it. Other
    files (catalog TOMLs) count byte for byte. A package that is only the parent of a followed module
    (``parent_only``) counts without its top-level imports: they are what is not followed (a learner or a
    protocol registered beside the ones a table uses does not compute its numbers), its own code counts.
    """
    if path.suffix != ".py":
        return path.read_bytes()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if parent_only:
        tree.body = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree).encode()


def file_digests(table: Table) -> dict[str, str]:
    """sha256 (16 hex digits) of the code of each file in the import closure of ``table.roots``, and its TOMLs."""
    followed, parents = _closure(table.roots)
    codes = {p: _code(p, parent_only=p in parents) for p in followed | parents}
    codes.update({REPO / f: (REPO / f).read_bytes() for f in table.files})
    return {str(p.relative_to(REPO)): hashlib.sha256(code).hexdigest()[:16] for p, code in sorted(codes.items())}


def digest(table: Table) -> str:
    """sha256 over :func:`file_digests` (paths and contents)."""
    return hashlib.sha256(json.dumps(file_digests(table), sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------- files and the page


def _paths(name: str) -> tuple[Path, Path, Path]:
    return DOCS / f"{name}.paper.csv", DOCS / f"{name}.results.csv", DOCS / f"{name}.meta.json"


def meta(name: str) -> dict[str, object]:
    return dict(json.loads(_paths(name)[2].read_text(encoding="utf-8")))


def render(name: str) -> str:
    """The block ``docs/reproductions.md`` must hold for ``name``, from the checked-in files alone."""
    table = TABLES[name]
    paper_csv, results_csv, _ = _paths(name)
    paper = pd.read_csv(paper_csv, comment="#", dtype=str if table.paper_text else None)
    if table.compute is not None:
        lines = table.renderer(table.compute(), paper)
        source = "parley's code, computed at every check"
    else:
        info = meta(name)
        lines = table.renderer(pd.read_csv(results_csv, low_memory=False), paper)
        source = (f"[{name}.results.csv](reproductions/{name}.results.csv) (runs of commit {str(info['commit'])[:10]}, "
                  f"recorded {info['date']})")
    provenance = (f"Written by `python -m parley.scenarios.reproduce write {name}` from {source} and "
                  f"[{name}.paper.csv](reproductions/{name}.paper.csv).")
    return "\n".join([BEGIN.format(name=name), *lines, "", provenance, END])


def page_block(name: str, page: str) -> str | None:
    """The generated block of ``name`` on ``page``, markers included; None if the page has none."""
    found = re.search(re.escape(BEGIN.format(name=name)) + r".*?" + re.escape(END), page, re.S)
    return found.group(0) if found else None


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _uncommitted(paths: list[str]) -> list[str]:
    """The ``paths`` whose checkout differs from the commit (git), or [] where git cannot say."""
    try:
        out = subprocess.run(["git", "diff", "--name-only", "HEAD", "--", *paths], cwd=REPO, capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return []
    return out.stdout.split()


def record(name: str, studies: Path) -> None:
    """Copy the study runs' results under ``docs/reproductions`` with the commit, the date and the digest."""
    table = TABLES[name]
    frames = []
    for folder, _ in table.runs:
        frame = pd.read_csv(studies / folder / "results.csv", low_memory=False)
        frame.insert(0, "run", folder)
        frames.append(frame.drop(columns=[c for c in ("node", "failure") if c in frame]))
    _, results_csv, meta_json = _paths(name)
    DOCS.mkdir(parents=True, exist_ok=True)
    pd.concat(frames, ignore_index=True).to_csv(results_csv, index=False)
    info = {"table": name, "commit": _git_commit(), "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d"),
            "digest": digest(table), "commands": [command for _, command in table.runs],
            "depends_on": file_digests(table)}
    # The digest is of the checkout as recorded; files that differ from the commit then are named.
    info["uncommitted_at_record"] = _uncommitted(list(info["depends_on"]))
    meta_json.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")


def write(name: str, studies: Path | None = None) -> None:
    """Record ``studies``' runs first if given, then replace ``name``'s block on the page (which must have one)."""
    if studies is not None and TABLES[name].compute is None:
        record(name, studies)
    page = PAGE.read_text(encoding="utf-8")
    old = page_block(name, page)
    if old is None:
        raise SystemExit(f"docs/reproductions.md has no {BEGIN.format(name=name)} ... {END} block to write")
    PAGE.write_text(page.replace(old, render(name)), encoding="utf-8")


def check(names: Sequence[str] = ()) -> list[str]:
    """What is wrong: blocks that differ from their rendering, and tables whose code changed since their runs."""
    page = PAGE.read_text(encoding="utf-8")
    problems = []
    for name in names or sorted(TABLES):
        block = page_block(name, page)
        commands = "; ".join(command for _, command in TABLES[name].runs)
        if TABLES[name].compute is None and not _paths(name)[2].is_file():
            problems.append(f"{name}: no recorded results (docs/reproductions/{name}.meta.json); run {commands}; then "
                            f"`python -m parley.scenarios.reproduce write {name} --studies studies`")
            continue
        if block is None:
            problems.append(f"{name}: docs/reproductions.md has no generated block")
        elif block != render(name):
            problems.append(f"{name}: the table on docs/reproductions.md differs from what its recorded results give; "
                            f"run `python -m parley.scenarios.reproduce write {name}`")
        problems += stale(name)
    return problems


def stale(name: str) -> list[str]:
    """Whether the code a recorded table's numbers depend on changed since they were recorded (digests only)."""
    if TABLES[name].compute is not None:
        return []  # computed at every render: never stale
    info = meta(name)
    if info["digest"] == digest(TABLES[name]):
        return []
    recorded = info.get("depends_on")
    now, then = file_digests(TABLES[name]), recorded if isinstance(recorded, dict) else {}
    changed = sorted(p for p in set(now) | set(then) if now.get(p) != then.get(p))
    commands = "; ".join(command for _, command in TABLES[name].runs)
    return [f"{name}: the code its numbers depend on changed since they were recorded (commit "
            f"{str(info['commit'])[:10]}): {', '.join(changed)}; re-run {commands}; then `python -m "
            f"parley.scenarios.reproduce write {name} --studies studies`"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parley.scenarios.reproduce", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the generated tables and the runs they read")
    w = sub.add_parser("write", help="write a table's block on docs/reproductions.md")
    w.add_argument("name", choices=sorted(TABLES))
    w.add_argument("--studies", type=Path, help="record DIR/<run>/results.csv first (commit, date, code digest)")
    c = sub.add_parser("check", help="fail if a block differs from its rendering or its code changed since")
    c.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "list":
        for table in TABLES.values():
            print(table.name)
            for folder, command in table.runs:
                print(f"  {folder}: {command}")
        return 0
    if args.command == "write":
        write(args.name, args.studies)
        return 0
    problems = check(args.names)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

