"""`parley show`, `parley list`'s wrapping, the protocol tables of docs/scenarios.md, and the notebook displays."""

from __future__ import annotations

import base64
import re
import textwrap
import typing
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from parley.protocols import PROTOCOLS
from parley.scenarios.cli import EXIT_OK, EXIT_USAGE, main
from parley.scenarios.compare.run import Comparison
from parley.scenarios.runner import Result
from parley.scenarios.show import _bounds, _words, default_of, kind_of, show
from parley.scenarios.study.engine import StudyRun

REPO = Path(__file__).resolve().parents[3]
#: A 1x1 PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJ"
                       "RU5ErkJggg==")


def _cli(capsys, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


# --- parley show ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_show_protocol_gives_every_key_with_type_default_range_and_description(name: str) -> None:
    cls = PROTOCOLS[name]
    text = show(name, width=200)
    assert text.startswith(f"protocol {name} ")
    assert " ".join(textwrap.dedent(cls.__doc__ or "").split()) in " ".join(text.split())
    for key, info in cls.Params.model_fields.items():
        if key == "name":
            continue
        head = next((line for line in text.splitlines() if line.startswith(f"  {key}: ")), None)
        assert head is not None, f"{name}: key {key} not shown"
        assert kind_of(info) in head and ("required" if info.is_required() else f"default {default_of(info)}") in head
        assert " ".join((info.description or "").split()) in " ".join(text.split())


def test_show_formats_types_and_ranges() -> None:
    laplace = show("laplace", width=200)
    assert '  epsilon: float > 0, required' in laplace
    assert '  sampler: "lattice" | "snapping" | "float-unsafe", default "lattice"' in laplace
    rr = show("rr-release", width=200)
    assert "  releases: integer in [1, 1,000], default 1" in rr
    assert "  report_probability: float in (0, 1], default 1.0" in rr
    assert "  decimals: integer in [0, 17], or none, default none" in show("raw", width=200)


def test_a_name_that_is_several_things_shows_each() -> None:
    text = show("rr-release", width=200)
    assert "protocol rr-release (parley)" in text and "exchange rr-release (parley)" in text


@pytest.mark.parametrize("name", ["single-query", "dfrr", "synthetic", "metric-query"])
def test_show_attack_learner_dataset_and_exchange(name: str) -> None:
    text = show(name, width=200)
    assert re.match(rf"(attack|learner|data set|exchange) {name} \(parley\)", text), text[:200]


def test_show_scenario_gives_its_description_and_every_dotted_key_with_its_value() -> None:
    text = show("adult-raw-double-query", width=200)
    assert text.startswith("scenario adult-raw-double-query (default)\n"
                           "  protocol raw, attack double-query, data set adult")
    assert "A curious data center reveals the race of 20 chosen individuals" in text
    for line in ('  seed = 0', '  backend = "ray"', '  dataset.name = "adult"', '  dataset.audit_size = 1000',
                 '  protocol.name = "raw"', '  protocol.decimals = none', '  attack.targets = 20',
                 '  attack.batch = false', '  observer.name = "differencing"', '  model.threshold = 0.5'):
        assert line in text.splitlines(), line
    assert "integer in [0, 17], or none; round answers to this many decimals" in " ".join(text.split())


def test_show_study(capsys) -> None:
    status, out = _cli(capsys, "show", "compas-cov-rho")
    assert status == EXIT_OK
    assert out.startswith("study compas-cov-rho\n  file: ")
    assert "  repeats = 3" in out and '  grid.learner.name = ["dfgr", "dfrr"]' in out


def test_show_unknown_name_is_a_usage_error(capsys) -> None:
    status, out = _cli(capsys, "show", "no-such-thing")
    assert status == EXIT_USAGE
    assert out.startswith("parley: error: no scenario, study, protocol") and "`parley list`" in out


# --- parley list ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [60, 100])
def test_list_wraps_descriptions_at_words_to_the_terminal(capsys, monkeypatch, columns: int) -> None:
    from parley.scenarios.catalog import scenario_names, scenario_path
    from parley.scenarios.spec import load_toml

    monkeypatch.setenv("COLUMNS", str(columns))
    status, out = _cli(capsys, "list")
    assert status == EXIT_OK
    assert max(map(len, out.splitlines())) <= columns
    words = " ".join(out.split())
    for name in scenario_names():  # the whole description, never cut
        description = " ".join(str(load_toml(scenario_path(name)).get("description", "")).split())
        assert description in words, name



# --- docs/scenarios.md ---------------------------------------------------------------------------------------------


def _protocol_tables() -> dict[str, list[list[str]]]:
    text = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = text.split("\n## [protocol]\n", 1)[1].split("\n## ", 1)[0]
    tables = {}
    for match in re.finditer(r"^\*\*`([\w-]+)`\*\*.*?\n\n((?:\|.*\n)+)", section, re.M):
        rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in match.group(2).splitlines()]
        tables[match.group(1)] = rows[2:]
    return tables


def test_scenarios_page_has_a_table_of_every_protocols_parameters() -> None:
    tables = _protocol_tables()
    builtin = [name for name in PROTOCOLS if PROTOCOLS.origin(name).builtin]
    assert sorted(tables) == sorted(builtin), "docs/scenarios.md [protocol]: one **`name`** table per protocol"
    for name in builtin:
        fields = {k: f for k, f in PROTOCOLS[name].Params.model_fields.items() if k != "name"}
        rows = {row[0].strip("`"): row for row in tables[name]}
        assert set(rows) == set(fields), f"docs/scenarios.md, {name}: keys {sorted(rows)}, Params {sorted(fields)}"
        for key, info in fields.items():
            _, values, default, _meaning = rows[key]
            want = default_of(info)
            shown = default.strip("`").replace("absent", "none")
            assert shown == want or (shown.replace('"', "") == want.replace('"', "")) or \
                (want.replace(".0", "") == shown), f"{name}.{key}: default {default}, Params {want}"
            if typing.get_origin(info.annotation) is typing.Literal:
                missing = [c for c in typing.get_args(info.annotation) if f'"{c}"' not in values]
                assert not missing, f"{name}.{key}: values leave out {missing}"
            if _bounds(list(info.metadata)):
                for bound in (getattr(m, a) for m in info.metadata for a in ("ge", "gt", "le", "lt") if hasattr(m, a)):
                    assert _words(bound) in values, f"{name}.{key}: values {values!r} do not give the bound {bound}"


# --- notebooks -----------------------------------------------------------------------------------------------------


def _record(**metrics) -> dict:
    return {"scenario": "demo", "protocol": "laplace", "attack": "likelihood", "dataset": "synthetic",
            "threat_model": "curious-data-center", "spec": {"x": "y" * 4000},
            "metrics": {"leakage": 61.25, "leakage_bound": 88.0797, "queries": 200, "messages": 4, **metrics}}


def test_result_repr_is_one_short_line_and_html_shows_leakage_bound_and_figures(tmp_path: Path) -> None:
    (tmp_path / "leakage.png").write_bytes(PNG)
    result = Result(record=_record(), run_dir=tmp_path)
    text = repr(result)
    assert "\n" not in text and len(text) < 200 + len(str(tmp_path))
    assert text == (f"Result(demo: laplace protocol, likelihood attack, leakage 61.2 % (bound 88.1 %), 200 queries, "
                    f"folder {tmp_path})")
    html = result._repr_html_()
    assert "<th>leakage</th><td>61.2 % (bound 88.1 %)</td>" in html
    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in html


def test_result_without_a_bound_or_figures(tmp_path: Path) -> None:
    record = _record()
    del record["metrics"]["leakage_bound"]
    result = Result(record=record, run_dir=tmp_path)
    assert "leakage 61.2 %, 200 queries" in repr(result)
    assert "<img" not in result._repr_html_()


def test_study_run_and_comparison_display(tmp_path: Path) -> None:
    (tmp_path / "plot.png").write_bytes(PNG)
    results = pd.DataFrame({"cell": ["a", "b"], "repeat": [0, 0], "leakage": [50.0, 100.0],
                            "leakage_bound": [73.1, 88.1], "queries": [10, 20], "row": ["raw", "laplace ε=1"],
                            "column": ["single-query", "single-query"]})
    done = StudyRun(out=tmp_path, ran=2, skipped=0, failed=0, wall_s=3.25, results=results)
    assert repr(done) == (f"StudyRun({tmp_path.name}: 2 rows run, 0 already done, 0 failed, leakage 50 to 100 % "
                          f"(bound 73.1 to 88.1 %), 3.2 s, folder {tmp_path})")
    html = done._repr_html_()
    assert "<td>50 to 100 % (bound 73.1 to 88.1 %)</td>" in html and "data:image/png;base64," in html
    comparison = Comparison(plan=SimpleNamespace(dataset="adult"), results=results, audits=pd.DataFrame(),
                            confidentiality=pd.DataFrame(), out=tmp_path, wall_s=61.0)
    assert repr(comparison).startswith("Comparison(adult: 2 runs, 0 audits, leakage 50 to 100 %")
    html = comparison._repr_html_()
    assert "mean leakage" in html and "laplace ε=1" in html and "data:image/png;base64," in html
