"""A source checkout imports like the wheel: parley.parties, parley.protocols and parley.scenarios, nothing else.

Each check runs ``python -c`` from the repository root, where the folders parties/, protocols/ and
scenarios/ would also be importable by their own names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("parties", "protocols", "scenarios")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_subpackages_are_the_checkout_folders_and_import_neither_ray_nor_pandas():
    done = _python("import sys, parley.parties, parley.protocols, parley.scenarios\n"
                   "print(parley.__file__)\n"
                   "for name in ('parties', 'protocols', 'scenarios'):\n"
                   "    module = sys.modules['parley.' + name]\n"
                   "    print(module.__file__, *module.__path__)\n"
                   "print('ray' in sys.modules, 'pandas' in sys.modules)")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(ROOT / "parley" / "__init__.py")
    for folder, line in zip(FOLDERS, lines[1:4], strict=True):
        assert line.split() == [str(ROOT / folder / "__init__.py"), str(ROOT / folder)]
    assert lines[4] == "False False"


@pytest.mark.parametrize("name", ["parley.tests", "parley.setup", "parley.parley", "parley.docs"])
def test_nothing_else_in_the_checkout_is_a_parley_module(name):
    done = _python(f"import {name}")
    assert done.returncode == 1
    assert f"ModuleNotFoundError: No module named '{name}'" in done.stderr


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folder_imported_by_its_own_name_is_refused_with_the_name_to_use(folder):
    done = _python(f"import {folder}")
    assert done.returncode == 1
    expected = f"ImportError: import parley.{folder}, not {folder} (the folder installs as parley.{folder})"
    assert done.stderr.strip().splitlines()[-1] == expected


def test_a_module_is_imported_once_under_its_parley_name():
    done = _python("import sys, importlib\n"
                   "import parley.parties.wire as wire\n"
                   "from parley.parties import wire as again\n"
                   "assert wire is again is importlib.import_module('parley.parties.wire')\n"
                   "try:\n"
                   "    import parties.wire\n"
                   "except ImportError:\n"
                   "    pass\n"
                   "copies = [name for name, module in list(sys.modules.items())\n"
                   "          if getattr(module, '__file__', None) == wire.__file__]\n"
                   "print(copies)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['parley.parties.wire']"
