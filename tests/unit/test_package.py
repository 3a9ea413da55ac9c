"""The distribution installs one import package, ``parley``, whose public API is documented by examples."""

from __future__ import annotations

import doctest
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import parley

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.ray  # the study's example starts Ray (system tier); test_package_examples.py runs the others
def test_every_public_name_is_documented_and_its_examples_pass():
    # The examples run real scenarios (local backend; the study example on a private Ray instance).
    outcome = doctest.testmod(parley, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
    for name in ("run", "study", "compare", "verify"):
        assert ">>>" in (getattr(parley, name).__doc__ or ""), f"parley.{name} has no example"
    assert outcome.attempted >= 20
    assert isinstance(parley.__version__, str) and parley.__version__


@pytest.mark.system  # builds the wheel with pip
def test_the_wheel_holds_only_the_parley_package(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("parley_fairness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"parley", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    # Every source module of the three folders is in the wheel, under parley/.
    for folder in ("parties", "protocols", "scenarios"):
        for module in (ROOT / folder).rglob("*.py"):
            assert f"parley/{module.relative_to(ROOT).as_posix()}" in names
    assert "parley/scenarios/catalog/adult-raw-double-query.toml" in names
    assert "parley/scenarios/datasets/data/adult.data.gz" in names
    # The MIT license text travels with the wheel (license-files, PEP 639) and its metadata names it.
    dist_info = wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"
    assert f"{dist_info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
