"""Hostile input: hypothesis-generated bad envelopes and payloads against every kind of party.

The default run tries a few hundred cases; ``python -m pytest -m reliability -s
tests/reliability/test_hostile.py`` runs the 10,000-case campaign and prints the
counts per attack and per refusal reason (docs/reliability.md).
"""

from __future__ import annotations

import pytest

from parley.parties import wire

from .hostile import TARGETS, campaign, report

#: Cases of the campaign per target (10,000 in all).
CAMPAIGN = {"compliance": 3500, "compliance-confidential": 2500, "data-center": 2000, "adversary": 2000}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_hostile_smoke(target):
    t = campaign(target, examples=60, rng_seed=1)
    assert sum(t.tried.values()) >= 60 and t.good >= 60  # send() fails on any internal-error refusal
    print(report(target, t))


@pytest.mark.reliability
def test_hostile_campaign():
    total_tried = total_refused = 0
    for target, examples in CAMPAIGN.items():
        t = campaign(target, examples=examples, rng_seed=2026)
        print(report(target, t))
        refused = sum(v for k, v in t.outcomes.items() if k in wire.REFUSAL_REASONS)
        assert t.good >= examples  # send() fails on any internal-error refusal
        # Nearly every hostile case is refused; the rest are valid by chance (answered and checked) or refusals ignored.
        assert refused >= 0.9 * sum(t.tried.values()), t.outcomes
        total_tried += sum(t.tried.values())
        total_refused += refused
    print(f"total: {total_tried} hostile cases, {total_refused} refused with a typed reason")
    assert total_tried >= 10_000
