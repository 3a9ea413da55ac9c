"""Draw docs/figures/dp-counts-error.png from the last line of the dp-counts benchmark.

    python -m tests.benchmarks.bench_count_dp | tail -1 > docs/figures/dp-counts-error.json
    python docs/examples/dp_counts_figure.py docs/figures/dp-counts-error.json docs/figures/dp-counts-error.png

One panel per input (the honest audit set, n = 1,000, and the compare's, n = 500): the median |SP error| of
every protocol and reference against epsilon; for ``dp-counts`` and the fine lattice the exact (enumerated) and
400,000-draw medians where the benchmark has them, else the medians of its 400 releases. A median of 0 (most
answers exact) cannot sit on the log axis: it is drawn at the panel's floor with an open marker and labelled.
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

#: (field of a one-model row, label, matplotlib style), drawn in this order.
SERIES = (
    ("laplace", "laplace", "s-"),
    ("smooth_cauchy", "smooth-cauchy", "^-"),
    ("plain_counts", "plain counts (before)", "x--"),
    ("centred", "dp-counts centred (before)", "o--"),
    ("fine_lattice", "dp-counts pair, fine lattice (before)", "D--"),
    ("dp_counts", "dp-counts (pair on its lattice)", "D-"),
    ("local_laplace", "local Laplace (not private)", ":"),
    ("chain_bound", "chain lower bound (any mechanism)", "v:"),
)
FLOOR = 3e-4
#: The better-estimated figure of a field, where the benchmark gives one: (field, key of its median).
PRECISE = {"dp_counts": ("dp_counts_exact", "median"), "fine_lattice": ("fine_lattice_400k", "median")}


def value(row: dict, field: str) -> float | None:
    """The row's median for ``field``: exact or from 400,000 draws where available, else the sampled one."""
    precise, key = PRECISE.get(field, (None, None))
    if precise is not None and row.get(precise) is not None:
        return row[precise][key]
    return row.get(field)


def main(source: str, out: str) -> None:
    with open(source, encoding="utf-8") as handle:
        result = json.loads(handle.read().strip().splitlines()[-1])
    rows = [row for row in result["one_model"] if row["metric"] == "sp"]
    worlds = sorted({row["world"] for row in rows}, key=lambda w: -min(r["n"] for r in rows if r["world"] == w))
    fig, axes = plt.subplots(1, len(worlds), figsize=(5 * len(worlds), 4), sharey=True)
    for ax, world in zip(axes, worlds, strict=True):
        part = sorted((row for row in rows if row["world"] == world), key=lambda row: row["epsilon"])
        for i, (field, label, style) in enumerate(SERIES):
            points = [(row["epsilon"], value(row, field)) for row in part if value(row, field) is not None]
            ax.plot([e for e, _ in points], [max(v, FLOOR) for _, v in points], style, color=f"C{i}", label=label)
            for e, v in points:
                if v < 1e-12:  # a median of 0, up to the post-processing's rounding
                    ax.plot([e], [FLOOR], "o", mfc="white", color=f"C{i}", ms=9)
                    ax.annotate("median 0", (e, FLOOR), textcoords="offset points", xytext=(-48, 6), fontsize=7)
        ax.set(xscale="log", yscale="log", xlabel="epsilon", title=f"{world}, audit n = {part[0]['n']:,}")
        ax.set_ylim(FLOOR / 1.5, 20)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("median |SP error|")
    axes[-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main(*sys.argv[1:3])
