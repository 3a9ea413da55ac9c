"""A restore journal that cannot be written (a full disk): no reply is lost, no restore replays a gap.

The journal of a party is pointed at ``/dev/full``, where every write fails with ENOSPC as on a
full disk, in the writer thread of a real :class:`RayDeployment`. The adversary reads the code of
``_finish`` and suspects that a call the party ran (and may have charged for) loses its reply when
the journal fails, settles twice or never, leaves the queue broken for the calls behind it, or that
a later crash restores the party from a journal with a call missing.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from parley.parties.party import check_reply
from parley.parties.ray.deployment import JOURNAL_LOST, PartyLostError, RayDeployment
from parley.parties.ray.journal import JOURNAL_FAILED
from parley.protocols.errors import InternalError
from tests.party_world import Echo, query

pytestmark = pytest.mark.ray

DC = "data-center"


def _crash(host) -> None:
    """Run inside the host actor: its process ends at once, as in a crash."""
    os._exit(1)


def _echoed(reply, keyring) -> np.ndarray:
    return check_reply(reply, keyring, DC, "metric-answer").payload["values"]


def test_a_failed_journal_write_loses_no_reply_and_no_restore_replays_the_gap(ray_session, identities, keyring,
                                                                             tmp_path):
    ray = ray_session
    full = tmp_path / "journal-on-a-full-disk"
    full.symlink_to("/dev/full")  # every write fails with ENOSPC (removing the link leaves the device alone)
    rng = np.random.default_rng(5)
    # 400 KB arrays: each entry is larger than the file's buffer, so its write reaches the disk (and fails) at once
    arrays = [rng.random((50, 1000)) for _ in range(5)]
    envelopes = [query(identities[DC], H, query_id=f"j{i}") for i, H in enumerate(arrays)]
    deployment = RayDeployment()
    deployment.add("compliance", Echo, identities["compliance"], keyring)
    try:
        first = deployment.call("compliance", "receive", envelopes[0])  # journaled on the real disk
        deployment._writer._queue.join()  # its entry written; then the disk fills up
        healthy = deployment._journal["compliance"]
        deployment._journal["compliance"] = open(full, "wb")  # noqa: SIM115 (the deployment closes it)
        healthy.close()
        pipelined = [deployment.submit("compliance", "receive", e) for e in envelopes[1:3]]
        replies = [pipelined[0].result()]  # its journal entry fails in the writer thread ...
        deployment._writer._queue.join()  # ... and has failed before the next call settles
        replies.append(pipelined[1].result())  # settles although the journal reports a failed write
        again = [h.result() for h in pipelined]  # each call settled once: its reply, every time asked
        with pytest.raises(InternalError) as failed:  # reported before the next call is sent
            deployment.submit("compliance", "receive", envelopes[3])
        # The party keeps serving; a crash now cannot be recovered from, and the restore says so.
        served = deployment.call("compliance", "receive", envelopes[3])
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(deployment.hosts["compliance"].__ray_call__.remote(_crash))
        with pytest.raises(PartyLostError) as lost:
            deployment.call("compliance", "receive", envelopes[4])
        # Loaded again, with a journal of its own, the party serves (and could be restored) again.
        deployment.add("compliance", Echo, identities["compliance"], keyring)
        reloaded = deployment.call("compliance", "receive", envelopes[4])
    finally:
        deployment.shutdown()
    np.testing.assert_array_equal(_echoed(first, keyring), arrays[0])
    for got, H in zip(replies, arrays[1:3], strict=True):
        np.testing.assert_array_equal(_echoed(got, keyring), H)
    assert [a is b for a, b in zip(again, replies, strict=True)] == [True, True]
    cause = failed.value.__cause__
    assert isinstance(cause, OSError) and cause.errno == errno.ENOSPC
    assert str(failed.value).endswith(JOURNAL_FAILED.format(error=cause))
    np.testing.assert_array_equal(_echoed(served, keyring), arrays[3])
    assert str(lost.value) == JOURNAL_LOST.format(slot="compliance")
    np.testing.assert_array_equal(_echoed(reloaded, keyring), arrays[4])
    assert os.path.exists("/dev/full") and not os.path.lexists(full)  # the link went with the journal, not the device
