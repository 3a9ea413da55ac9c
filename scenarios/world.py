"""The parties of one run, wired together: what every exchange starts from.

:func:`build_world` loads the data set, gives each party only what its role
holds (the data center X and y, the compliance party A and y of the audit set,
and of the training set where the protocol answers about it), opens the
transcript and the network, and, for a protocol that spends privacy budget,
the run's ledger. Its exchange (:mod:`parley.scenarios.exchanges`) then drives the run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parley import protocols
from parley.parties.codecs import Codec
from parley.parties.compliance import Compliance, account_of, has_costs
from parley.parties.data_center import DataCenter
from parley.parties.encodings import RESERVED_ROLES, ExtraParty, get_encoding
from parley.parties.handles import AdversaryHandle, ComplianceHandle, DataCenterHandle
from parley.parties.network import LocalDeployment, Network
from parley.parties.run_secrets import RunSecrets
from parley.parties.transcript import TranscriptWriter
from parley.parties.wire import Identity, Keyring
from parley.protocols.base import AuditSet
from parley.protocols.errors import PluginError
from parley.scenarios.datasets import Table, load_split
from parley.scenarios.progress import RunProgress
from parley.scenarios.run_parts import (
    ADVERSARY,
    COMPLIANCE,
    DATA_CENTER,
    OBSERVER,
    PARTY_SLOTS,
    STREAMS,
    data_center_data,
    spawn_streams,
)
from parley.scenarios.spec import Scenario

__all__ = ["ADVERSARY", "COMPLIANCE", "DATA_CENTER", "LEDGER_FILE", "OBSERVER", "PARTY_SLOTS", "STREAMS", "World",
           "build_world", "data_center_data", "spawn_streams"]

#: An exchange's or encoding's extra party that claims a built-in role.
EXTRA_PARTY_ROLE = "extra party {slot!r} claims the role {role!r}, which is parley's own: give it a role of its own"
#: The privacy ledger of a run whose protocol spends budget (SQLite; -wal and -shm are its side files).
LEDGER_FILE = "ledger.sqlite"


@dataclass
class World:
    """The parties of one run, their network and the data behind them (the referee's view).

    ``rngs`` holds the streams a flow may use: ``"adversary"``, ``"observer"`` and ``"flow"``
    (anything else the flow draws, e.g. a learner's seed), each independent of the parties' own.
    ``learned`` holds what the flow reports a party or the adversary learned, as (message number,
    sentence) pairs: the sentence applies after that many messages were on the wire
    (``parley run --explain`` prints it under that message; see :mod:`parley.scenarios.explain`).
    """

    scenario: Scenario
    split: Any
    protocol: protocols.Protocol
    identities: dict[str, Identity]
    keyring: Keyring
    deployment: Any
    network: Network
    transcript: TranscriptWriter
    rngs: dict[str, np.random.Generator]
    ledger_path: Path | None = None
    learned: list[tuple[int, str]] = field(default_factory=list)
    #: (message number, people pinned down, of them rightly) after each answer the attack reported on.
    knowledge: list[tuple[int, int, int]] = field(default_factory=list)
    #: The codec the curious data center's adversary wears (ciphertexts under ``he``, shares under a secure
    #: protocol; :mod:`parley.parties.codecs`), None where predictions travel as they are.
    adversary_codec: Codec | None = None
    #: The run's status source on a terminal (:class:`parley.scenarios.progress.RunProgress`); None elsewhere.
    #: A flow hands it its active attack (``progress.watch``) so that the line can count what it learns.
    progress: RunProgress | None = None

    @property
    def compliance(self) -> ComplianceHandle:
        """The compliance party, as the flow calls it."""
        return ComplianceHandle(self.deployment, COMPLIANCE)

    @property
    def data_center(self) -> DataCenterHandle:
        """The data center (or the querier that wraps it), as the flow calls it."""
        return DataCenterHandle(self.deployment, DATA_CENTER)

    def attacker(self, slot: str = ADVERSARY) -> AdversaryHandle:
        """The adversary party in ``slot`` (the active adversary, or an overhearing one)."""
        return AdversaryHandle(self.deployment, slot)

    def learn(self, sentence: str, after: int | None = None) -> None:
        """Record what was learned after message ``after`` (default: the last message sent so far)."""
        self.learned.append((self.network.messages if after is None else int(after), sentence))


def _deployment(scenario: Scenario, address: str | None, hosts: dict[str, Any] | None, in_process: bool) -> Any:
    if scenario.backend == "local" or in_process:
        return LocalDeployment()
    from parley.parties.ray.cluster import ensure_ray
    from parley.parties.ray.deployment import RayDeployment

    ensure_ray(address)
    return RayDeployment(hosts)


def _identities(scenario: Scenario, extra: tuple[ExtraParty, ...]) -> dict[str, Identity]:
    """Fresh signing keys of the run's parties: the two talking ones, an observer, the encoding's extra parties.

    With a confidential scenario the two talking parties also hold X25519 keys: payloads travel sealed.
    """
    kx = scenario.confidential
    identities = {COMPLIANCE: Identity.generate(COMPLIANCE, "compliance", kx=kx),
                  DATA_CENTER: Identity.generate(DATA_CENTER, "data-center", kx=kx)}
    if scenario.threat_model == "passive-observer" or scenario.observer is not None:
        identities[OBSERVER] = Identity.generate(OBSERVER, "observer")
    for party in extra:  # an extra party brings a role of its own, never the power of the built-in ones
        if party.role in RESERVED_ROLES:
            raise PluginError(EXTRA_PARTY_ROLE.format(slot=party.slot, role=party.role))
        identities[party.slot] = Identity.generate(party.slot, party.role)
    return identities


def _accounting(scenario: Scenario, protocol: protocols.Protocol, split: Any, run_dir: Path,
                ledger: Path | None = None) -> tuple[Path | None, dict[str, Any]]:
    """The ledger path and the compliance party's accounting arguments.

    A protocol that spends privacy budget is accounted in the run's ledger file, the data center's queries
    (and the adversary's, sent in its name) against the scenario's budget; ``ledger``, a named ledger
    that outlives the run (:func:`parley.scenarios.run_folder.claim_ledger`), replaces the run's own.
    """
    accounting: dict[str, Any] = {}
    ledger_path = None
    if has_costs(protocol):
        ledger_path = ledger if ledger is not None else run_dir / LEDGER_FILE
        budgets = None if scenario.budget is None else {
            DATA_CENTER if purpose is None else account_of(DATA_CENTER, purpose): limit
            for purpose, limit in scenario.budget.limits().items()}
        accounting = {"ledger_path": str(ledger_path.resolve()), "budgets": budgets,
                      "composition": scenario.composition}
        if scenario.budget is not None and scenario.budget.purposes is not None:
            accounting["purposes"] = tuple(scenario.budget.purposes)
    if "train" in protocol.holds:
        accounting["train"] = AuditSet(a=split.a_train, y=split.y_train)
    return ledger_path, accounting


def build_world(scenario: Scenario, run_dir: Path, address: str | None, table: Table | None,
                hosts: dict[str, Any] | None, split: Any = None, in_process: bool = False,
                secrets: RunSecrets | None = None, ledger: Path | None = None) -> World:
    """Spawn the run's random streams, load the data and start the compliance party and the data center.

    The streams come from the scenario's public seed and drive the simulated world only. Each party's
    private randomness (noise, keys, masks) comes from its own secret of ``secrets`` (fresh from OS entropy
    if omitted; :mod:`parley.parties.run_secrets`).

    ``split`` replaces the seed's split (the whole-scenario privacy audit runs one fixed audit set and
    its neighbour under many seeds); every other stream still comes from the seed. ``in_process`` puts
    the parties in this process whatever the scenario's ``backend`` (see :func:`parley.scenarios.runner.run`).
    A build that fails (data that cannot be split, a party that refuses its arguments) shuts the
    deployment down, the hosts it booted with it, before the error goes on.
    """
    from parley.scenarios.exchanges import get_exchange

    streams = spawn_streams(scenario.seed)
    # The "compliance" stream is spawned (the seed's streams keep their meaning) and used by nobody.
    data_rng, dc_rng, _, adv_rng, obs_rng, flow_rng = (streams[name] for name in STREAMS)
    secrets = secrets if secrets is not None else RunSecrets.fresh()
    protocol = protocols.get_protocol(scenario.protocol.name)(scenario.protocol.params)
    exchange = get_exchange(protocol.flow)
    deployment = _deployment(scenario, address, hosts, in_process)
    transcript: TranscriptWriter | None = None
    try:
        # Over Ray every party host this run will load boots now, in parallel, while the data loads.
        encoding = () if protocol.encoding is None else get_encoding(protocol.encoding).slots
        deployment.boot([COMPLIANCE, DATA_CENTER, *encoding, *exchange.parties(scenario)])
        if split is None:
            split = load_split(scenario.dataset, data_rng, table)
        audit = AuditSet(a=split.a_audit, y=split.y_audit)
        wiring = exchange.wiring(protocol, audit, secrets, {"compliance": COMPLIANCE, "data_center": DATA_CENTER,
                                                            "adversary": ADVERSARY})
        identities = _identities(scenario, wiring.parties)
        keyring = Keyring()
        for identity in identities.values():
            keyring.add(identity.key_entry())
        transcript = TranscriptWriter(run_dir / "transcript.jsonl", keyring)
        network = Network(deployment, transcript)
        # At the end every party signs the final head: the routed ones in their own process, the others (a passive
        # observer, which sends nothing) through the identity the run holds for them.
        transcript.countersign = functools.partial(network.countersign, identities)
        ledger_path, accounting = _accounting(scenario, protocol, split, run_dir, ledger)
        # Each party gets only what its role holds: A never reaches the data center.
        for extra in wiring.parties:
            deployment.add(extra.slot, extra.cls, identities[extra.slot], keyring, *extra.args)
        deployment.add(COMPLIANCE, Compliance, identities[COMPLIANCE], keyring, audit, wiring.answering,
                       [DATA_CENTER], secrets.party(COMPLIANCE), **accounting)
        deployment.add(DATA_CENTER, DataCenter, identities[DATA_CENTER], keyring, data_center_data(split),
                       scenario.model, COMPLIANCE, protocol.name, dc_rng, codec=wiring.data_center)
        for slot in (*(extra.slot for extra in wiring.parties), COMPLIANCE, DATA_CENTER):
            network.route(slot, slot)
        rngs = {"adversary": adv_rng, "observer": obs_rng, "flow": flow_rng}
        return World(scenario, split, protocol, identities, keyring, deployment, network, transcript, rngs,
                     ledger_path, adversary_codec=wiring.adversary)
    except BaseException:  # a failed build leaves nothing running: no host, no open transcript
        try:
            if transcript is not None:
                transcript.abort()
        finally:
            deployment.shutdown()
        raise
