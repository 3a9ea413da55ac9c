"""Settling a call the deployment no longer queues stops with a typed error, never an IndexError.

Driver logic only (no actor is started): a handle whose call left its party's queue unsettled
(the state a failed journal write once left behind) must not make ``result()`` index an empty queue.
"""

from __future__ import annotations

from collections import deque

import pytest

from parley.parties.ray.deployment import NOT_QUEUED, Pending, RayDeployment, _Call
from parley.protocols.errors import InternalError


@pytest.mark.parametrize("queued", [False, True], ids=["no-queue", "empty-queue"])
def test_a_call_neither_settled_nor_queued_raises_internal_error(queued):
    deployment = RayDeployment()
    lost = _Call("compliance", "deliver", ("env",), {}, (("env",), {}))
    if queued:
        deployment._pending["compliance"] = deque()
    try:
        with pytest.raises(InternalError) as raised:
            Pending(deployment, lost).result()
    finally:
        deployment.shutdown()
    assert str(raised.value).endswith(NOT_QUEUED.format(method="deliver", slot="compliance"))
    assert not lost.settled
