"""The private-fair-learning paper's tables (Figure 1, the debiased estimates of Sec. 4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from parley.scenarios.reproductions.table import _CATALOG, Table, _g, _n, _num, _ok, _signed, _study

#: What the numbers depend on: the rr-release exchange, the mechanism, the estimators of Sec. 4, the Bayes adversary
#: (found by name in the registry), the data center's base model and the data sets.
RR_ROOTS = ("parley.scenarios.exchanges.rr_release", "parley.protocols.mechanisms.randomized_response",
            "parley.protocols.estimators.rr_estimators", "parley.parties.attacks.randomized_response.rr_inference",
            "parley.parties.data_center", "parley.parties.learners.base_model", "parley.scenarios.datasets")

#: A p-value below this counts as significant in the summaries.
ALPHA = 0.05


def _keep(eps: float) -> float:
    """π of binary randomized response at ``eps``."""
    return math.exp(eps) / (1 + math.exp(eps))


def _mean_ci(values: pd.Series) -> str:
    """Mean ± the half-width of the 95 % t-interval of the mean."""
    if len(values) < 2:
        return f"{values.mean():.3f}"
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return f"{values.mean():.3f} ± {half:.3f}"


def _paired_p(first: pd.Series, second: pd.Series) -> float:
    """Two-sided p-value of the paired t-test of ``second - first`` (nan with fewer than two pairs or no spread)."""
    diff = (second - first).to_numpy(dtype=float)
    if len(diff) < 2 or not np.any(diff != diff[0]):
        return float("nan")
    return float(stats.ttest_rel(second, first).pvalue)


def _p(value: float) -> str:
    if math.isnan(value):
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.2f}" if value >= 0.01 else f"{value:.3f}"


def _by_epsilon(results: pd.DataFrame) -> list[tuple[float, pd.DataFrame]]:
    """The finished rows of each ε, in increasing ε."""
    done = _ok(results)
    eps = pd.to_numeric(done["protocol.epsilon"], errors="coerce")
    return [(float(e), done[eps == e]) for e in sorted(eps.dropna().unique())]


def _figure1_row(eps: float, rows: pd.DataFrame) -> str:
    step1, two = _num(rows, "step1_disc"), _num(rows, "two_step_disc")
    below = int((rows["two_step_disc"].astype(float) <= rows["step1_disc"].astype(float)).sum())
    acc1, acc2 = _num(rows, "step1_accuracy"), _num(rows, "two_step_accuracy")
    return (f"| {_g(eps)} | {len(rows)} | {_mean_ci(step1)} | {_mean_ci(two)} | {_mean_ci(acc1)} | {_mean_ci(acc2)} "
            f"| {below} of {len(rows)} |")


def _constant(rows: pd.DataFrame) -> pd.Series:
    """Whether each run's LP (13) solution is constant (p spread 0: Y~ ignores Y-hat and Z)."""
    return pd.to_numeric(rows["two_step_p_spread"], errors="coerce").abs() <= 1e-9


def _solution_row(eps: float, rows: pd.DataFrame) -> str:
    step1, two = (rows[c].astype(float) for c in ("step1_disc", "two_step_disc"))
    constant = _constant(rows)
    others = pd.to_numeric(rows.loc[~constant, "two_step_positive_rate"], errors="coerce")
    low, high = (f"{v:.2f}" for v in (others.min(), others.max()))
    rate = "–" if others.empty else low if low == high else f"{low}–{high}"
    return (f"| {_g(eps)} | {_signed((two - step1).mean(), 4)} | {_p(_paired_p(step1, two))} "
            f"| {int(constant.sum())} of {len(rows)} | {rate} | {step1.mean():.3f} "
            f"| {_num(rows, 'step1_disc_estimate').mean():.3f} | {_num(rows, 'step1_disc_naive').mean():.3f} |")


def _eps_list(values: list[float]) -> str:
    return ", ".join(_g(e) for e in values) if values else "none"


def _claim_disc(groups: list[tuple[float, pd.DataFrame]]) -> str:
    lower, significant, constant = [], [], []
    for eps, rows in groups:
        step1, two = (rows[c].astype(float) for c in ("step1_disc", "two_step_disc"))
        if two.mean() < step1.mean():
            lower.append(eps)
            if _paired_p(step1, two) < ALPHA:
                significant.append(eps)
        if _constant(rows).mean() > 0.5:
            constant.append(eps)
    return (f"the two-step mean disc is below step 1's at ε = {_eps_list(lower)}, by a paired t-test at the 5 % level "
            f"at ε = {_eps_list(significant)}; the LP (13) returns a constant predictor in most runs at "
            f"ε = {_eps_list(constant)}")


def _claim_cost(groups: list[tuple[float, pd.DataFrame]]) -> str:
    gaps = [100 * (_num(r, "step1_accuracy").mean() - _num(r, "two_step_accuracy").mean()) for _, r in groups]
    accs = [_num(r, "two_step_accuracy").mean() for _, r in groups]
    falls = [a - b for a, b in zip(accs, accs[1:], strict=False) if b < a]
    trend = f"falling by at most {max(falls):.4f} between neighbouring ε" if falls else "never falling as ε grows"
    return (f"two-step accuracy is below step 1's by {', '.join(f'{g:.1f}' for g in gaps)} points at "
            f"ε = {_eps_list([e for e, _ in groups])}; it goes from {accs[0]:.3f} to {accs[-1]:.3f}, {trend}")


def _claim_step1(groups: list[tuple[float, pd.DataFrame]]) -> str:
    (lo, first), (hi, last) = groups[0], groups[-1]
    return (f"step 1's accuracy is {_num(first, 'step1_accuracy').mean():.3f} at ε = {_g(lo)} and "
            f"{_num(last, 'step1_accuracy').mean():.3f} at ε = {_g(hi)}, its disc "
            f"{_num(first, 'step1_disc').mean():.3f} and {_num(last, 'step1_disc').mean():.3f}")


CLAIM_CHECKS = {"disc": _claim_disc, "accuracy-cost": _claim_cost, "step1-accuracy": _claim_step1}


def _claims(paper: pd.DataFrame, groups: list[tuple[float, pd.DataFrame]]) -> list[str]:
    """The paper's claims, each followed by what the recorded runs give where a check is named."""
    lines = []
    for _, row in paper.iterrows():
        check = str(row.get("check", ""))
        ours = f" Here: {CLAIM_CHECKS[check](groups)}." if check in CLAIM_CHECKS and groups else ""
        lines.append(f"- {row['claim']} ({row['source']}).{ours}")
    return lines


def _figure1(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    groups = _by_epsilon(results)
    lines = ["| ε | repeats | disc step 1 | disc two-step | acc. step 1 | acc. two-step "
             "| runs with two-step ≤ step 1 |", "|---|---|---|---|---|---|---|",
             *(_figure1_row(e, r) for e, r in groups)]
    lines += ["", "The LP (13)'s solution, the paired test, and step 1's disc as the data center estimates it from the "
                  "test set's release (means over the same runs):", "",
              "| ε | two-step − step 1 disc (paired mean) | paired t-test p | runs with p spread 0 (constant) "
              "| positive rate of the others | step 1 disc (true) | debiased estimate | naive estimate |",
              "|---|---|---|---|---|---|---|---|", *(_solution_row(e, r) for e, r in groups)]
    leak = ", ".join(f"{_num(r, 'leakage').mean():.4g} ({100 * _keep(e):.4g})" for e, r in groups)
    ledger = ", ".join(f"{_num(r, 'leakage_bound').mean():.4g}" for _, r in groups)
    walls = _num(_ok(results), "wall_s")
    lines += ["", f"Leakage (%) of the Bayes adversary on the training set's release at ε = "
                  f"{_eps_list([e for e, _ in groups])}, the per-person ε-LDP bound in brackets: {leak}. The bound "
                  f"the ledger's ε spent gives (both sets' releases composed): {ledger}. Median wall time of a run: "
                  f"{walls.median():.0f} s ({len(walls)} runs).", "", "The paper (no numbers in Figure 1):", ""]
    return lines + _claims(paper, groups)


ESTIMATE_GAPS = (("DP", "demographic_parity"), ("TPR", "equalized_odds"))


@dataclass(frozen=True)
class Cell:
    """One row of the estimates table: ε, audit size n, the gap (label and metric key) and its finished runs."""

    eps: float
    n: int
    label: str
    key: str
    rows: pd.DataFrame

    def errors(self, how: str) -> pd.Series:
        """Estimated minus true gap of each run, ``how`` = ``debiased`` or ``naive``."""
        return _num(self.rows, f"audit_{self.key}_error_{how}")

    def true(self) -> pd.Series:
        return _num(self.rows, f"audit_{self.key}_signed_true")

    def where(self) -> str:
        return f"{self.label} at ε = {_g(self.eps)}, n = {_n(self.n)}"


def _estimate_cells(results: pd.DataFrame) -> list[Cell]:
    """The table's cells in its order: ε, then n, then the gap."""
    done = _ok(results)
    cells = []
    for eps in sorted(pd.to_numeric(done["protocol.epsilon"]).unique()):
        for n in sorted(pd.to_numeric(done["dataset.audit_size"]).unique()):
            rows = _ok(done, protocol__epsilon=float(eps), dataset__audit_size=int(n))
            cells += [Cell(float(eps), int(n), label, key, rows) for label, key in ESTIMATE_GAPS]
    return cells


def _rmse(errors: pd.Series) -> float:
    return float(np.sqrt((errors ** 2).mean()))


def _mean_se(errors: pd.Series) -> str:
    return f"{_signed(errors.mean(), 3)} ± {errors.std(ddof=1) / math.sqrt(len(errors)):.3f}"


def _x(value: float) -> str:
    """An error or RMSE: three decimals, whole numbers from 100 (the heavy tails)."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def _estimate_row(cell: Cell) -> str:
    debiased, naive = cell.errors("debiased"), cell.errors("naive")
    shrink = -(1 - (2 * _keep(cell.eps) - 1)) * cell.true().mean()
    return (f"| {_g(cell.eps)} | {_n(cell.n)} | {cell.label} | {cell.true().mean():.3f} | {_mean_se(debiased)} "
            f"| {_x(_rmse(debiased))} | {_mean_se(naive)} | {_rmse(naive):.3f} | {_signed(shrink, 3)} |")


def _naive_dp(cells: list[Cell]) -> str:
    parts = [f"{(c.true() + c.errors('naive')).mean():.3f} at ε = {_g(c.eps)}, n = {_n(c.n)}"
             for c in cells if c.label == "DP"]
    return "The naive estimate of the DP gap (true gap plus its error, mean): " + "; ".join(parts) + "."


def _centred(cells: list[Cell]) -> str:
    off = []
    for cell in cells:
        err = cell.errors("debiased")
        # one run has no standard error: the cell cannot be said to be centred
        if len(err) < 2 or abs(err.mean()) > 2 * err.std(ddof=1) / math.sqrt(len(err)):
            off.append(f"{cell.where()} ({_mean_se(err)})")
    return (f"Debiased mean error within two standard errors of 0 in {len(cells) - len(off)} of {len(cells)} cells"
            + (f"; not in: {', '.join(off)}." if off else "."))


def _rates(cells: list[Cell]) -> str:
    rmse = {(c.eps, c.n, c.label): _rmse(c.errors("debiased")) for c in cells}
    sizes = sorted({c.n for c in cells})
    if len(sizes) < 2:
        return ""
    small, large = sizes[0], sizes[-1]
    parts = []
    for c in cells:
        if c.n == small:
            before, after = rmse[(c.eps, small, c.label)], rmse[(c.eps, large, c.label)]
            parts.append(f"{c.label} at ε = {_g(c.eps)}: {_x(before)} → {_x(after)} (÷{before / after:.1f})")
    return (f"Debiased RMSE from n = {_n(small)} to {_n(large)} (n^(−1/2) predicts ÷{math.sqrt(large / small):.1f}): "
            + "; ".join(parts) + ".")


def _tails(cells: list[Cell]) -> str:
    parts = []
    for cell in cells:
        err = cell.errors("debiased")
        if _rmse(err) > _rmse(cell.errors("naive")):
            parts.append(f"{cell.where()} (debiased: median |error| {err.abs().median():.3f}, largest "
                         f"{_x(err.abs().max())})")
    return "Cells where the naive estimator has the smaller RMSE: " + ("; ".join(parts) if parts else "none") + "."


def _leakage(results: pd.DataFrame) -> str:
    parts = []
    for eps, rows in _by_epsilon(results):
        leak = _num(rows, "leakage")
        parts.append(f"{leak.mean():.2f} ± {leak.std(ddof=1):.2f} against {_num(rows, 'leakage_bound').mean():.2f} "
                     f"at ε = {_g(eps)} ({len(leak)} runs)")
    return "Leakage (%) of the Bayes adversary (mean ± s.d.) against its ε-LDP bound: " + "; ".join(parts) + "."


def _estimates(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    cells = _estimate_cells(results)
    lines = ["| ε | n | gap | true gap | debiased: mean error ± s.e. | debiased RMSE | naive: mean error ± s.e. "
             "| naive RMSE | predicted naive shrinkage |", "|---|---|---|---|---|---|---|---|---|",
             *(_estimate_row(cell) for cell in cells)]
    summary = [_naive_dp(cells), _centred(cells), _rates(cells), _tails(cells), _leakage(results)]
    claims = [f"- {row['claim']} ({row['source']})." for _, row in paper.iterrows()]
    heading = "The paper (statements and a bound, no measured numbers):"
    return lines + [""] + [f"- {line}" for line in summary if line] + ["", heading, ""] + claims


TABLES = (
    Table("rr-figure1", (_study("rr-figure1"),), RR_ROOTS + ("parley.parties.learners.two_step",), _figure1,
          (f"{_CATALOG}studies/rr-figure1.toml", f"{_CATALOG}adult-rr-fair-learning.toml")),
    Table("rr-estimates", (_study("rr-estimates", workers=1),), RR_ROOTS, _estimates,
          (f"{_CATALOG}studies/rr-estimates.toml", f"{_CATALOG}adult-rr-audit.toml")),
)
