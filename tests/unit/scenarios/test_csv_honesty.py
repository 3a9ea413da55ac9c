"""A user's CSV is read honestly: stray labels refused, dropped rows counted, another separator named."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from parley.protocols.errors import ConfigError, DatasetError
from parley.scenarios.datasets import CsvParams, load_table
from parley.scenarios.datasets._csv import MSG_DELIMITER_HINT, MSG_MISSING_COLUMN, MSG_ROWS_DROPPED
from parley.scenarios.datasets._load import clear_cache
from parley.scenarios.report import ROWS_DROPPED, write_report


@pytest.fixture(autouse=True)
def _no_cached_tables():
    clear_cache()
    yield
    clear_cache()


def _frame(n: int = 40) -> pd.DataFrame:
    gen = np.random.default_rng(3)
    return pd.DataFrame({"age": gen.integers(20, 60, n), "income": gen.normal(50, 10, n).round(1),
                         "group": np.where(np.arange(n) % 3 == 0, "B", "A"), "hired": np.arange(n) % 2})


def _params(path, **kw) -> CsvParams:
    return CsvParams(path=str(path), label="hired", protected="group", privileged="A", **kw)


def test_a_label_outside_the_two_classes_is_refused_naming_file_line_and_value(tmp_path):
    frame = _frame().astype({"hired": object})
    frame.loc[5, "hired"] = "yes"  # data row 6: line 7 of the file (the header is line 1)
    path = tmp_path / "hired.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ConfigError) as caught:
        load_table(_params(path))
    message = str(caught.value)
    assert str(path) in message and "line 7 'yes'" in message and "'hired'" in message
    # Declared classes: refused the same way; declared as meaning y = 0, accepted.
    with pytest.raises(ConfigError, match="line 7 'yes'"):
        load_table(_params(path, unfavourable=0))
    table = load_table(_params(path, unfavourable=(0, "yes")))
    assert table.y[5] == 0 and table.y.sum() == (np.arange(40) % 2).sum() - 1


def test_line_numbers_count_blank_lines(tmp_path):
    path = tmp_path / "gaps.csv"
    text = _frame(12).to_csv(index=False).splitlines()
    text[4] = text[4].rsplit(",", 1)[0] + ",maybe"  # line 5 of the file
    path.write_text("\n".join(text[:3] + [""] + text[3:]) + "\n")  # a blank line 4 pushes it to line 6
    with pytest.raises(ConfigError, match="line 6 'maybe'"):
        load_table(_params(path))


def test_rows_dropped_for_blank_cells_are_counted_logged_and_reported(tmp_path, caplog):
    frame = _frame()
    frame["income"] = frame["income"].astype(object)
    frame.loc[[2, 7, 9], "income"] = None
    path = tmp_path / "blanks.csv"
    frame.to_csv(path, index=False)
    with caplog.at_level(logging.WARNING):
        table = load_table(_params(path))
    assert len(table) == 37 and table.rows_dropped == 3
    assert MSG_ROWS_DROPPED.format(path=path, count=3, examples="line 4, line 9, line 11") in caplog.text
    record = {"scenario": "s", "description": "", "dataset": "csv", "protected": "group", "seed": 0,
              "groups": {"a=0": "group != A", "a=1": "group == A"}, "protocol": "raw", "attack": "double-query",
              "threat_model": "curious-data-center", "sizes": {"n_audit": 10, "n_train": 27, "rows_dropped": 3},
              "metrics": {"attacked": 1, "correct": 1, "undecided": 0, "leakage": 100.0, "queries": 2}}
    assert ROWS_DROPPED.format(count=3) in write_report(record, tmp_path).read_text()


@pytest.mark.parametrize(("separator", "shown"), [(";", '";"'), ("\t", '"\\t"'), ("|", '"|"')])
def test_a_header_read_as_one_column_names_the_separator_and_the_delimiter_option(tmp_path, separator, shown):
    path = tmp_path / "other.csv"
    _frame().to_csv(path, sep=separator, index=False)
    with pytest.raises(DatasetError) as caught:
        load_table(_params(path))
    message = str(caught.value)
    assert message.startswith(MSG_MISSING_COLUMN.format(path=path, column="hired", role="label",
                                                        columns=[separator.join(_frame().columns)]))
    assert f"set delimiter = {shown} in [dataset]" in message and f"dataset.delimiter={shown}" in message
    assert MSG_DELIMITER_HINT.split("{")[0] in message
    assert len(load_table(_params(path, delimiter=separator))) == 40
