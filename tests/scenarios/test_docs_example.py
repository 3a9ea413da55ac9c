"""The scenario script shown in docs/scripting.md runs and prints what the page says it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "examples" / "scenario_script.py"


@pytest.mark.ray
def test_docs_example_script_runs(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)],
                          check=True, capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()

    # Raw answers give the double-query attack every target: leakage is exactly 100 %.
    assert "leakage: 100.0" in lines
    # Base model plus one flipped model per target (10 targets).
    assert "queries: 11" in lines
    # One honest SP exchange plus 11 attack exchanges, each a query and an answer.
    assert "transcript verified: 24 messages" in lines

    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["scenario", "dataset"])
    row = lines[header + 1].split()
    assert row[:4] == ["synthetic-single-query", "synthetic", "raw", "single-query"]
    assert float(row[4]) == 100.0  # leakage: rounding to 6 decimals keeps every sign
    assert row[5:7] == ["5", "30"]  # 5 queries; N0 recovered from the answers equals minority=30

    for name in ("adult-raw-double-query", "synthetic-single-query"):
        assert {p.name for p in (tmp_path / name).iterdir()} >= {"result.json", "transcript.jsonl", "report.md"}
