"""What a party rebuilt after a crash needs beyond its replayed calls (no Ray: the parts one by one)."""

from __future__ import annotations

import numpy as np

from parley.parties import ids
from parley.parties.compliance import Compliance
from parley.parties.party import check_reply
from parley.protocols.base import AuditSet
from parley.protocols.metrics import statistical_parity_difference
from tests.fixed_secrets import party_secret
from tests.ledger_world import noisy
from tests.party_world import query

DC = "data-center"


def test_query_ids_are_fresh_recorded_and_played_back_in_order():
    with ids.recording() as drawn:
        first = [ids.new_query_id() for _ in range(3)]
    assert drawn == first and len(set(first)) == 3 and all(len(q) == 32 for q in first)
    assert ids.new_query_id() not in first  # outside a recording: fresh, nothing kept
    with ids.playback(first[:2]):
        assert [ids.new_query_id(), ids.new_query_id()] == first[:2]
        assert ids.new_query_id() not in first  # played out: fresh again


def test_a_restored_compliance_party_never_reuses_released_noise(identities, keyring, audit_arrays, tmp_path):
    """Replay answers q1 from the ledger without drawing noise; without the jump q2 would get q1's noise."""
    a, y = audit_arrays
    H = np.linspace(0, 1, 40)[None, :]
    exact = statistical_parity_difference(H, a)
    dc = identities[DC]
    q1, q2 = query(dc, H, query_id="q1"), query(dc, H, query_id="q2")

    def compliance(path):  # loaded from the same arguments each time, as a restore loads it
        return Compliance(identities["compliance"], keyring, AuditSet(a=a, y=y), noisy(0.25), [DC],
                          party_secret(3), ledger_path=str(path))

    noise = {}
    for resume in (False, True):
        path = tmp_path / f"ledger-{resume}.sqlite"
        before = compliance(path)  # the process that answered q1, then died
        noise1 = check_reply(before.receive(q1), keyring, DC, "metric-answer").payload["values"] - exact
        before.close()
        after = compliance(path)
        after.receive(q1)  # the replay: answered from the ledger, no noise drawn
        if resume:
            after.resume(1)
        noise[resume] = check_reply(after.receive(q2), keyring, DC, "metric-answer").payload["values"] - exact
        after.close()
    np.testing.assert_array_equal(noise[False], noise1)  # the leak the jump prevents: q1's noise again
    assert not np.isclose(noise[True], noise1).any()
