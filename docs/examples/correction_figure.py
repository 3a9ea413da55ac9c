"""Draw docs/figures/correction-tolerance.png from a run of the correction-tolerance study.

    parley study correction-tolerance --out studies/correction-tolerance --workers 1 --no-runs --set backend=local
    python docs/examples/correction_figure.py studies/correction-tolerance docs/figures/correction-tolerance.png

One panel per fairness metric; per data set, the baseline adversary's accuracy
(dashed) and the corrected accuracy (solid) against the target's tolerance.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

METRICS = ("sp", "pe", "eo", "eodds")


def main(study_dir: str, out: str) -> None:
    frame = pd.read_csv(Path(study_dir) / "results.csv")
    frame = frame[frame["status"] == "ok"]
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4.2 * len(METRICS), 3.8), sharey=False)
    for ax, metric in zip(axes, METRICS, strict=True):
        part = frame[frame["learner.metric"] == metric]
        for i, (name, rows) in enumerate(sorted(part.groupby("dataset.name"))):
            stats = rows.groupby("learner.tolerance")[["baseline_accuracy", "corrected_accuracy"]].mean()
            colour = f"C{i}"
            ax.plot(stats.index, 100 * stats["corrected_accuracy"], "-o", color=colour, label=f"{name} corrected")
            ax.plot(stats.index, 100 * stats["baseline_accuracy"], "--", color=colour, alpha=0.7,
                    label=f"{name} baseline")
        ax.set_title(metric.upper())
        ax.set_xlabel("tolerance (difference_bound)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("reconstruction accuracy of A (%)")
    axes[-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
