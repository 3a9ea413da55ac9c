"""The distributed-fair-learning paper's tables (Table I on Community Crime, Table II on COMPAS)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from parley.scenarios.reproductions.table import Table, _claims, _g, _n, _num, _ok, _signed, _study

#: What Table II's numbers depend on: the cov-threshold exchange and mechanism, the data sets, its learners' modules.
COMPAS_ROOTS = ("parley.scenarios.exchanges.cov_threshold", "parley.protocols.mechanisms.covariance_threshold",
                "parley.scenarios.datasets", *(f"parley.parties.learners.{module}" for module in (
                    "fair_span", "fair_baselines", "fair_kernel", "prejudice_remover", "lfr", "fair_pca")))


#: The threshold-inversion study: Table II's modules and the attack's package (its probes and decoders).
ATTACK_ROOTS = (*COMPAS_ROOTS, "parley.parties.attacks.threshold_inversion")


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
        lines.append(_crime_row(label, _ok(main, learner=json.dumps({"name": p["learner"]})), label.startswith("DF")))
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
        label = str(p["method"]).split(" [")[0]
        lines.append(_crime_row(label, _ok(cut07, learner=json.dumps({"name": p["learner"]})), label.startswith("DF")))
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


#: The span study's second run: the expanded encoding with this many hypotheses, so that the span is full again.
SPAN_HYPOTHESES = 2000


def _span_cell(label: str, cell: pd.DataFrame, rho: float, of: str) -> str:
    """One (encoding, rho) line of the span study: k, span rank / linear rank, SP and error."""
    k, sp, er = (_num(cell, c) for c in ("accepted", "statistical_parity", "error"))
    return (f"| {label} | {_g(rho)} | {k.mean():.1f} ± {k.std():.1f}{of} | {_g(_num(cell, 'span_rank').mean())} / "
            f"{_g(_num(cell, 'linear_rank').mean())} | {sp.mean():.3f} ± {sp.std():.3f} | {er.mean():.3f} ± "
            f"{er.std():.3f} |")


def _compas_span(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| encoding | ρ | k of 200 | span rank / linear rank | SP | error |", "|---|---|---|---|---|---|"]
    main, wide = (_ok(results[results["run"] == run]) for run in ("compas-table2-span", "compas-table2-span-2000"))
    parts = [(main, "standard", "standard", ""), (main, "expanded", "expanded", ""),
             (wide, "expanded", f"expanded, {SPAN_HYPOTHESES:,} hypotheses", f" (of {SPAN_HYPOTHESES:,})")]
    for rows, features, label, of in parts:
        for rho in sorted(_num(rows, "protocol.rho").unique(), reverse=True):
            lines.append(_span_cell(label, _ok(rows, dataset__features=features, protocol__rho=float(rho)),
                                    float(rho), of))
    paper = paper[paper["learner"] == "dfrr"]  # Table II's row of the learner studied here
    for _, p in paper.iterrows():
        method = str(p["method"]).split(" [")[0]
        lines.append(f"| *paper {method} ({p['source']}; ρ not printed)* | | | | *{p['sp']:.4f} ± {p['sp_std']:.4f}* "
                     f"| *{p['error']:.4f} ± {p['error_std']:.4f}* |")
    cov = {f: _num(_ok(main, dataset__features=f, protocol__rho=0.1), "model_cov").mean()
           for f in ("expanded", "standard")}
    expanded = _ok(main, dataset__features="expanded", protocol__rho=0.1)
    ratio = _num(expanded, "statistical_parity").mean() / float(paper["sp"].iloc[0])
    return lines + ["", f"At ρ = 0.1 on the expanded encoding the accepted hypotheses span "
                        f"{_num(expanded, 'span_rank').mean():.0f} of {_num(expanded, 'linear_rank').mean():.0f} "
                        f"dimensions and DFRR's SP is {ratio:.0f} times the paper's; cov(f(x), s) of the model "
                        f"(`model_cov`) at ρ = 0.1: {cov['expanded']:.3f} expanded, {cov['standard']:.3f} standard."]


def _frr_lambda(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| FRR λ | SP | error |", "|---|---|---|"]
    done = _ok(results)
    means = []
    for lam in sorted(_num(done, "learner.lam").unique()):
        cell = _ok(done, learner__lam=float(lam))
        sp, er = _num(cell, "statistical_parity"), _num(cell, "error")
        means.append((float(lam), sp.mean(), er.mean(), sp.std()))
        lines.append(f"| {_g(float(lam))} | {sp.mean():.3f} | {er.mean():.3f} |")
    for _, p in paper.iterrows():
        lines.append(f"| *paper {p['method']} ({p['source']}; {p['unprinted']} not printed)* | *{p['sp']:.4f}* "
                     f"| *{p['error']:.4f}* |")
    best, fair = min(means, key=lambda m: m[2]), min(means, key=lambda m: m[1])
    stds = [m[3] for m in means]
    return lines + ["", f"Means over {len(done) // len(means)} repeats. FRR's lowest error is {best[2]:.3f} "
                        f"(λ = {_g(best[0])}, SP {best[1]:.3f}); its lowest SP is {fair[1]:.3f} (λ = {_g(fair[0])}, "
                        f"error {fair[2]:.3f}); the standard deviation of SP over the repeats is "
                        f"{min(stds):.3f}–{max(stds):.3f}."]


def _frontier_gap(rho_rows: pd.DataFrame, frr: pd.DataFrame) -> str:
    """DFRR's SP minus FRR's at DFRR's error (FRR's λ curve interpolated in error), against the SP spread."""
    curve = sorted((_num(_ok(frr, learner__lam=float(lam)), "error").mean(),
                    _num(_ok(frr, learner__lam=float(lam)), "statistical_parity").mean())
                   for lam in _num(frr, "learner.lam").unique())
    errors, sps = np.array([c[0] for c in curve]), np.array([c[1] for c in curve])
    gaps, spreads = [], []
    for rho in _num(rho_rows, "protocol.rho").unique():
        cell = _ok(rho_rows, protocol__rho=float(rho))
        er, sp = _num(cell, "error").mean(), _num(cell, "statistical_parity")
        spreads.append(sp.std())
        if errors[0] <= er <= errors[-1]:
            gaps.append(sp.mean() - float(np.interp(er, errors, sps)))
    spreads += [_num(_ok(frr, learner__lam=float(lam)), "statistical_parity").std()
                for lam in _num(frr, "learner.lam").unique()]
    return (f"At equal error (FRR's λ curve of `compas-frr-lambda` interpolated in error), DFRR's SP minus FRR's is "
            f"{_signed(min(gaps), 3)} to {_signed(max(gaps), 3)} at the {len(gaps)} values of ρ whose error lies "
            f"within FRR's range; the standard deviation of SP over the repeats is {min(spreads):.3f}–"
            f"{max(spreads):.3f} (DFRR and FRR).")


def _trend(rows: pd.DataFrame, name: str) -> str:
    """SP and error of one learner at the largest and the smallest rho."""
    high, low = (float(f(_num(rows, "protocol.rho"))) for f in (np.max, np.min))
    cells = [_ok(rows, protocol__rho=rho) for rho in (high, low)]
    sp = [_num(c, "statistical_parity") for c in cells]
    er = [_num(c, "error").mean() for c in cells]
    return (f"{name}: from ρ = {_g(high)} to {_g(low)} SP {sp[0].mean():.3f} → {sp[1].mean():.3f} "
            f"(± {sp[1].std():.3f} at ρ = {_g(low)}), error {er[0]:.3f} → {er[1]:.3f}")


def _compas_cov_rho(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| ρ | k of 500 | DFGR SP | DFGR error | DFRR SP | DFRR error |", "|---|---|---|---|---|---|"]
    sweep = _ok(results[results["run"] == "compas-cov-rho"])
    for rho in sorted(_num(sweep, "protocol.rho").unique()):
        cells = [_ok(sweep, learner__name=name, protocol__rho=float(rho)) for name in ("dfgr", "dfrr")]
        lines.append(f"| {_g(float(rho))} | {_num(cells[1], 'accepted').mean():.0f} | " + " | ".join(
            f"{_num(c, 'statistical_parity').mean():.3f} | {_num(c, 'error').mean():.3f}" for c in cells) + " |")
    frr = _ok(results[results["run"] == "compas-frr-lambda"])
    claim = _claims(paper)
    summary = [_trend(_ok(sweep, learner__name=name), label) for name, label in (("dfrr", "DFRR"), ("dfgr", "DFGR"))]
    return lines + ["", f"Means over {len(_ok(sweep, learner__name='dfrr', protocol__rho=0.1))} repeats. "
                        + "; ".join(summary) + ". " + _frontier_gap(_ok(sweep, learner__name="dfrr"), frr),
                    "", f"The paper: {claim}."]


#: The defenses of the threshold-inversion study: (policy, noise std on the covariance).
DEFENSES = (("hard", 0.0), ("hard", 0.05), ("hard", 0.1), ("soft", 0.0))


def _first_at(rows: pd.DataFrame, honest: int, mark: float = 95.0) -> str:
    """The fewest answered hypotheses (honest + probes) whose mean leakage reaches ``mark`` %."""
    for probes in sorted(_num(rows, "attack.probes").unique()):
        if _num(_ok(rows, attack__probes=float(probes)), "leakage").mean() >= mark:
            return f"{_n(honest + probes)} answered"
    return "not reached"


def _threshold_attack(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    done = _ok(results)
    # the honest hypotheses: what the attacker saw without a probe of its own
    honest = int(_num(_ok(done, attack__probes=0), "attack_hypotheses_seen").iloc[0])
    lines = [f"| probes (+{honest} honest) | " + " | ".join(f"{p}, noise {n}" for p, n in DEFENSES) + " |",
             "|---|" + "---|" * len(DEFENSES)]
    for probes in sorted(_num(done, "attack.probes").unique()):
        cells = [_num(_ok(done, attack__probes=float(probes), protocol__policy=p, protocol__noise=n), "leakage")
                 for p, n in DEFENSES]
        lines.append(f"| {_n(probes)} | " + " | ".join(f"{c.mean():.1f}" for c in cells) + " |")
    per = {d: _ok(done, protocol__policy=d[0], protocol__noise=d[1]) for d in DEFENSES}
    reach = "; ".join(f"{p}, noise {n}: {_first_at(rows, honest)}" for (p, n), rows in per.items())
    accepted = ", ".join(f"{_num(_ok(rows, attack__probes=0), 'accepted').mean():.0f} ({p}, noise {n})"
                         for (p, n), rows in per.items())
    low = done.loc[_num(done, "leakage").idxmin()]
    claim = _claims(paper)
    return lines + ["", f"Mean of {len(_ok(done, attack__probes=0, protocol__policy='hard', protocol__noise=0.0))} "
                        f"repeats. Mean leakage first at 95 % or more: {reach}. Accepted honest hypotheses (of "
                        f"{honest}, probes = 0): {accepted}. Lowest single run: {float(low['leakage']):.1f} % "
                        f"({low['protocol.policy']}, noise {low['protocol.noise']}, {_n(float(low['attack.probes']))} "
                        f"probes); median decode time {_num(done, 'attack_decode_s').median():.1f} s.",
                    "", f"The paper: {claim}."]


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
    Table("compas-table2-span", (_study("compas-table2-span"), _study(
              "compas-table2-span", "compas-table2-span-2000",
              extra=" --set 'grid.dataset.features=[\"expanded\"]' --set 'grid.protocol.rho=[0.1,0.03]' "
                    f"--set learner.hypotheses={SPAN_HYPOTHESES}")),
          COMPAS_ROOTS, _compas_span,
          ("scenarios/catalog/studies/compas-table2-span.toml", "scenarios/catalog/compas-cov-threshold.toml"),
          paper="compas-table2"),
    Table("compas-frr-lambda", (_study("compas-frr-lambda"),), COMPAS_ROOTS, _frr_lambda,
          ("scenarios/catalog/studies/compas-frr-lambda.toml", "scenarios/catalog/compas-cov-threshold.toml")),
    Table("compas-cov-rho", (_study("compas-cov-rho"), _study("compas-frr-lambda")), COMPAS_ROOTS, _compas_cov_rho,
          ("scenarios/catalog/studies/compas-cov-rho.toml", "scenarios/catalog/studies/compas-frr-lambda.toml",
           "scenarios/catalog/compas-cov-threshold.toml")),
    Table("cov-threshold-attack", (_study("cov-threshold-attack"),), ATTACK_ROOTS, _threshold_attack,
          ("scenarios/catalog/studies/cov-threshold-attack.toml", "scenarios/catalog/compas-cov-threshold.toml")),
)
