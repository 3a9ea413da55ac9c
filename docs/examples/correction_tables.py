"""Print the tables of docs/reproductions.md "Reconstruction correction" from a study run.

    parley study correction-tolerance --out studies/correction-tolerance --workers 2
    python docs/examples/correction_tables.py studies/correction-tolerance
    parley study correction-threshold --out studies/correction-threshold --workers 2
    python docs/examples/correction_tables.py studies/correction-threshold

correction-tolerance: per data set, baseline / corrected accuracy (%) and the gain in points, by
tolerance (rows) and fairness metric (columns); then how many cells the correction made worse,
left unchanged (the attack declined: no exponent beat the baseline on validation) or improved.
correction-threshold (its rows have ``attack.fairness``): one row per data set and metric, the
baselines A1 (X, y) / A2 (X, y, yhat) and the corrected accuracy from the certificate and from
the estimate of Sec. V-B.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

METRICS = ("sp", "pe", "eo", "eodds")


def tables(frame: pd.DataFrame) -> str:
    """The Markdown tables of one study run (rows with status ok)."""
    frame = frame[frame["status"] == "ok"]
    lines: list[str] = []
    for name, rows in frame.groupby("dataset.name", sort=False):
        lines += [f"**{name}**: baseline / corrected accuracy (%), gain in points", "",
                  "| tolerance | " + " | ".join(m.upper() for m in METRICS) + " |",
                  "|---" * (len(METRICS) + 1) + "|"]
        for tolerance, by_tol in rows.groupby("learner.tolerance"):
            cells = []
            for metric in METRICS:
                row = by_tol[by_tol["learner.metric"] == metric].iloc[0]
                base, corrected = 100 * row["baseline_accuracy"], 100 * row["corrected_accuracy"]
                cells.append(f"{base:.1f} / {corrected:.1f} ({corrected - base:+.2f})")
            lines.append(f"| {tolerance:g} | " + " | ".join(cells) + " |")
        gain = 100 * (rows["corrected_accuracy"] - rows["baseline_accuracy"])
        lines += ["", f"{name}: worse in {int((gain < 0).sum())}, unchanged in {int((gain == 0).sum())}, "
                      f"better in {int((gain > 0).sum())} of {len(rows)} cells; mean gain {gain.mean():+.2f} "
                      f"points, lowest {gain.min():+.2f}", ""]
    return "\n".join(lines)


def threshold_table(frame: pd.DataFrame) -> str:
    """The ThresholdOptimizer table: certificate against estimate, baselines A1 / A2 (rows with status ok)."""
    frame = frame[frame["status"] == "ok"]
    lines = ["| data set | metric | baseline A1 / A2 | certificate: corrected A1 / A2 | estimated: metric, tolerance "
             "| estimated: corrected A1 / A2 |", "|---|---|---|---|---|---|"]

    def pair(rows: pd.DataFrame, column: str) -> str:
        by = rows.set_index("attack.baseline")[column]
        return f"{100 * by['xy']:.1f} / {100 * by['xy-yhat']:.1f}"

    for (name, metric), rows in frame.groupby(["dataset.name", "learner.metric"], sort=False):
        certified = rows[rows["attack.fairness"] == "certificate"]
        estimated = rows[rows["attack.fairness"] == "estimated"]
        guess = estimated.iloc[0]
        lines.append(f"| {name} | {metric.upper()} (certified {certified['certificate_value'].iloc[0]:.4f}) "
                     f"| {pair(certified, 'baseline_accuracy')} | {pair(certified, 'corrected_accuracy')} "
                     f"| {guess['constraint_metric'].upper()}, {guess['constraint_tolerance']:.4f} "
                     f"| {pair(estimated, 'corrected_accuracy')} |")
    gain = 100 * (frame["corrected_accuracy"] - frame["baseline_accuracy"])
    lines += ["", f"at least as accurate as the baseline in {int((gain >= 0).sum())} of {len(frame)} cells; "
                  + ", ".join(f"{name} {int((g >= 0).sum())} of {len(g)}"
                              for name, g in gain.groupby(frame["dataset.name"], sort=False))]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/examples/correction_tables.py STUDY_FOLDER")
    results = pd.read_csv(Path(sys.argv[1]) / "results.csv")
    print(threshold_table(results) if "attack.fairness" in results else tables(results))
