"""Flows reach parties through typed handles: method names are spelled in one module, and each names a real method."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from parley.parties import handles
from parley.parties.adversary import Adversary
from parley.parties.attacks.randomized_response.rr_inference import RRBayesAttack
from parley.parties.compliance import Compliance
from parley.parties.data_center import DataCenter
from parley.parties.party import Party

ROOT = Path(__file__).resolve().parents[3]
#: The party classes each handle drives (one class per role, whatever codec it wears).
DRIVES = {handles.PartyHandle: (Party,), handles.ComplianceHandle: (Compliance,),
          handles.DataCenterHandle: (DataCenter,),
          handles.AdversaryHandle: (Adversary,), handles.ReleaseAdversaryHandle: (RRBayesAttack,)}
#: A deployment call that names the party's method in a string.
BY_NAME = re.compile(r"""\.(call|submit)\(\s*[\w.\[\]"']+\s*,\s*["']""")


def _called(cls: type) -> set[str]:
    """The method names ``cls`` (a handle class) passes to the deployment, read from its source."""
    tree = ast.parse(Path(handles.__file__).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Constant):
            if getattr(call.func, "attr", None) == "_call":
                names.add(call.args[0].value)
            elif getattr(call.func, "attr", None) == "submit":
                names.add(call.args[1].value)
    return names


@pytest.mark.parametrize("handle", list(DRIVES), ids=lambda cls: cls.__name__)
def test_every_method_a_handle_names_exists_on_the_parties_it_drives(handle):
    names = _called(handle)
    assert names, handle
    for name in names:
        offered = [cls for cls in DRIVES[handle] if callable(getattr(cls, name, None))]
        assert offered, f"{handle.__name__} calls {name!r}, which none of {DRIVES[handle]} has"


def test_no_module_but_the_handles_calls_a_party_method_by_name():
    offenders = []
    for folder in ("parley", "parties", "protocols", "scenarios"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "handles.py" and path.parent.name == "parties":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if BY_NAME.search(line) and "deployment" in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
