"""A partition-only reconstruction says that its leakage is up to a swap: result.json, report.md, console."""

from __future__ import annotations

import json

import pytest

import parley
from parley.scenarios.cli import main
from parley.scenarios.report import SWAP_NOTE


@pytest.mark.parametrize("attack", ["abs-sp-partition", "eodds-flip"])
def test_compas_partition_with_every_label_wrong_says_so(tmp_path, attack):
    # On COMPAS the smaller group is the advantaged one, so the partition's labels come out swapped.
    extra = {"attack__targets": 40} if attack == "eodds-flip" else {}
    result = parley.run("adult-reveal-abs-sp", out=tmp_path / attack, dataset__name="compas", backend="local",
                        attack__name=attack, **extra)
    metrics = json.loads((tmp_path / attack / "result.json").read_text())["metrics"]
    assert metrics == json.loads(json.dumps(result.metrics))
    assert metrics["leakage"] == 100.0 and metrics["leakage_up_to_swap"] is True
    assert metrics["leakage_as_labelled"] == 0.0 and metrics["correct"] == 0
    note = SWAP_NOTE.format(as_labelled="0")
    assert note in (tmp_path / attack / "report.md").read_text()


def test_a_labelled_reconstruction_has_no_swap_note(tmp_path, capsys):
    assert main(["run", "adult-raw-single-query", "--set", "backend=local", "--set", "attack.targets=3",
                 "--out", str(tmp_path)]) == 0
    assert "up to a swap" not in capsys.readouterr().out
    metrics = json.loads((tmp_path / "result.json").read_text())["metrics"]
    assert metrics["leakage_up_to_swap"] is False and "leakage_as_labelled" not in metrics
    assert "up to a swap" not in (tmp_path / "report.md").read_text()
