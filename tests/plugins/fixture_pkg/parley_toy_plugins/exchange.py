"""The ``toy-commit`` exchange: how parley runs, narrates and compares the commit-then-reveal check.

The data center wears :class:`PackBits`, a codec that bit-packs the predictions of its ``toy-reveal``
(the compliance party's protocol unpacks them); the passive observer (``toy-peek``) reads the verified
transcript; the referee scores its guess against A and the released SP against the exact one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from parley.parties.attacks import AttackerView, get_attack
from parley.parties.codecs import Codec, Forward
from parley.parties.encodings import Wiring
from parley.parties.run_secrets import RunSecrets
from parley.parties.transcript import read_transcript
from parley.parties.wire import INVALID_PAYLOAD, Envelope
from parley.protocols import AuditSet, Protocol
from parley.protocols.errors import ConfigError, ParleyError, WireError
from parley.scenarios.exchanges import Exchange, Row, Utility
from parley.scenarios.exchanges.metric_query import score
from parley.scenarios.words import people
from parley_toy_plugins.commit import CHALLENGE, COMMIT, RESULT, REVEAL, commitment, pack, signed_sp, unpack

if TYPE_CHECKING:
    from parley.scenarios.world import World


class PackBits(Codec):
    """The data center's codec: a ``toy-reveal`` leaves with its predictions packed eight to a byte."""

    kinds = frozenset()  # it decodes nothing: every reply arrives as the compliance party wrote it

    def encode(self, kind: str, payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        if kind != REVEAL or "predictions" not in payload:
            return kind, payload
        predictions = np.asarray(payload["predictions"])
        rest = {key: value for key, value in payload.items() if key != "predictions"}
        return kind, {**rest, "packed": pack(predictions), "n": int(predictions.size)}

    def decode(self, envelope: Envelope) -> dict[str, Any] | Forward:
        raise WireError(INVALID_PAYLOAD, f"the packbits codec decodes no {envelope.kind!r}")


def _reply(world: World, kind: str) -> dict[str, Any]:
    replies = [payload for got, payload in world.data_center.replies_received() if got == kind]
    if not replies:
        raise ParleyError(f"the compliance party sent no {kind} (see the refusal in the transcript)")
    return replies[-1]


def _on_wire(world: World) -> tuple[np.ndarray | None, float | None]:
    """What a passive observer reads in the verified transcript: the revealed predictions and the released SP."""
    predictions, sp = None, None
    for envelope in read_transcript(world.transcript.path, verify=True):
        if envelope.kind == REVEAL:
            predictions = unpack(envelope.payload["packed"], int(envelope.payload["n"]))
        elif envelope.kind == RESULT:
            sp = float(envelope.payload["value"])
    return predictions, sp


class ToyCommitExchange(Exchange):
    """Commit, challenge, reveal, result: a fairness check the data center cannot tailor to the people checked."""

    name = "toy-commit"
    utility = Utility("sp_error", "|released SP - exact SP of the committed predictions on the audit set|",
                      higher_is_better=False, short="SP error", fairness_key="sp_exact_abs",
                      fairness_label="|SP| of the committed predictions (true A)", use="a committed fairness check")
    sizes = ({"audit_size": 1000, "train_size": 3000}, {"audit_size": 300, "train_size": 1000})
    not_audited = "not audited: parley's privacy audit does not read the {name} exchange"

    def wiring(self, protocol: Protocol, audit: AuditSet, secrets: RunSecrets, parties: Mapping[str, str]) -> Wiring:
        return Wiring(protocol, data_center=PackBits())

    def describe(self, kind: str, payload: Mapping[str, Any]) -> str | None:
        if kind == COMMIT:
            return (f"a commitment to the base model's predictions on {people(int(payload.get('n', 0)))}: SHA-256 "
                    f"{str(payload.get('commitment'))[:12]}... (salted: the predictions stay hidden)")
        if kind == CHALLENGE:
            return (f"a challenge: SP will be measured on {people(np.asarray(payload.get('people', [])).size)}, "
                    f"drawn by the compliance party after the commitment (nonce {str(payload.get('nonce'))[:8]}...)")
        if kind == REVEAL:
            return (f"the reveal: {int(payload.get('n', 0)):,} predictions bit-packed into "
                    f"{np.asarray(payload.get('packed', [])).size:,} bytes, with the salt that opens the commitment")
        if kind == RESULT:
            return (f"the result: SP = {payload.get('value')} on the {payload.get('checked')} people checked, rounded "
                    f"to {payload.get('decimals')} decimals (the reveal opened the commitment)")
        return None

    def rows(self, quick: bool) -> list[Row]:
        return [Row("toy-commit", {"name": "toy-commit"}, self.name),
                Row("toy-commit share=0.9", {"name": "toy-commit", "share": 0.9}, self.name)]

    def run(self, world: World) -> dict[str, Any]:
        metrics: dict[str, Any] = world.data_center.train()
        predictions = world.data_center.view().require("base_predictions").astype(np.int8)
        n, salt = int(predictions.size), os.urandom(16).hex()  # the salt is the data center's own secret
        digest = commitment(salt, pack(predictions), n)
        world.network.exchange(world.data_center.request(COMMIT, {"commitment": digest, "n": n}))
        challenge = _reply(world, CHALLENGE)
        world.learn(f"the data center is bound to its predictions; only now does it learn which "
                    f"{people(challenge['people'].size)} will be checked")
        world.network.exchange(world.data_center.request(REVEAL, {
            "commit_id": challenge["query_id"], "nonce": challenge["nonce"], "salt": salt, "predictions": predictions}))
        result = _reply(world, RESULT)
        world.transcript.close()
        a = world.split.a_audit
        exact = signed_sp(predictions, a)
        metrics.update({"sp_released": result["value"], "sp_exact": exact, "sp_exact_abs": abs(exact),
                        "sp_error": abs(result["value"] - exact), "checked": result["checked"]})
        attack = get_attack(world.scenario.attack.name)(world.scenario.attack.params, AttackerView(n=n),
                                                        world.rngs["adversary"])
        if not hasattr(attack, "peek"):
            raise ConfigError(f"attack {attack.name!r} has no peek(predictions, sp) for the toy-commit exchange")
        seen, sp = _on_wire(world)
        if seen is None:
            raise ParleyError("no toy-reveal on the wire")
        reconstruction = attack.peek(seen, sp)
        scored = score(reconstruction, a)
        world.learn(f"the passive observer reads the {n:,} revealed predictions and SP = {sp} off the wire and guesses "
                    f"each person's A from their prediction: leakage {scored['leakage']:.1f} % (50 % is chance)")
        return {**scored, **metrics, **{f"attack_{key}": value for key, value in reconstruction.info.items()}}
