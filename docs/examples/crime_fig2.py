"""Draw docs/figures/crime-fig2.png from a run of the crime-fig2 study (Hu et al.'s Fig. 2 on Communities and Crime).

    parley study crime-fig2 --out studies/crime-fig2 --workers 2 --no-runs --set backend=local
    python docs/examples/crime_fig2.py studies/crime-fig2 docs/figures/crime-fig2.png

(a) DFGR's test error and statistical parity against rho (mean and standard deviation over the
repeats, one marker per rho); (b) cov(f(x), s) of the learned model on the training set in each
trial at rho = 0.1, as the paper's panel (b).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

RHO_B = 0.1  # the paper's rho, the trials of panel (b)


def main(study_dir: str, out: str) -> None:
    frame = pd.read_csv(Path(study_dir) / "results.csv")
    frame = frame[frame["status"] == "ok"]
    stats = frame.groupby("protocol.rho")[["error", "statistical_parity"]].agg(["mean", "std"])
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for column, label, colour in (("error", "classifier error", "C0"), ("statistical_parity", "SP", "C1")):
        ax_a.errorbar(stats.index, stats[(column, "mean")], yerr=stats[(column, "std")], fmt="-o", color=colour,
                      capsize=3, label=label)
    ax_a.set_xscale("log")
    ax_a.set_xlabel("rho")
    ax_a.set_title(f"(a) DFGR against rho ({frame['repeat'].nunique()} trials each)")
    ax_a.grid(alpha=0.3)
    ax_a.legend()
    trials = frame[frame["protocol.rho"] == RHO_B].sort_values("repeat")
    colours = ["C2" if value > 0 else "C3" for value in trials["model_cov"]]
    ax_b.bar(range(1, len(trials) + 1), trials["model_cov"], color=colours)
    ax_b.axhline(0.0, color="black", linewidth=0.8)
    ax_b.set_xticks(range(1, len(trials) + 1, 2 if len(trials) > 10 else 1))
    ax_b.set_xlabel("trial")
    ax_b.set_ylabel("cov(f(x), s), training set")
    positive = int((trials["model_cov"] > 0).sum())
    ax_b.set_title(f"(b) rho = {RHO_B}: positive in {positive} of {len(trials)} trials")
    ax_b.grid(alpha=0.3, axis="y")
    fig.suptitle("Communities and Crime (crime-fig2)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:3])
