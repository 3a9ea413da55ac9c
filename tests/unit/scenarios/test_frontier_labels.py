"""The compare report's frontier plot: every protocol's label readable, none over another."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text

from parley.scenarios.compare import report


def _crowded_front() -> pd.DataFrame:
    """Configurations whose points sit close together, as a real comparison's DP rows do."""
    rows = [{"flow": "metric-query", "name": "curious-data-center", "protocol": protocol, "utility": 1e-4 * (1 + i % 3),
             "unfairness": np.nan, "worst_leakage": 60 + 0.3 * i}
            for i, protocol in enumerate(["raw", "laplace ε=0.5", "laplace ε=1", "laplace ε=2", "smooth-cauchy ε=0.5",
                                          "smooth-cauchy ε=1", "dp-counts ε=1", "mpc", "he"])]
    # exact protocols leak alike: points on top of one another
    rows += [{"flow": "metric-query", "name": "curious-data-center", "protocol": protocol, "utility": 1e-4,
              "unfairness": np.nan, "worst_leakage": 60.05} for protocol in ("mpc-dp ε=8", "dp-counts gaussian ε=8")]
    rows += [{"flow": "rr-release", "name": "passive-observer", "protocol": protocol, "utility": 0.8 + 1e-3 * i,
              "unfairness": 0.05 + 1e-3 * i, "worst_leakage": 55 + 0.2 * i}
             for i, protocol in enumerate(["rr-release ε=0.5", "rr-release ε=1", "rr-release ε=2", "cov-threshold",
                                           "fairness-certificate"])]
    return pd.DataFrame(rows)


def test_frontier_labels_do_not_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = []
    monkeypatch.setattr(report.plt, "close", figures.append)  # keep the figure to measure its labels
    report._frontier_png(_crowded_front(), tmp_path / "frontier.png")
    (fig,) = figures
    renderer = fig.canvas.get_renderer()
    labels = 0
    for ax in fig.axes:
        boxes = [Text.get_window_extent(text, renderer) for text in ax.texts]  # the words, not the tie line
        labels += len(boxes)
        overlapping = [(ax.texts[i].get_text(), ax.texts[j].get_text())
                       for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
        assert not overlapping, overlapping
        right = ax.get_window_extent(renderer).x1
        assert all(box.x1 <= right + 1 for box in boxes), "a label runs past its panel's right edge"
    assert labels == 11 + 5 + 5
    assert (tmp_path / "frontier.png").stat().st_size > 10_000
