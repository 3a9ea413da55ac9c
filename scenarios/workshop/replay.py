"""Replay mode: a finished run of the room's card, stepped through message by message on the projector.

For a room without laptops: the card's catalog scenario (its attack instead of the participants) runs under
the facilitator's defense, in this process, and the projector shows its verified transcript one message at a
time, with what was learned after it (``World.learned``) and what the attack had pinned down
(``World.knowledge``): the same story ``parley run NAME --explain`` tells, at the room's pace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parley.parties.compliance import has_costs
from parley.parties.confidential import is_sealed
from parley.parties.run_secrets import RunSecrets
from parley.parties.transcript import read_transcript
from parley.protocols import get_protocol
from parley.protocols.errors import ParleyError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.explain import describe
from parley.scenarios.runner import leakage_bound, run
from parley.scenarios.spec import Scenario
from parley.scenarios.workshop.play import Card

__all__ = ["replay_scenario", "replay_steps"]

#: Messages a replay shows at most (the first ones, where the story is; decimals=4 sends over a thousand).
MAX_STEPS = 400


def replay_scenario(card: Card, overrides: dict[str, Any]) -> Scenario:
    """The scenario ``card`` replays under the facilitator's defense (``overrides``: scenario fields).

    The card names it per protocol (:meth:`Card.replay`): the curious data center replays
    ``adult-reveal-precision`` under ``raw`` (29 exact answers read A of 1,000 people) and ``adult-likelihood``
    under a DP protocol (one query of n models decoded under the noise law: the strongest attack on noisy
    answers); the passive observer ``adult-rr-observer``; secure computation ``adult-mpc-reveal`` under ``mpc``
    and ``adult-mpc-dp`` under ``mpc-dp``.
    """
    scenario = Scenario.from_toml(scenario_path(card.replay(str(overrides.get("protocol.name", card.protocols[0])))))
    return scenario.with_values({**overrides, "backend": "local"})


def _charges(scenario: Scenario) -> bool:
    """Does the scenario's protocol charge epsilon? ``raw`` and ``mpc`` do not, and promise nothing: bound 100 %."""
    return has_costs(get_protocol(scenario.protocol.name)(scenario.protocol.params))


def replay_steps(scenario: Scenario, out: Path, secrets: RunSecrets) -> dict[str, Any]:
    """Run ``scenario`` into ``out`` and return its messages as replay steps, with the run's figures.

    A run whose attack stops (an answer it cannot read: too few decimals, noise it does not model) is
    replayed as far as it went: ``stopped`` says why.
    """
    try:
        result = run(scenario, out=out, in_process=True, reports=False, secrets=secrets)
    except ParleyError as exc:
        return {"scenario": scenario.name, "protocol": scenario.protocol.name, "steps": [], "messages": 0,
                "leakage": None, "attacked": 0, "epsilon_spent": 0.0, "bound": None, "end": [], "stopped": str(exc)}
    learned: dict[int, list[str]] = {}
    for after, sentence in result.learned:
        learned.setdefault(after, []).append(sentence)
    knowledge = {int(at): (int(pinned), int(rightly)) for at, pinned, rightly in result.record.get("knowledge", [])}
    steps, pinned = [], (0, 0)
    for number, envelope in enumerate(read_transcript(result.transcript_path), 1):
        if number > MAX_STEPS:
            break
        pinned = knowledge.get(number, pinned)
        steps.append({"n": number, "sender": envelope.sender, "recipient": envelope.recipient,
                      "kind": envelope.kind, "protocol": envelope.protocol, "sealed": is_sealed(envelope.payload),
                      "says": describe(envelope.kind, envelope.payload), "learned": learned.get(number, []),
                      "pinned": pinned[0], "rightly": pinned[1]})
    metrics = result.metrics
    spent = metrics.get("epsilon_spent") or 0.0
    spent = float(sum(spent.values())) if isinstance(spent, dict) else float(spent)
    return {"scenario": scenario.name, "protocol": scenario.protocol.name, "steps": steps,
            "messages": int(metrics.get("messages", len(steps))), "leakage": metrics.get("leakage"),
            "attacked": metrics.get("attacked"), "epsilon_spent": spent,
            "bound": leakage_bound(spent, 0.0) if _charges(scenario) else 100.0,
            "end": learned.get(max(learned, default=0), []), "stopped": None}
