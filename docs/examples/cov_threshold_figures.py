"""The cov-threshold reproduction's figures, from the runs recorded for its generated tables.

    python docs/examples/cov_threshold_figures.py [FIGURES_DIR] [CEILING]

Reads ``docs/reproductions/{compas-cov-rho,compas-frr-lambda,compas-table2,cov-threshold-attack}.results.csv``
(what ``python -m parley.scenarios.reproduce write NAME --studies studies`` recorded, so the figures and the
tables of docs/reproductions.md come from the same runs) and writes ``cov-threshold-rho.png``,
``cov-threshold-frontier.png`` and ``cov-threshold-attack-leakage.png``. CEILING, if given, draws a horizontal
line at that leakage (%) on the attack figure, labelled as the linear classifier trained with s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "reproductions"


def _recorded(table: str, run: str) -> pd.DataFrame:
    """The finished rows of ``run`` as recorded for ``table``."""
    frame = pd.read_csv(RECORDED / f"{table}.results.csv", low_memory=False)
    return frame[(frame["status"] == "ok") & (frame["run"] == run)]


def rho_figure(out: Path) -> None:
    frame = _recorded("compas-cov-rho", "compas-cov-rho")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for name, group in frame.groupby("learner.name"):
        mean = group.groupby("protocol.rho")[["statistical_parity", "error"]].agg(["mean", "std"])
        for ax, metric in zip(axes, ("error", "statistical_parity"), strict=True):
            ax.errorbar(mean.index, mean[(metric, "mean")], yerr=mean[(metric, "std")], marker="o", capsize=3,
                        label=name.upper())
    for ax, title in zip(axes, ("classifier error", "statistical parity"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("ρ")
        ax.set_title(title)
        ax.legend()
    fig.suptitle("COMPAS (race), 500 random linear hypotheses: error and SP against ρ (cf. Fig. 2a)")
    fig.tight_layout()
    fig.savefig(out / "cov-threshold-rho.png", dpi=120)


def frontier_figure(out: Path) -> None:
    """Error against SP: DFRR and DFGR over rho, FRR over lam, ExponentiatedGradient (Table II run)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    rho = _recorded("compas-cov-rho", "compas-cov-rho")
    for name, group in rho.groupby("learner.name"):
        m = group.groupby("protocol.rho")[["error", "statistical_parity"]].mean()
        ax.plot(m["error"], m["statistical_parity"], marker="o", label=f"{name.upper()} (ρ sweep, m = 500)")
    frr = _recorded("compas-frr-lambda", "compas-frr-lambda")
    m = frr.groupby("learner.lam")[["error", "statistical_parity"]].mean()
    ax.plot(m["error"], m["statistical_parity"], marker="s", label="FRR with s (λ sweep)")
    table = _recorded("compas-table2", "compas-table2")
    eg = table[table["learner.name"] == "expgrad-dp"]
    ax.plot(eg["error"].mean(), eg["statistical_parity"].mean(), marker="*", markersize=12,
            linestyle="none", label="ExponentiatedGradient with s")
    ax.set_xlabel("classifier error (test)")
    ax.set_ylabel("statistical parity (test)")
    ax.set_title("COMPAS (race): fairness against error")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "cov-threshold-frontier.png", dpi=120)


def attack_figure(out: Path, ceiling: float | None) -> None:
    frame = _recorded("cov-threshold-attack", "cov-threshold-attack")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (policy, noise), group in frame.groupby(["protocol.policy", "protocol.noise"]):
        stats = group.groupby("attack_hypotheses_seen")["leakage"].agg(["mean", "std"])
        ax.errorbar(stats.index, stats["mean"], yerr=stats["std"], marker="o", capsize=3,
                    label=f"{policy} threshold" + (f", noise σ = {noise:g}" if noise else ""))
    ax.set_xscale("log")
    ticks = sorted(frame["attack_hypotheses_seen"].unique())
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.axhline(95, color="grey", linestyle="--", linewidth=1)
    ax.text(ticks[0], 96, "95 %", color="grey", fontsize=8)
    ax.axhline(50, color="grey", linestyle=":", linewidth=1)
    ax.axvline(200, color="black", linestyle=":", linewidth=1)
    ax.text(205, 52, "DFRR's own 200\nhypotheses", fontsize=8)
    if ceiling is not None:
        ax.axhline(ceiling, color="tab:red", linestyle=":", linewidth=1)
        ax.text(ticks[-1], ceiling + 1, "linear classifier trained with s", color="tab:red", fontsize=8, ha="right")
    ax.set_xlabel("hypotheses answered (200 honest + probes), n = 200")
    ax.set_ylabel("leakage (balanced accuracy, %)")
    ax.set_title("Threshold inversion on COMPAS (race), ρ = 0.1")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "cov-threshold-attack-leakage.png", dpi=120)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/figures")
    ceiling = float(sys.argv[2]) if len(sys.argv) > 2 else None
    rho_figure(out)
    frontier_figure(out)
    attack_figure(out, ceiling)


if __name__ == "__main__":
    main()
