"""A party host imports its party's module at load: that import stays free of scipy and scikit-learn.

scipy.optimize and scipy.stats alone took 0.45-0.55 s of each host's start (docs/design.md, "Start-up");
the attacks and learners import scipy inside the functions that use it. A fresh interpreter imports
every party module (the attacks and learners registries with them) and the study worker's engine,
and must not have loaded either.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy.optimize", "scipy.stats", "scipy.sparse", "scipy.special", "scipy.linalg", "sklearn")
MODULES = ("parley.parties.compliance", "parley.parties.data_center", "parley.parties.adversary",
           "parley.parties.secure", "parley.parties.homomorphic", "parley.scenarios.study.engine")


def test_party_modules_import_without_scipy_or_sklearn():
    code = (f"import importlib, json, sys\nfor m in {MODULES!r}: importlib.import_module(m)\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
