"""The query-leakage figures are drawn from the recorded results by their command."""

from __future__ import annotations

import pytest

from parley.scenarios import query_leakage_figures as figures
from parley.scenarios.reproduce import DOCS


@pytest.mark.parametrize("name", ["fig2a", "workshop-fig4", pytest.param("facct-fig3", marks=pytest.mark.system)])
def test_each_figure_is_drawn_from_the_recorded_results(tmp_path, name):
    assert (DOCS / f"{name}.results.csv").is_file()
    (path,) = figures.draw([name], tmp_path)
    assert path.parent == tmp_path and path.stat().st_size > 10_000
    assert (figures.FIGURE_DIR / path.name).is_file()  # the page's copy exists too
