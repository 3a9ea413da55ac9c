"""Print the tables of docs/reproductions.md "Reconstruction correction" from a correction-tolerance run.

    parley study correction-tolerance --out studies/correction-tolerance --workers 2
    python docs/examples/correction_tables.py studies/correction-tolerance

Per data set: baseline / corrected accuracy (%) and the gain in points, by tolerance (rows)
and fairness metric (columns); then, per data set, how many cells the correction made worse,
left unchanged (the attack declined: no exponent beat the baseline on validation) or improved.
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/examples/correction_tables.py STUDY_FOLDER")
    print(tables(pd.read_csv(Path(sys.argv[1]) / "results.csv")))
