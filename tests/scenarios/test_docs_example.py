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
    # The base model plus one flipped model per target (10 targets), one query each.
    assert "queries: 11" in lines
    # On the wire: the honest SP question and the 11 attack queries, each with its answer.
    assert "transcript verified: 24 messages" in lines

    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["scenario", "dataset"])
    row = lines[header + 1].split()
    assert row[:4] == ["synthetic-single-query", "synthetic", "raw", "single-query"]
    assert float(row[4]) == 100.0  # rounding to 6 decimals keeps the sign of every +1/N1, -1/N0
    assert row[5:7] == ["5", "30"]  # 5 queries; N0 read off the answers equals minority=30

    for name in ("adult-raw-double-query", "synthetic-single-query"):
        assert {"result.json", "transcript.jsonl", "report.md"} <= {p.name for p in (tmp_path / name).iterdir()}
