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


def _conceal_table3(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| n | N0 | ε | mean SP err, ours | median SP err, ours | paper (mean) | leakage l1 | leakage LAD | "
             "paper leakage |", "|---|---|---|---|---|---|---|---|---|"]
    for _, p in paper.iterrows():
        cell = {"dataset__audit_size": int(p["n"]), "dataset__minority": int(p["N0"]),
                "protocol__epsilon": float(p["epsilon"])}
        lad = _ok(results, **cell, attack__decoder="robust")
        l1 = _num(_ok(results, **cell, attack__decoder="l1"), "leakage")
        lines.append(f"| {_n(int(p['n']))} | {_n(int(p['N0']))} | {p['epsilon']} "
                     f"| {1000 * _num(lad, 'avg_query_error').mean():,.0f} "
                     f"| {1000 * _num(lad, 'median_query_error').median():,.1f} | {p['err']} "
                     f"| {f'{l1.mean():.0f}' if len(l1) else '–'} | {_num(lad, 'leakage').mean():.0f} "
                     f"| {p['leakage']} |")
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
CRIME_MISSING = {"fpca1": "not implemented here (Samadi et al.'s fair PCA: an SDP plus an LP rounding step)",
                 "fpca2": "not implemented here (Olfat and Aswani's fair PCA: an SDP per projection)"}


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
    lines += ["", f"Median wall time of a run: {walls.median():.1f} s ({len(walls)} runs).", "",
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
    return lines


REVEAL_ROOTS = ("parley.parties.attacks.query_leakage", "parley.parties.attacks.decoders",
                "parley.protocols.mechanisms.raw", "parley.scenarios.datasets", "parley.parties.learners.base_model")
CONCEAL_ROOTS = REVEAL_ROOTS + ("parley.protocols.mechanisms.smooth_sensitivity", "parley.protocols.mechanisms.laplace",
                                "parley.protocols.dp")
CORRECTION_ROOTS = ("parley.parties.attacks.reconstruction_correction", "parley.parties.attacks.solvers",
                    "parley.protocols.mechanisms.fairness_certificate", "parley.parties.learners.fair_targets",
                    "parley.scenarios.datasets")
CRIME_ROOTS = ("parley.scenarios.exchanges.cov_threshold", "parley.parties.learners", "parley.scenarios.datasets",
               "parley.protocols.mechanisms.covariance_threshold")
STUDY = "parley study {name} --out studies/{out} --workers {workers} --no-runs --set backend=local{extra}"


def _study(name: str, out: str = "", workers: int = 2, extra: str = "") -> tuple[str, str]:
    return out or name, STUDY.format(name=name, out=out or name, workers=workers, extra=extra)


TABLES: dict[str, Table] = {t.name: t for t in (
    Table("reveal-table1", (_study("reveal-table1"),), REVEAL_ROOTS, _reveal_table1,
          ("scenarios/catalog/studies/reveal-table1.toml", "scenarios/catalog/adult-reveal-cs-iid.toml"), True),
    Table("conceal-table1", (_study("conceal-table1"),), CONCEAL_ROOTS, _conceal_table1,
          ("scenarios/catalog/studies/conceal-table1.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table3", (_study("conceal-table3"),), CONCEAL_ROOTS, _conceal_table3,
          ("scenarios/catalog/studies/conceal-table3.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("correction-authors", (
        _study("correction-authors", workers=1), _study("correction-seeds", workers=1)),
          CORRECTION_ROOTS, _correction_authors,
          ("scenarios/catalog/studies/correction-authors.toml", "scenarios/catalog/studies/correction-seeds.toml",
           "scenarios/catalog/adult-correction-authors.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-depth", (_study("correction-forest-depth"),), CORRECTION_ROOTS, _forest_depth,
          ("scenarios/catalog/studies/correction-forest-depth.toml", "scenarios/catalog/adult-correction.toml")),
    Table("crime-table1", (_study("crime-table1"), _study("crime-table1-dfrr"),
                           _study("crime-table1", "crime-table1-cut07",
                                  extra=" --set dataset.label_threshold=0.7 --set repeats=20")),
          CRIME_ROOTS, _crime_table1,
          ("scenarios/catalog/studies/crime-table1.toml", "scenarios/catalog/studies/crime-table1-dfrr.toml",
           "scenarios/catalog/crime-cov-threshold.toml")),
)}


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
    for match in _IMPORT.finditer(path.read_text(encoding="utf-8")):
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
    results = pd.read_csv(results_csv, low_memory=False)
    info = meta(name)
    lines = table.renderer(results, paper)
    provenance = (f"Written by `python -m parley.scenarios.reproduce write {name}` from "
                  f"[{name}.results.csv](reproductions/{name}.results.csv) (runs of commit {str(info['commit'])[:10]}, "
                  f"recorded {info['date']}) and [{name}.paper.csv](reproductions/{name}.paper.csv).")
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
    if studies is not None:
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
        if block is None:
            problems.append(f"{name}: docs/reproductions.md has no generated block")
        elif block != render(name):
            problems.append(f"{name}: the table on docs/reproductions.md differs from what its recorded results give; "
                            f"run `python -m parley.scenarios.reproduce write {name}`")
        info = meta(name)
        if info["digest"] != digest(TABLES[name]):
            recorded = info.get("depends_on")
            now, then = file_digests(TABLES[name]), recorded if isinstance(recorded, dict) else {}
            changed = sorted(p for p in set(now) | set(then) if now.get(p) != then.get(p))
            commands = "; ".join(command for _, command in TABLES[name].runs)
            problems.append(f"{name}: the code its numbers depend on changed since they were recorded (commit "
                            f"{str(info['commit'])[:10]}): {', '.join(changed)}; re-run {commands}; then `python -m "
                            f"parley.scenarios.reproduce write {name} --studies studies`")
    return problems


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

