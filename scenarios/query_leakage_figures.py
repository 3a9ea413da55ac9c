"""The query-leakage paper's figures, drawn from recorded study results.

Run ``python -m parley.scenarios.query_leakage_figures``.

Each figure reads only the files :mod:`parley.scenarios.reproduce` records in ``docs/reproductions/``
(``NAME.results.csv``, and ``NAME.paper.csv`` for the paper's points the plain text keeps) and writes
``docs/figures/<file>.png``; nothing is typed here but the axes. Commands::

    python -m parley.scenarios.query_leakage_figures            # every figure
    python -m parley.scenarios.query_leakage_figures fig2a      # one (fig2a, workshop-fig4, facct-fig3)

``fig2a``: FAccT Fig. 2(a), leakage against the number of queries at epsilon = infinity and 100 (Adult,
n = 100). ``workshop-fig4``: the workshop text's Fig. 4(a), the share of individuals recovered against
m / n (German Credit), with and without Attribute-Conceal at epsilon = 1000. ``facct-fig3``: FAccT
Fig. 3, Avg. SP err against leakage over epsilon in [10, 500] (synthetic data).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["FIGURES", "FIGURE_DIR", "draw", "main"]

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "reproductions"
FIGURE_DIR = REPO / "docs" / "figures"


def _load(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    results = pd.read_csv(RESULTS / f"{name}.results.csv", low_memory=False)
    paper = pd.read_csv(RESULTS / f"{name}.paper.csv", comment="#", dtype=str)
    return results[results["status"] == "ok"], paper


def _mean_std(rows: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    frame = rows.assign(**{y: pd.to_numeric(rows[y], errors="coerce")})
    return frame.groupby(x)[y].agg(["mean", "std"]).reset_index()


def _median(rows: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    frame = rows.assign(**{y: pd.to_numeric(rows[y], errors="coerce")})
    return frame.groupby(x)[y].agg(["median"]).reset_index()


def _fig2a(out: Path) -> Path:
    results, paper = _load("fig2a")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    curves = (("fig2a-leakage-queries", "l1", "ε = ∞, l1 (Alg. 2)", "C0", "-"),
              ("fig2a-leakage-queries", "box-count", "ε = ∞, box-and-count LP", "C0", "--"),
              ("fig2a-conceal", "l1", "ε = 100, l1", "C3", "-"),
              ("fig2a-conceal", "robust", "ε = 100, LAD", "C3", "--"))
    for run, decoder, label, colour, style in curves:
        rows = results[(results["run"] == run) & (results["attack.decoder"] == decoder)]
        stats = _mean_std(rows, "attack.max_queries", "leakage")
        ax.errorbar(stats["attack.max_queries"], stats["mean"], yerr=stats["std"], label=label, color=colour,
                    linestyle=style, marker="o", markersize=3, capsize=2)
    for eps, colour in (("inf", "C0"), ("100", "C3")):
        points = paper[(paper["epsilon"] == eps) & paper["leakage"].notna()]
        ax.scatter(pd.to_numeric(points["m"]), pd.to_numeric(points["leakage"]), marker="x", s=60, color=colour,
                   zorder=5, label=f"paper, ε = {'∞' if eps == 'inf' else eps} (Table 1)")
    ax.axhline(50, color="grey", linestyle=":", linewidth=1)
    ax.set(xlabel="probe models m (one query)", ylabel="leakage (%)", ylim=(40, 102),
           title="Adult, n = 100: leakage against the number of queries (FAccT Fig. 2(a))")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, loc="center right")
    return _save(fig, out / "fig2a-leakage-queries.png")


def _workshop_fig4(out: Path) -> Path:
    results, paper = _load("workshop-fig4")
    results = results.assign(share=pd.to_numeric(results["correct"]) / pd.to_numeric(results["attacked"]),
                             ratio=pd.to_numeric(results["attack.max_queries"]) / pd.to_numeric(results["attacked"]))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    curves = (("workshop-fig4", None, "raw, l1 (Alg. 2)", "C0", "-"),
              ("workshop-fig4-conceal", "l1", "ε = 1000, l1", "C3", "-"),
              ("workshop-fig4-conceal", "robust", "ε = 1000, LAD", "C3", "--"))
    for run, decoder, label, colour, style in curves:
        rows = results[results["run"] == run]
        if decoder is not None:
            rows = rows[rows["attack.decoder"] == decoder]
        stats = _mean_std(rows, "ratio", "share")
        ax.plot(stats["ratio"], stats["mean"], label=label, color=colour, linestyle=style, marker="o", markersize=3)
    points = paper[paper["recovered"].notna()]
    for _, p in points.iterrows():
        colour = "C0" if p["epsilon"] == "inf" else "C3"
        ax.scatter(float(p["m"]) / 1000, float(p["recovered"]) / 1000, marker="x", s=60, color=colour, zorder=5)
    ax.scatter([], [], marker="x", color="k", label="paper (n = 1,000; blue raw, red ε = 1000)")
    majority = results["attack_N0"].dropna()
    if len(majority):
        share = 1 - pd.to_numeric(majority).mean() / 700
        ax.axhline(share, color="grey", linestyle=":", linewidth=1, label=f"everyone in the majority ({share:.2f})")
    ax.set(xlabel="probe models per audit individual, m / n", ylabel="share of individuals recovered",
           ylim=(0.4, 1.02), title="German Credit (sex): individuals recovered against m / n (workshop Fig. 4(a))")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, loc="upper left")
    return _save(fig, out / "workshop-fig4-recovered.png")


def _facct_fig3(out: Path) -> Path:
    results, _ = _load("facct-fig3")
    sizes = sorted(pd.to_numeric(results["dataset.audit_size"]).unique())
    fig, axes = plt.subplots(2, len(sizes), figsize=(5.6 * len(sizes), 8.0), squeeze=False)
    runs = (("facct-fig3-tradeoff", "-", "o", "Attribute-Conceal"), ("facct-fig3-laplace", "--", "x", "Laplace"))
    for col, n in enumerate(sizes):
        top, bottom = axes[0][col], axes[1][col]
        lad = (results["run"] == "facct-fig3-laplace") | (results["attack.decoder"] == "robust")  # Laplace: LAD only
        rows = results[(pd.to_numeric(results["dataset.audit_size"]) == n) & lad]
        for k, n0 in enumerate(sorted(pd.to_numeric(rows["dataset.minority"]).unique())):
            for run, style, marker, label in runs:
                cell = rows[(pd.to_numeric(rows["dataset.minority"]) == n0) & (rows["run"] == run)]
                if cell.empty:
                    continue
                m = int(pd.to_numeric(cell["attack.max_queries"]).iloc[0])
                leak = _mean_std(cell, "protocol.epsilon", "leakage")
                err = _median(cell, "protocol.epsilon", "median_query_error")
                name = f"{label}, N0 = {int(n0)}, m = {m}"
                top.plot(leak["mean"], err["median"], color=f"C{k}", marker=marker, linestyle=style, label=name)
                bottom.plot(err["protocol.epsilon"], err["median"], color=f"C{k}", marker=marker, linestyle=style,
                            label=name)
                if run == "facct-fig3-tradeoff":
                    for eps, x, y in zip(leak["protocol.epsilon"], leak["mean"], err["median"], strict=True):
                        top.annotate(f"{eps:g}", (x, y), fontsize=6, xytext=(3, 2), textcoords="offset points")
        top.axvline(50, color="grey", linestyle=":", linewidth=1)
        top.set(yscale="log", xlabel="leakage (%), LAD decoder, mean of 3 runs", title=f"n = {int(n):,}")
        bottom.set(xscale="log", yscale="log", xlabel="ε")
        bottom.legend(fontsize=6)
    for row, what in enumerate(("labels: ε", "against ε")):
        axes[row][0].set_ylabel(f"SP err, median of runs' medians ({what})")
    fig.suptitle("Synthetic data, ε in [10, 500]: SP err against leakage (top) and against ε (bottom); "
                 "Attribute-Conceal (o, solid) and Laplace (x, dashed) (FAccT Fig. 3)", fontsize=9)
    return _save(fig, out / "facct-fig3-tradeoff.png")


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)
    return path


FIGURES: dict[str, Callable[[Path], Path]] = {"fig2a": _fig2a, "workshop-fig4": _workshop_fig4,
                                              "facct-fig3": _facct_fig3}


def draw(names: Sequence[str] = (), out: Path = FIGURE_DIR) -> list[Path]:
    """Draw the named figures (all by default) into ``out``; the files written."""
    return [FIGURES[name](out) for name in (names or FIGURES)]


def main(argv: Sequence[str] | None = None) -> int:
    """Draw the figures named on the command line (all by default); print the files written."""
    parser = argparse.ArgumentParser(prog="python -m parley.scenarios.query_leakage_figures",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", choices=sorted(FIGURES), help="figures to draw (default: all)")
    parser.add_argument("--out", type=Path, default=FIGURE_DIR, help="folder of the PNG files")
    args = parser.parse_args(argv)
    for path in draw(args.names, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
