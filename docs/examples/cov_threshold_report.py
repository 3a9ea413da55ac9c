"""Tables and figures of the cov-threshold reproduction, from the three studies' results.csv.

    python docs/examples/cov_threshold_report.py STUDIES_DIR [FIGURES_DIR]

STUDIES_DIR holds compas-table2/, compas-frr-lambda/, cov-threshold-attack/ and compas-cov-rho/ (as written by
``parley study NAME --out STUDIES_DIR/NAME``). Prints the markdown of the reproduction section
(ours beside the paper's Table II) and writes the PNG figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

# Table II of the paper (COMPAS): SP, ND, error, error parity, error disparate.
PAPER = {
    "frr": ("FRR", (.0515, .2361, .2276, .0317, .1081)),
    "dfrr": ("DFRR", (.0078, .1758, .2302, .0139, .0543)),
    "dfkrr": ("DFKRR", (.0034, .1147, .2152, .0017, .0078)),
    "dfgr": ("DFGR", (.0374, .1852, .2617, .0104, .0385)),
    "dfpca": ("DFPCA", (.0081, .2019, .2279, .0167, .0690)),
    "expgrad-dp": ("—", None),
}
METRICS = ("statistical_parity", "normed_disparate", "error", "error_parity", "error_disparate")
ORDER = list(PAPER)


def _ok(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path / "results.csv")
    return frame[frame["status"] == "ok"]


def table2(root: Path) -> str:
    frame = _ok(root / "compas-table2")
    lines = ["| learner | ρ | k of 200 | SP | ND | error | error parity | error disparate | leakage (%) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in ORDER:
        label, paper = PAPER[name]
        rhos = sorted(frame["protocol.rho"].unique(), reverse=True)
        if name in ("frr", "expgrad-dp"):
            rhos = rhos[:1]  # fitted with s: the accept set does not enter
        for rho in rhos:
            cell = frame[(frame["learner.name"] == name) & (frame["protocol.rho"] == rho)]
            cells = [f"{cell[m].mean():.4f} ± {cell[m].std():.4f}" if m in ("statistical_parity", "error")
                     else f"{cell[m].mean():.4f}" for m in METRICS]
            rho_text = "—" if name in ("frr", "expgrad-dp") else f"{rho:g}"
            k = "—" if rho_text == "—" else f"{cell['accepted'].mean():.0f}"
            lines.append(f"| {name} (n={len(cell)}) | {rho_text} | {k} | " + " | ".join(cells)
                         + f" | {cell['leakage'].mean():.1f} |")
        if paper is not None:
            lines.append(f"| *paper {label}* | *0.1* | | " + " | ".join(f"*{v:.4f}*" for v in paper) + " | |")
    return "\n".join(lines)


def rho_table(root: Path) -> str:
    frame = _ok(root / "compas-cov-rho")
    lines = ["| ρ | k of 500 | DFGR SP | DFGR error | DFRR SP | DFRR error |", "|---|---|---|---|---|---|"]
    for rho, group in frame.groupby("protocol.rho"):
        g = {n: x for n, x in group.groupby("learner.name")}
        lines.append(f"| {rho:g} | {group['accepted'].mean():.0f} | "
                     f"{g['dfgr']['statistical_parity'].mean():.3f} | {g['dfgr']['error'].mean():.3f} | "
                     f"{g['dfrr']['statistical_parity'].mean():.3f} | {g['dfrr']['error'].mean():.3f} |")
    return "\n".join(lines)


def rho_figure(root: Path, out: Path) -> None:
    frame = _ok(root / "compas-cov-rho")
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


def frontier_figure(root: Path, out: Path) -> None:
    """Error against SP: DFRR and DFGR over rho, FRR over lam, ExponentiatedGradient (Table II run)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    rho = _ok(root / "compas-cov-rho")
    for name, group in rho.groupby("learner.name"):
        m = group.groupby("protocol.rho")[["error", "statistical_parity"]].mean()
        ax.plot(m["error"], m["statistical_parity"], marker="o", label=f"{name.upper()} (ρ sweep, m = 500)")
    frr = _ok(root / "compas-frr-lambda")
    m = frr.groupby("learner.lam")[["error", "statistical_parity"]].mean()
    ax.plot(m["error"], m["statistical_parity"], marker="s", label="FRR with s (λ sweep)")
    table = _ok(root / "compas-table2")
    eg = table[table["learner.name"] == "expgrad-dp"]
    ax.plot(eg["error"].mean(), eg["statistical_parity"].mean(), marker="*", markersize=12,
            linestyle="none", label="ExponentiatedGradient with s")
    ax.set_xlabel("classifier error (test)")
    ax.set_ylabel("statistical parity (test)")
    ax.set_title("COMPAS (race): fairness against error")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "cov-threshold-frontier.png", dpi=120)


def frr_table(root: Path) -> str:
    frame = _ok(root / "compas-frr-lambda")
    lines = ["| FRR λ | SP | error |", "|---|---|---|"]
    for lam, g in frame.groupby("learner.lam"):
        lines.append(f"| {lam:g} | {g['statistical_parity'].mean():.3f} | {g['error'].mean():.3f} |")
    return "\n".join(lines)


def attack_table(root: Path) -> str:
    frame = _ok(root / "cov-threshold-attack")
    frame = frame.assign(defense=frame["protocol.policy"] + ", noise " + frame["protocol.noise"].astype(str))
    pivot = frame.pivot_table(index="attack.probes", columns="defense", values="leakage", aggfunc="mean")
    lines = ["| probes (+200 honest) | " + " | ".join(pivot.columns) + " |", "|---" * (len(pivot.columns) + 1) + "|"]
    for probes, row in pivot.iterrows():
        lines.append(f"| {probes} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    return "\n".join(lines)


def attack_figure(root: Path, out: Path, ceiling: float | None) -> None:
    frame = _ok(root / "cov-threshold-attack")
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
    root = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/figures")
    ceiling = float(sys.argv[3]) if len(sys.argv) > 3 else None
    for name, make in (("compas-table2", lambda: print(table2(root))),
                       ("compas-frr-lambda", lambda: print(frr_table(root))),
                       ("compas-cov-rho", lambda: (print(rho_table(root)), rho_figure(root, out),
                                                   frontier_figure(root, out))),
                       ("cov-threshold-attack", lambda: (print(attack_table(root)),
                                                         attack_figure(root, out, ceiling)))):
        if (root / name / "results.csv").is_file():
            print(f"\n### {name}\n")
            make()


if __name__ == "__main__":
    main()
