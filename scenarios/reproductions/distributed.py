"""The distributed-fair-learning paper's tables (Table I on Community Crime, Table II on COMPAS)."""

from __future__ import annotations

import json

import pandas as pd

from parley.scenarios.reproductions.table import Table, _g, _n, _num, _ok, _study

#: What Table II's numbers depend on: the cov-threshold exchange and mechanism, the data sets, its learners' modules.
COMPAS_ROOTS = ("parley.scenarios.exchanges.cov_threshold", "parley.protocols.mechanisms.covariance_threshold",
                "parley.scenarios.datasets", *(f"parley.parties.learners.{module}" for module in (
                    "fair_span", "fair_baselines", "fair_kernel", "prejudice_remover", "lfr", "fair_pca")))


#: Learners of Table II trained with s: the accept set does not enter, so they run at one rho.
WITH_S = ("frr", "fkrr", "fgr", "lfr", "fpca1", "fpca2", "expgrad-dp")


#: The flow, and the modules of the learners the crime studies name (the flow finds them by name in the registry,
#: which a static scan cannot follow): frr (fair_baselines), the span learners, fkrr, fgr, lfr, fpca1 and fpca2.
CRIME_ROOTS = ("parley.scenarios.exchanges.cov_threshold", "parley.parties.learners.fair_span",
               "parley.parties.learners.fair_baselines", "parley.parties.learners.fair_kernel",
               "parley.parties.learners.prejudice_remover", "parley.parties.learners.lfr",
               "parley.parties.learners.fair_pca", "parley.scenarios.datasets",
               "parley.protocols.mechanisms.covariance_threshold")


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


TABLES = (
    Table("compas-table2", (_study("compas-table2"),), COMPAS_ROOTS, _compas_table2,
          ("scenarios/catalog/studies/compas-table2.toml", "scenarios/catalog/compas-cov-threshold.toml")),
    Table("crime-table1", (_study("crime-table1"), _study("crime-table1-dfrr"),
                           _study("crime-table1", "crime-table1-cut07",
                                  extra=" --set dataset.label_threshold=0.7 --set repeats=20"),
                           _study("crime-table1-fpca")),
          CRIME_ROOTS, _crime_table1,
          ("scenarios/catalog/studies/crime-table1.toml", "scenarios/catalog/studies/crime-table1-dfrr.toml",
           "scenarios/catalog/studies/crime-table1-fpca.toml", "scenarios/catalog/crime-cov-threshold.toml")),
)
