"""Which noise pricing do the printed SP errors of Table 1 (query-leakage paper) fit?

Usage::

    python tests/benchmarks/conceal_table1_pricing.py [--out DIR]   # DIR/results.csv: one row per cell and pricing

Hamman, Chen & Dutta (FAccT 2023), Table 1, prints an "Avg. SP err" for Attribute-Conceal
(Alg. 3: SP + 6 S / eps * Cauchy, S the beta-smooth sensitivity of Thm. 7, beta = eps/(6m)) and for
the Laplace mechanism (SP + Delta / eps * Laplace, Delta = m (1/2 + 1/(n - 1)), Thm. 5), on Adult
audit sets of n = 100 and 1,000 with 10.4 % Black (Sec. 5.1), m models, eps in {5, 10, 100}. The
error of one run is the mean over the m answers of |released - exact| = mean of m |noise| draws.

Two candidate pricings, both from the paper's printed formulas (``paper_*`` in
``protocols/dp/sensitivity.py``), are simulated here:

- ``release``: the m answers are one release priced at eps, as the theorems state (sensitivity of
  the m-vector; beta = eps/(6m)). This is what parley implements.
- ``single``: each answer is priced on its own at eps (sensitivity of one answer, m = 1 in the
  formulas; beta = eps/6), i.e. m eps for the whole query.

For each cell the script draws N0 ~ Binomial(n, 0.104) (kept >= 2), the m noise draws, and their
mean |noise|, 20,000 times, and prints the median and the central 99.9 % interval of that mean
beside the paper's value, and the ratio paper / median. A pricing fits a cell when the paper's
value lies inside the interval. It also prints eps x (paper's Laplace error): under any pricing of
the form Delta / eps with Delta fixed by (n, m) this product is the same at every eps, up to the
sampling spread of a mean of m |Laplace| draws (relative s.d. 1/sqrt(m)).

The last line is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np

from parley.protocols.dp.sensitivity import paper_global_sensitivity, paper_smooth_sensitivity_sp

#: Table 1 as printed: (n, m, eps) -> (Attribute-Conceal err, Laplace err), both x 1e-3.
PAPER_TABLE1: dict[tuple[int, int, float], tuple[float, float]] = {
    (100, 25, 5.0): (10.9, 200.9), (100, 25, 10.0): (5.1, 112.6), (100, 25, 100.0): (0.05, 12.1),
    (100, 40, 5.0): (77.9, 660.2), (100, 40, 10.0): (12.3, 236.8), (100, 40, 100.0): (0.7, 27.6),
    (1000, 300, 5.0): (122.2, 874.5), (1000, 300, 10.0): (35.7, 160.8), (1000, 300, 100.0): (2.0, 11.5),
    (1000, 400, 5.0): (140.0, 893.4), (1000, 400, 10.0): (42.2, 216.3), (1000, 400, 100.0): (0.2, 54.4),
}
#: Share of Black individuals among White and Black in the paper's Adult (Sec. 5.1).
MINORITY_SHARE = 0.104
PRICINGS = ("release", "single")
MECHANISMS = ("conceal", "laplace")
#: Central mass of the interval a fitting pricing must put the paper's value in.
COVERAGE = 0.999


def noise_scale(mechanism: str, pricing: str, n: int, m: int, eps: float, n0: int) -> float:
    """Scale of the per-answer noise under a pricing, from the paper's printed formulas.

    Parameters
    ----------
    mechanism : {"conceal", "laplace"}
        Alg. 3 / Thm. 7 (Cauchy scale 6 S / eps) or Thm. 5 (Laplace scale Delta / eps).
    pricing : {"release", "single"}
        Sensitivity of the m-answer release with beta = eps/(6m), or of one answer with
        beta = eps/6.
    n, m : int
        Audit set size and number of models.
    eps : float
        Privacy parameter of the table's row.
    n0 : int
        Size of the minority group of the audit set (N0 <= N1 as Thm. 7 assumes).
    """
    k = m if pricing == "release" else 1
    if mechanism == "laplace":
        return paper_global_sensitivity("sp", k, n) / eps
    beta = eps / (6.0 * k)
    return 6.0 * paper_smooth_sensitivity_sp(k, n0, n - n0, beta) / eps


def simulate(mechanism: str, pricing: str, n: int, m: int, eps: float,
             rng: np.random.Generator, runs: int = 20_000) -> np.ndarray:
    """``runs`` draws of one run's error: the mean of m |noise| draws, N0 redrawn per run."""
    n0 = np.maximum(rng.binomial(n, MINORITY_SHARE, size=runs), 2)
    scales = np.array([noise_scale(mechanism, pricing, n, m, eps, int(v)) for v in n0])
    draws = rng.standard_cauchy((runs, m)) if mechanism == "conceal" else rng.laplace(size=(runs, m))
    return scales * np.abs(draws).mean(axis=1)


def pricing_table(seed: int = 0, runs: int = 20_000) -> list[dict[str, float | int | str | bool]]:
    """One row per (cell, mechanism, pricing): paper's error, median and interval of ours (x 1e-3)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, float | int | str | bool]] = []
    tail = (1.0 - COVERAGE) / 2.0
    for (n, m, eps), printed in PAPER_TABLE1.items():
        for mechanism, paper in zip(MECHANISMS, printed, strict=True):
            for pricing in PRICINGS:
                errors = 1e3 * simulate(mechanism, pricing, n, m, eps, rng, runs)
                low, median, high = np.quantile(errors, [tail, 0.5, 1.0 - tail])
                rows.append({"n": n, "m": m, "eps": eps, "mechanism": mechanism, "pricing": pricing,
                             "paper": paper, "median": float(median), "low": float(low),
                             "high": float(high), "ratio": paper / float(median),
                             "fits": bool(low <= paper <= high)})
    return rows


def laplace_consistency() -> list[dict[str, float | int]]:
    """eps x the paper's Laplace error per (n, m): constant in eps under any Delta / eps pricing."""
    out = []
    for (n, m, eps), (_, lap) in PAPER_TABLE1.items():
        out.append({"n": n, "m": m, "eps": eps, "eps_x_err": eps * lap * 1e-3,
                    "rel_sd": 1.0 / math.sqrt(m)})
    return out


def write_results(rows: list[dict[str, float | int | str | bool]], out: Path) -> None:
    """``out/results.csv``: one row per (cell, mechanism, pricing), as :func:`pricing_table` returns them."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    """Print the pricing table, the fit counts and the Laplace consistency check; write ``--out``'s results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="also write DIR/results.csv (one row per cell and pricing)")
    args = parser.parse_args()
    rows = pricing_table()
    if args.out is not None:
        write_results(rows, args.out)
    print("| n | m | eps | mechanism | paper | release: median [99.9 % interval] | paper/median "
          "| single: median [99.9 % interval] | paper/median |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i in range(0, len(rows), 2):
        rel, sgl = rows[i], rows[i + 1]
        cells = [f"{r['median']:.4g} [{r['low']:.4g}, {r['high']:.4g}]{'' if r['fits'] else ' *'}"
                 for r in (rel, sgl)]
        print(f"| {rel['n']} | {rel['m']} | {rel['eps']:g} | {rel['mechanism']} | {rel['paper']:g} | "
              f"{cells[0]} | {rel['ratio']:.3g} | {cells[1]} | {sgl['ratio']:.3g} |")
    print("(* = the paper's value lies outside the interval)")
    for mechanism in MECHANISMS:
        for pricing in PRICINGS:
            sel = [r for r in rows if r["mechanism"] == mechanism and r["pricing"] == pricing]
            ratios = [float(r["ratio"]) for r in sel]
            print(f"{mechanism:8s} {pricing:8s}: fits {sum(bool(r['fits']) for r in sel)} of {len(sel)} cells, "
                  f"paper / median from {min(ratios):.3g} to {max(ratios):.3g}")
    print("eps x paper's Laplace error (constant in eps under any Delta/eps pricing):")
    consistency = laplace_consistency()
    for row in consistency:
        print(f"  n = {row['n']}, m = {row['m']}, eps = {row['eps']:g}: {row['eps_x_err']:.3f} "
              f"(sampling rel. s.d. {row['rel_sd']:.2f})")
    print(json.dumps({"rows": rows, "laplace_consistency": consistency}))


if __name__ == "__main__":
    main()
