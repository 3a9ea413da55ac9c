"""parley compare on a tiny grid: matrix shape, reasons of empty cells, the report's files, its HTML in Chromium."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

from parley.protocols.errors import ConfigError
from parley.scenarios.compare import compare
from parley.scenarios.compare.plan import BAD_DATASET_FOR_COMPARE, NO_NOISE_LAW, UNKNOWN_ROW, plan
from parley.scenarios.compare.report import QUICK_CAVEAT
from parley.scenarios.compare.run import NO_SAVED_RESULTS, build_study, report_from_files
from parley.scenarios.compare.utility import UTILITY_FILE, UTILITY_LABEL
from parley.scenarios.runner import leakage_bound
from parley.scenarios.spec import WRONG_FLOW, Scenario
from parley.scenarios.study.engine import draw_run_report
from tests.browser import CHROMIUM, NO_CHROMIUM, probe_page

ROWS = ("raw", "laplace ε=1", "cov-threshold m=100")
ATTACKS = ("double-query", "differencing", "threshold-inversion")
LIKELIHOOD = "likelihood [curious-data-center]"


def test_applicability_comes_from_the_scenario_checks():
    p = plan("adult", quick=True, rows=ROWS, attacks=ATTACKS)
    assert [r.label for r in p.rows] == list(ROWS)
    # double-query, differencing: one threat model each; threshold-inversion: two.
    assert [c.label for c in p.columns] == ["double-query [curious-data-center]", "differencing [passive-observer]",
                                            "threshold-inversion [curious-data-center]",
                                            "threshold-inversion [passive-observer]"]
    assert set(p.cells) == {("raw", "double-query [curious-data-center]"),
                            ("laplace ε=1", "double-query [curious-data-center]"),
                            ("raw", "differencing [passive-observer]"),
                            ("laplace ε=1", "differencing [passive-observer]"),
                            ("cov-threshold m=100", "threshold-inversion [curious-data-center]"),
                            ("cov-threshold m=100", "threshold-inversion [passive-observer]")}
    reason = p.reasons[("raw", "threshold-inversion [passive-observer]")]
    head = WRONG_FLOW.split("{fitting}")[0].format(what="attack", name="threshold-inversion", flows="cov-threshold",
                                                    protocol="raw", flow="metric-query")
    assert reason.startswith(head)


def test_the_likelihood_column_applies_to_every_dp_protocol_and_to_nothing_else():
    """The noise-law decoder has a cell in every row whose protocol adds noise, and says why raw has none."""
    p = plan("adult", quick=True, attacks=("likelihood",))
    assert [c.label for c in p.columns] == [LIKELIHOOD]
    dp = {r.label for r in p.rows if r.flow == "metric-query" and "epsilon" in r.protocol}
    # the built-in rows, and a protocol without a default epsilon at the grid's epsilon (laplace-bounded ε=1)
    assert dp == {"laplace ε=1", "smooth-cauchy ε=1", "dp-counts ε=1", "dp-counts gaussian ε=1",
                  "smooth-laplace ε=0.5", "mpc-dp ε=1"} | {r.label for r in p.rows if r.label.endswith(" ε=1")
                                                          and r.protocol["name"] == "laplace-bounded"}
    assert {row for row, _ in p.cells} == dp
    assert p.reasons[("raw", LIKELIHOOD)] == NO_NOISE_LAW.format(attack="likelihood", protocol="raw")
    assert p.reasons[("cov-threshold m=100", LIKELIHOOD)].startswith("attack 'likelihood' reads")


def test_gaussian_rows_compose_their_answers_in_zcdp_and_no_other_row_does():
    """The Gaussian answers record their rho: their runs' ledgers compose in zCDP, so epsilon_spent and the leakage
    bound of those rows are the zCDP totals (6 answers at (1, 1e-6) spend epsilon 2.63, not 6)."""
    p = plan("adult", quick=True, attacks=("likelihood",))
    composed = {label: Scenario.from_dict(data).composition for (label, _), data in p.cells.items()}
    assert composed == {label: "zcdp" if "gaussian" in label else "sequential" for label in composed}
    assert "dp-counts gaussian ε=1" in composed
    # and the study that runs the cells keeps it: every cell's scenario composes as its row says
    study, labels = build_study(p)
    by_cell = dict(zip(study.cell_ids(), labels, strict=True))
    cells = {by_cell[cell.cell]["row"]: cell.scenario for cell in study.cells() if "row" in by_cell[cell.cell]}
    assert {row: Scenario.from_dict(data).composition for row, data in cells.items()} == composed


def test_bad_names_are_config_errors():
    with pytest.raises(ConfigError, match=re.escape(BAD_DATASET_FOR_COMPARE.split("{")[0])):
        plan("synthetic")
    with pytest.raises(ConfigError, match=UNKNOWN_ROW.split("{")[0]):
        plan("adult", rows=("laplace ε=7",))


@pytest.fixture(scope="module")
def tiny(ray_session, tmp_path_factory):
    """One tiny comparison (parties in-process in the study workers, no audit), shared by the tests below."""
    out = tmp_path_factory.mktemp("compare")
    return out, compare("adult", out, quick=True, rows=ROWS, attacks=(*ATTACKS, "likelihood"), backend="local",
                        audit=False, progress=False, workers=2, releases=RELEASES)


RELEASES = 40


def test_tiny_compare_writes_matrix_frontier_and_reports(tiny):
    tmp_path, done = tiny
    for name in ("matrix.csv", "matrix_long.csv", "frontier.csv", "frontier.png", "report.md", "report.html",
                 "confidentiality.csv"):
        assert (tmp_path / name).stat().st_size > 0, name
    wide = pd.read_csv(tmp_path / "matrix.csv", index_col=0)
    assert wide.shape == (3, 5) and list(wide.index) == list(ROWS)
    # raw answers exactly: double queries reveal every target.
    assert wide.loc["raw", "double-query [curious-data-center]"].startswith("100.0 ± 0.0")
    # Laplace answers are noisy: the exact-answer decoder gives up, and says so.
    assert wide.loc["laplace ε=1", "double-query [curious-data-center]"].startswith("gave up: AttackError")
    assert wide.loc["raw", "threshold-inversion [passive-observer]"].startswith(
        "does not apply: attack 'threshold-inversion' reads")
    long = pd.read_csv(tmp_path / "matrix_long.csv")
    # the likelihood column: measured against laplace, with the bound of the epsilon spent and the gap to it
    assert wide.loc["raw", LIKELIHOOD].startswith("does not apply: " + NO_NOISE_LAW.format(attack="likelihood",
                                                                                        protocol="raw"))
    cell = long[(long["protocol"] == "laplace ε=1") & (long["attack"] == LIKELIHOOD)].iloc[0]
    assert cell["n"] == 1 and 0.0 <= cell["leakage_mean"] <= 100.0
    # the data center spends epsilon 1 on its honest SP audit query and 1 on the attack's query: it sees both
    assert cell["leakage_bound"] == pytest.approx(leakage_bound(2.0, 0.0), rel=1e-12)
    assert cell["bound_gap"] == pytest.approx(cell["leakage_bound"] - cell["leakage_mean"], rel=1e-12)
    assert pd.isna(long[(long["protocol"] == "raw") & (long["attack"] == LIKELIHOOD)]["leakage_bound"]).all()
    inverted = long[(long["protocol"] == "cov-threshold m=100") & (long["n"] > 0)]
    assert len(inverted) == 2 and inverted["leakage_mean"].between(0, 100).all()
    front = pd.read_csv(tmp_path / "frontier.csv").set_index("protocol")
    assert front.loc["raw", "utility"] == 0.0 and front.loc["laplace ε=1", "utility"] > 0.0  # honest query error
    # The metric-query utility is the error over RELEASES releases of the honest answer, written to utility.csv.
    utility = pd.read_csv(tmp_path / UTILITY_FILE).set_index("protocol")
    assert list(utility.index) == ["raw", "laplace ε=1"] and (utility["releases"] == RELEASES).all()
    assert front.loc["laplace ε=1", "utility"] == utility.loc["laplace ε=1", "median_error"]
    assert front.loc["laplace ε=1", "utility_label"] == UTILITY_LABEL.format(releases=RELEASES)
    # An observer of honest traffic reveals nobody: counted as chance.
    assert wide.loc["raw", "differencing [passive-observer]"].startswith("50.0 ± 0.0 (n=1; revealed nobody")
    assert 0.5 < front.loc["cov-threshold m=100", "utility"] <= 1.0  # accuracy
    conf = done.confidentiality.set_index(["scenario", "confidential"])
    assert conf.loc[("adult-raw-double-query", False), "observer_leakage"] == 100.0
    assert pd.isna(conf.loc[("adult-raw-double-query", True), "observer_leakage"])
    assert conf.loc[("adult-raw-double-query", True), "sealed_payloads"] == conf.loc[
        ("adult-raw-double-query", True), "envelopes"]
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "prefer **" in report and "![frontier](frontier.png)" in report
    # a quick comparison's ranking is labelled a smoke check, with why, where its recommendations are
    assert "## Which protocol under which threat model (a smoke check)" in report
    assert QUICK_CAVEAT.format(repeats=done.plan.repeats, audit_runs=done.plan.audit_runs) in report
    bounds = report.split("## The strongest attack against the bound")[1].split("\n## ")[0]
    line = next(t for t in bounds.splitlines() if t.startswith("| laplace ε=1 |"))
    assert f"| {cell['leakage_bound']:.3g} | {cell['bound_gap']:.3g} |" in line
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "on_frontier" in front.columns and bool(front.loc["raw", "on_frontier"])  # the most useful: undominated


def test_cells_keep_their_run_and_draw_their_report_only_when_asked(tiny):
    """The comparison links to no cell's report: a cell keeps result.json and its transcript, no report drawn."""
    out, _ = tiny
    cells = sorted(path for path in (out / "study" / "cells").iterdir() if path.is_dir())
    assert cells and all((c / "transcript.jsonl").is_file() for c in cells)
    finished = [c for c in cells if (c / "result.json").is_file()]  # a run whose attack gave up writes none
    assert finished and not any((c / "report.html").exists() or (c / "report.md").exists() for c in cells)
    drawn = draw_run_report(finished[0])  # on demand, from the kept files (the transcript verified as it is drawn)
    assert drawn == finished[0] / "report.html" and "<img" in drawn.read_text(encoding="utf-8")
    assert (finished[0] / "report.md").read_text(encoding="utf-8").startswith("# ")


def test_the_audit_runs_at_the_niceness_of_the_study_workers(ray_session):
    """The audit's tasks and the study's workers are Ray workers alike: the same niceness, recorded per row."""
    import os

    from parley.scenarios.compare.run import run_audits
    from tests.fixed_secrets import run_secrets

    p = plan("adult", quick=True, rows=("cov-threshold m=100",), attacks=("threshold-inversion",))
    audits = run_audits(p, progress=False, secrets=run_secrets(0))  # one wiring run: the cheapest audited row

    @ray_session.remote(num_cpus=1)
    class Worker:  # as a study's worker is started (an actor of this Ray instance)
        def niceness(self) -> int:
            return os.nice(0)

    worker = Worker.remote()
    assert audits["niceness"].tolist() == [ray_session.get(worker.niceness.remote())]
    ray_session.kill(worker)


def test_a_report_is_rewritten_from_the_files_of_its_run(tiny):
    tmp_path, done = tiny
    written = {name: (tmp_path / name).read_bytes() for name in ("report.md", "frontier.csv", "matrix.csv")}
    for name in written:
        (tmp_path / name).unlink()
    again = report_from_files(tmp_path)  # nothing runs: the study's rows and the invocation are read back
    assert again.wall_s == done.wall_s and again.ran == done.ran and again.skipped == done.skipped
    assert {name: (tmp_path / name).read_bytes() for name in written} == written


def test_a_report_is_rewritten_from_its_saved_tables_without_the_study(tiny, tmp_path):
    """A checked-in report keeps no study/: the rewrite reads the tables written from it, and measures utility."""
    out, _ = tiny
    kept = tmp_path / "kept"
    shutil.copytree(out, kept, ignore=shutil.ignore_patterns("study"))
    (kept / UTILITY_FILE).unlink()  # measured again (seeded: the same figures)
    report_from_files(kept, releases=RELEASES)
    for name in ("report.md", "frontier.csv", "matrix.csv", "matrix_long.csv", UTILITY_FILE, "confidentiality.csv"):
        assert (kept / name).read_bytes() == (out / name).read_bytes(), name
    (kept / "frontier.csv").unlink()
    with pytest.raises(ConfigError, match=re.escape(NO_SAVED_RESULTS.split("{")[0])):
        report_from_files(kept)


#: A figure that cannot load (a truncated PNG): the check must see it fail.
BROKEN_IMG = '<img alt="broken" src="data:image/png;base64,iVBORw0KGgo=">'


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=NO_CHROMIUM)
def test_report_html_figures_load_in_headless_chromium(tiny, tmp_path):
    out, _ = tiny
    html = (out / "report.html").read_text(encoding="utf-8")
    expected = re.findall(r'<img alt="([^"]+)"', html)
    assert expected, "the report has no figure"
    probe = tmp_path / "report.html"
    probe.write_text(html.replace("</body>", BROKEN_IMG + "</body>"), encoding="utf-8")
    widths, errors, _ = probe_page(probe, tmp_path / "profile")
    assert errors == []
    assert widths.pop("broken") == 0  # the check sees an image that does not load
    assert sorted(widths) == sorted(expected)
    assert all(width > 100 for width in widths.values()), widths
