"""Figure 1 of the private-demographics paper from an ``rr-figure1`` study folder: plot and table.

Usage::

    parley study rr-figure1 --out studies/rr-figure1
    python tests/benchmarks/rr_figure1.py studies/rr-figure1 docs/figures/rr-figure1.png

Both arguments are optional: the folder defaults to ``studies/rr-figure1`` and the figure to
``docs/figures/rr-figure1.png``. A folder without a readable ``results.csv`` ends with one line
saying what to run, exit status 2.

Reads ``results.csv`` (one row per cell and repeat), draws the equalized-odds violation
w.r.t. the true A and the accuracy of the step-1 and two-step predictors against eps (log
scale) with 95 % confidence intervals of the mean, as the paper's Figure 1 does, and prints a
Markdown table; the last line is one JSON object with the same numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

PREDICTORS = (("step1", "step 1 (Y-hat)"), ("two_step", "two-step (Y~)"))
DEFAULT_FOLDER = Path("studies/rr-figure1")
DEFAULT_FIGURE = Path("docs/figures/rr-figure1.png")
NO_RESULTS = "rr_figure1.py: {path} not found; run `parley study rr-figure1 --out {folder}` first"
BAD_RESULTS = "rr_figure1.py: {path} is not an rr-figure1 results table ({error})"
NO_ROWS = "rr_figure1.py: {path} holds no completed cell (status ok)"


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95 % t-interval half-width of each metric by epsilon."""
    frame = frame[frame["status"] == "ok"]
    rows = []
    for eps, group in frame.groupby("protocol.epsilon"):
        row = {"epsilon": float(eps), "repeats": len(group)}
        for key, _ in PREDICTORS:
            for what in ("disc", "accuracy"):
                values = group[f"{key}_{what}"].to_numpy(dtype=float)
                half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)) \
                    if len(values) > 1 else float("nan")
                row[f"{key}_{what}"], row[f"{key}_{what}_ci"] = float(values.mean()), float(half)
        row["two_step_not_above_step1"] = int((group["two_step_disc"] <= group["step1_disc"]).sum())
        rows.append(row)
    if not rows:
        return pd.DataFrame(rows)
    return pd.DataFrame(rows).sort_values("epsilon")


def plot(summary: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, what, label in ((axes[0], "disc", "equalized-odds violation w.r.t. true A"),
                            (axes[1], "accuracy", "accuracy")):
        for key, name in PREDICTORS:
            ax.errorbar(summary["epsilon"], summary[f"{key}_{what}"], yerr=summary[f"{key}_{what}_ci"],
                        marker="o", capsize=3, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Adult (sex): step 1 vs two-step, {int(summary['repeats'].min())} repeats, 95 % CI")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def table(summary: pd.DataFrame) -> str:
    lines = ["| ε | repeats | disc step 1 | disc two-step | acc. step 1 | acc. two-step | two-step ≤ step 1 |",
             "|---|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        lines.append(f"| {r['epsilon']:g} | {int(r['repeats'])} "
                     f"| {r['step1_disc']:.3f} ± {r['step1_disc_ci']:.3f} "
                     f"| {r['two_step_disc']:.3f} ± {r['two_step_disc_ci']:.3f} "
                     f"| {r['step1_accuracy']:.3f} ± {r['step1_accuracy_ci']:.3f} "
                     f"| {r['two_step_accuracy']:.3f} ± {r['two_step_accuracy_ci']:.3f} "
                     f"| {int(r['two_step_not_above_step1'])} of {int(r['repeats'])} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rr_figure1.py", description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER,
                        help=f"study folder holding results.csv (default {DEFAULT_FOLDER})")
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_FIGURE,
                        help=f"figure to write (default {DEFAULT_FIGURE})")
    args = parser.parse_args(argv[1:])
    path = args.folder / "results.csv"
    if not path.is_file():
        print(NO_RESULTS.format(path=path, folder=args.folder), file=sys.stderr)
        return 2
    try:
        summary = summarise(pd.read_csv(path))
    except (KeyError, ValueError, pd.errors.ParserError) as exc:
        print(BAD_RESULTS.format(path=path, error=f"{type(exc).__name__}: {exc}"), file=sys.stderr)
        return 2
    if summary.empty:
        print(NO_ROWS.format(path=path), file=sys.stderr)
        return 2
    out = args.out
    plot(summary, out)
    print(table(summary))
    print(json.dumps({"figure": str(out), "rows": summary.to_dict(orient="records")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
