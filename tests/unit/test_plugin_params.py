"""Every plug-in declares the type of its ``params`` as its own ``Params`` model.

The declaration is what mypy reads (``self.params.epsilon`` is checked against the
plug-in's model); this test keeps it in step with the ``Params`` the registry builds.
"""

from __future__ import annotations

import typing

import pytest

from parley.parties.attacks import ATTACKS
from parley.parties.learners import LEARNERS
from parley.protocols import PROTOCOLS

PLUGINS = sorted([*(("protocol", c) for c in PROTOCOLS.values()), *(("attack", c) for c in ATTACKS.values()),
                  *(("learner", c) for c in LEARNERS.values())], key=lambda pair: (pair[0], pair[1].name))


@pytest.mark.parametrize(("kind", "cls"), PLUGINS, ids=[f"{kind}:{cls.name}" for kind, cls in PLUGINS])
def test_params_is_declared_as_the_plugins_own_model(kind, cls):
    declared = typing.get_type_hints(cls)["params"]
    assert declared is cls.Params, f"{kind} {cls.name!r}: params is declared as {declared}, Params is {cls.Params}"
