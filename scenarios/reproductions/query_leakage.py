"""The query-leakage paper's tables (FAccT Table 1-4, Remark 3, Fig. 2(a), Fig. 3; the workshop text's Fig. 3, 4)."""

from __future__ import annotations

import math
from typing import cast

import pandas as pd

from parley.scenarios.reproductions.table import (
    _CATALOG,
    Table,
    _claims,
    _exponents,
    _g,
    _n,
    _num,
    _ok,
    _study,
    _truthy,
)

REVEAL_ROOTS = ("parley.parties.attacks.query_leakage", "parley.parties.attacks.decoders",
                "parley.protocols.mechanisms.raw", "parley.scenarios.datasets", "parley.parties.learners.base_model")


CONCEAL_ROOTS = REVEAL_ROOTS + ("parley.protocols.mechanisms.smooth_sensitivity", "parley.protocols.mechanisms.laplace",
                                "parley.protocols.dp")


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
    claim = _claims(paper)
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


#: The pricing table's rows: (mechanism, pricing) in the script's results, and how the page names them.
PRICINGS = ((("conceal", "release"), "Attribute-Conceal", "m-answer release at ε (Thm. 7, β = ε/(6m))"),
            (("conceal", "single"), "Attribute-Conceal", "one answer at ε (m = 1, β = ε/6)"),
            (("laplace", "release"), "Laplace", "m-answer release at ε (Thm. 5)"),
            (("laplace", "single"), "Laplace", "one answer at ε"))

#: The script behind the pricing table, as the digest names a file of the checkout (``parley.<path>``); it prices
#: the two mechanisms conceal-table1 runs, so their modules count too (it reads no catalog file).
PRICING_SCRIPT = "tests/benchmarks/conceal_table1_pricing.py"
PRICING_ROOTS = ("parley." + PRICING_SCRIPT.removesuffix(".py").replace("/", "."),
                 "parley.protocols.mechanisms.smooth_sensitivity", "parley.protocols.mechanisms.laplace")


def _fitting(cells: pd.DataFrame) -> str:
    """The cells whose printed value lies in the simulated interval, and how wide those intervals are."""
    fit = cells[(cells["low"] <= cells["printed"]) & (cells["printed"] <= cells["high"])]
    if fit.empty:
        return "0"
    where = "; ".join(f"n = {_n(n)}, m = {int(m)} at ε = " + ", ".join(_g(e) for e in rows["eps"])
                      for (n, m), rows in fit.groupby(["n", "m"]))
    widths = fit["high"] / fit["low"]
    return f"{len(fit)} ({where}; inside intervals whose ends differ {widths.min():.0f} to {widths.max():.0f}-fold)"


def _conceal_pricing(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = [f"| mechanism | pricing | cells that fit (of {len(paper)}) | paper / our median |", "|---|---|---|---|"]
    printed = paper.melt(id_vars=["n", "m", "epsilon"], value_vars=["conceal", "laplace"], var_name="mechanism",
                         value_name="printed").rename(columns={"epsilon": "eps"})
    merged = results.merge(printed, on=["n", "m", "eps", "mechanism"], validate="many_to_one")
    for (mechanism, pricing), label, how in PRICINGS:
        cells = merged[(merged["mechanism"] == mechanism) & (merged["pricing"] == pricing)]
        ratio = cells["printed"] / cells["median"]
        lines.append(f"| {label} | {how} | {_fitting(cells)} | {ratio.min():.2g}–{ratio.max():.2g} |")
    return lines + ["", "A pricing fits a cell when the printed error lies in the central 99.9 % interval of one "
                        "run's simulated error (the mean of m |noise| draws, N0 ~ Binomial(n, 0.104), 20,000 runs "
                        "per cell, seed 0)."]


TABLES = (
    Table("sensitivities", (), (), _sensitivity_table, paper_text=True, compute=_sensitivities),
    Table("reveal-table1", (_study("reveal-table1"),), REVEAL_ROOTS, _reveal_table1,
          ("scenarios/catalog/studies/reveal-table1.toml", "scenarios/catalog/adult-reveal-cs-iid.toml"), True),
    Table("conceal-table1", (_study("conceal-table1"),), CONCEAL_ROOTS, _conceal_table1,
          ("scenarios/catalog/studies/conceal-table1.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table1-pricing", (("conceal-table1-pricing", f"python {PRICING_SCRIPT} --out "
                                                                "studies/conceal-table1-pricing"),),
          PRICING_ROOTS, _conceal_pricing),
    Table("conceal-table2", (_study("conceal-table2"),), CONCEAL_ROOTS, _conceal_table2,
          ("scenarios/catalog/studies/conceal-table2.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table3", (_study("conceal-table3"),), CONCEAL_ROOTS, _conceal_table3,
          ("scenarios/catalog/studies/conceal-table3.toml", "scenarios/catalog/adult-conceal.toml"), True),
    Table("conceal-table4", (_study("conceal-table4"),), CONCEAL_ROOTS, _conceal_table4,
          ("scenarios/catalog/studies/conceal-table4.toml", "scenarios/catalog/adult-conceal.toml"), True),
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
)
