"""Run one scenario end to end and write its run folder.

The runner is the referee: it loads the data set, gives each party only what
its role holds (the data center X and y, the compliance party A and y of the
audit set), connects them through the logged network, lets the adversary work,
and finally scores the adversary's reconstruction against the truth that no
party handed over. Randomness: one ``SeedSequence`` per run, spawned into one
stream per party, so the same seed gives the same ``result.json`` (timings and
package versions aside).
"""

from __future__ import annotations

import json
import math
import platform
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import protocols
from parties.adversary import Adversary, exchanges_from
from parties.attacks import AttackerView, Reconstruction, get_attack, leakage
from protocols.errors import AttackError
from parties.compliance import Compliance
from parties.data_center import DataCenter, DataCenterData
from parties.network import LocalDeployment, Network
from parties.transcript import TranscriptWriter, iter_transcript, read_transcript
from parties.wire import Identity, Keyring
from protocols.base import AuditSet
from protocols.metrics import evaluate

from .datasets import Table, load_split
from .report import write_report
from .spec import Component, Scenario

__all__ = ["Result", "run"]

COMPLIANCE, DATA_CENTER, ADVERSARY, OBSERVER = "compliance", "data-center", "adversary", "observer"
#: Every slot a run may fill with a party.
PARTY_SLOTS = (COMPLIANCE, DATA_CENTER, ADVERSARY, OBSERVER)
#: Keys of result.json that vary between runs of the same seed.
VOLATILE = ("wall_s", "versions", "attack_decode_s")
#: The privacy ledger of a run whose protocol spends budget (SQLite; -wal and -shm are its side files).
LEDGER_FILE = "ledger.sqlite"


@dataclass(frozen=True)
class Result:
    """The outcome of one run: ``record`` is exactly what ``result.json`` holds."""

    record: dict[str, Any]
    run_dir: Path

    @property
    def metrics(self) -> dict[str, Any]:
        """The measured quantities (leakage, queries, messages, bytes, ...)."""
        return dict(self.record["metrics"])

    @property
    def transcript_path(self) -> Path:
        return self.run_dir / "transcript.jsonl"

    def to_pandas(self) -> "Any":
        """One-row DataFrame: scenario fields and metrics side by side (for studies and notebooks)."""
        import pandas as pd

        row = {k: v for k, v in self.record.items() if not isinstance(v, dict)}
        row.update(self.record["metrics"])
        return pd.DataFrame([row])


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("parley", "ray", "numpy", "scipy", "scikit-learn", "cryptography", "pydantic", "fairlearn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _deployment(scenario: Scenario, address: str | None, hosts: dict | None) -> Any:
    if scenario.backend == "local":
        return LocalDeployment()
    from parties.actors import RayDeployment, ensure_ray

    ensure_ray(address)
    return RayDeployment(hosts)


def _build_attack(component: Component, view: AttackerView, rng: np.random.Generator):
    return get_attack(component.name)(component.params, view, rng)


def _clean(value: Any) -> Any:
    """JSON-ready: numpy scalars to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _query_errors(path: Path, a: np.ndarray, y: np.ndarray) -> dict[str, float | None]:
    """Mean and median |released - exact| over every answered model (the referee recomputes the exact values).

    Both are reported: Cauchy noise has no finite mean, so its mean error is ruled by the tails.
    """
    errors = [np.abs(e.values - evaluate(e.metric, e.predictions, a, y))
              for e in exchanges_from(iter_transcript(path, verify=False))]
    if not errors:
        return {"avg_query_error": None, "median_query_error": None}
    flat = np.concatenate(errors)
    return {"avg_query_error": float(flat.mean()), "median_query_error": float(np.median(flat))}


@dataclass
class _World:
    """The parties of one run, their network and the data behind them (the referee's view)."""

    scenario: Scenario
    split: Any
    protocol: protocols.Protocol
    identities: dict[str, Identity]
    keyring: Keyring
    deployment: Any
    network: Network
    transcript: TranscriptWriter
    ledger_path: Path | None = None


def _build_world(scenario: Scenario, run_dir: Path, address: str | None, streams: list,
                 table: Table | None, hosts: dict | None) -> _World:
    data_rng, dc_rng, comp_rng = streams[:3]
    split = load_split(scenario.dataset, data_rng, table)
    protocol = protocols.get_protocol(scenario.protocol.name)(scenario.protocol.params)
    identities = {COMPLIANCE: Identity.generate(COMPLIANCE, "compliance"),
                  DATA_CENTER: Identity.generate(DATA_CENTER, "data-center")}
    if scenario.threat_model == "passive-observer" or scenario.observer is not None:
        identities[OBSERVER] = Identity.generate(OBSERVER, "observer")
    keyring = Keyring()
    for identity in identities.values():
        keyring.add(identity.key_entry())
    deployment = _deployment(scenario, address, hosts)
    transcript = TranscriptWriter(run_dir / "transcript.jsonl", keyring)
    network = Network(deployment, transcript)
    # A protocol that spends privacy budget is accounted in the run's ledger file, the data center's
    # queries (and the adversary's, sent in its name) against the scenario's budget.
    accounting: dict[str, Any] = {}
    ledger_path = None
    if spends_budget(protocol):
        ledger_path = run_dir / LEDGER_FILE
        budgets = {DATA_CENTER: scenario.budget.to_budget()} if scenario.budget is not None else None
        accounting = {"ledger_path": str(ledger_path.resolve()), "budgets": budgets,
                      "composition": scenario.composition}
    # Each party gets only what its role holds: A never reaches the data center.
    deployment.add(COMPLIANCE, Compliance, identities[COMPLIANCE], keyring,
                   AuditSet(a=split.a_audit, y=split.y_audit), protocol, [DATA_CENTER], comp_rng, **accounting)
    deployment.add(DATA_CENTER, DataCenter, identities[DATA_CENTER], keyring,
                   DataCenterData(split.X_train, split.y_train, split.X_audit, split.y_audit),
                   scenario.model, COMPLIANCE, protocol.name, dc_rng)
    network.route(COMPLIANCE, COMPLIANCE)
    network.route(DATA_CENTER, DATA_CENTER)
    return _World(scenario, split, protocol, identities, keyring, deployment, network, transcript, ledger_path)


def spends_budget(protocol: protocols.Protocol) -> bool:
    """Does ``protocol`` put a privacy cost on its answers (it overrides :meth:`Protocol.cost`)?"""
    return type(protocol).cost is not protocols.Protocol.cost


def _honest_use(world: _World) -> dict[str, Any]:
    """The data center trains and asks how fair its base model is."""
    metrics = world.deployment.call(DATA_CENTER, "train")
    for metric in world.scenario.audit_metrics:
        world.network.exchange(world.deployment.call(DATA_CENTER, "audit_query", metric))
    for answer in world.deployment.call(DATA_CENTER, "answers_received"):
        metrics[f"base_{answer['metric']}"] = float(answer["values"][0])
    return metrics


def _curious_attack(world: _World, rng: np.random.Generator) -> Reconstruction:
    """The data center defects: the adversary queries in its name until the attack ends."""
    view, identity = world.deployment.call(DATA_CENTER, "defect")
    world.deployment.add(ADVERSARY, Adversary, identity, world.keyring,
                         _build_attack(world.scenario.attack, view, rng), COMPLIANCE, world.protocol.name)
    world.network.route(DATA_CENTER, ADVERSARY)  # answers to the data center's name now reach the adversary
    models_before = world.deployment.call(COMPLIANCE, "stats")["models_answered"]
    world.network.exchange(world.deployment.call(ADVERSARY, "start"))
    try:
        return world.deployment.call(ADVERSARY, "outcome")
    except AttackError:
        # The budget did its job: the attack ran out of budget before it could conclude. The run
        # still reports (nobody attacked, what was answered and spent) instead of failing.
        stats = world.deployment.call(COMPLIANCE, "stats")
        if world.ledger_path is None or not stats["budget_refusals"]:
            raise
        empty = np.empty(0, dtype=np.int64)
        return Reconstruction(indices=empty, a_hat=empty.astype(np.int8), decided=empty.astype(bool),
                              queries=stats["models_answered"] - models_before, info={"stopped": "budget-exceeded"})


def _overhear(world: _World, slot: str, component: Component, seen: list, rng: np.random.Generator) -> Reconstruction:
    """A passive attack on the transcript; the observer knows only n (from the queries' shape)."""
    wire_view = AttackerView(n=int(world.split.a_audit.shape[0]))
    world.deployment.add(slot, Adversary, world.identities[OBSERVER], world.keyring,
                         _build_attack(component, wire_view, rng), COMPLIANCE, world.protocol.name)
    return world.deployment.call(slot, "observe", seen)


def _score(reconstruction: Reconstruction, a: np.ndarray) -> dict[str, Any]:
    """The referee's verdict: leakage (Def. 5.1) and counts, against the truth no party handed over."""
    truth = a[reconstruction.indices]
    decided = reconstruction.decided
    correct = decided & (reconstruction.a_hat == truth)
    return {
        "leakage": leakage(truth, reconstruction.a_hat, reconstruction.partition_only, decided),
        "exact_recovery": bool(reconstruction.indices.size > 0 and correct.all()),
        "attacked": int(reconstruction.indices.size),
        "correct": int(correct.sum()),
        "undecided": int((~decided).sum()),
        "queries": int(reconstruction.queries),
    }


def run(scenario: Scenario, out: str | Path | None = None, address: str | None = None, *,
        table: Table | None = None, hosts: dict | None = None) -> Result:
    """Run ``scenario``; write ``result.json``, ``transcript.jsonl`` and ``report.md`` into ``out``.

    Parameters
    ----------
    scenario : Scenario
        What to run.
    out : path-like, optional
        Run folder (created); a fresh temporary folder if omitted.
    address : str, optional
        Ray cluster to join (``ray start --head`` prints it); local Ray if omitted.
    table : Table, optional
        The data set's parsed table, if the caller holds it already (studies).
    hosts : dict, optional
        Party host actors to reuse (studies); see :class:`parties.actors.RayDeployment`.
    """
    started = time.perf_counter()
    run_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"parley-{scenario.name}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    # A failed run must not leave an older run's results behind, nor may a rerun spend an older run's budget.
    for stale in ("result.json", "report.md", LEDGER_FILE, LEDGER_FILE + "-wal", LEDGER_FILE + "-shm"):
        (run_dir / stale).unlink(missing_ok=True)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(scenario.seed).spawn(5)]
    adv_rng, obs_rng = streams[3:]
    world = _build_world(scenario, run_dir, address, streams, table, hosts)
    try:
        model_metrics = _honest_use(world)
        if scenario.threat_model == "curious-data-center":
            reconstruction = _curious_attack(world, adv_rng)
        world.transcript.close()
        overhearing = scenario.threat_model == "passive-observer" or scenario.observer is not None
        seen = read_transcript(world.transcript.path, verify=False) if overhearing else []
        if scenario.threat_model == "passive-observer":
            reconstruction = _overhear(world, ADVERSARY, scenario.attack, seen, adv_rng)
        observer_metrics: dict[str, Any] = {}
        if scenario.observer is not None:
            overheard = _overhear(world, OBSERVER, scenario.observer, seen, obs_rng)
            observer_metrics = {"observer_leakage": _score(overheard, world.split.a_audit)["leakage"],
                                "observer_revealed": int(overheard.indices.size)}
        compliance_stats = world.deployment.call(COMPLIANCE, "stats")
        ledger_summary = world.deployment.call(COMPLIANCE, "ledger_summary") if world.ledger_path else None
        world.deployment.call(COMPLIANCE, "close")
    finally:
        world.transcript.close()
        world.deployment.shutdown()

    split = world.split
    metrics: dict[str, Any] = {
        **_score(reconstruction, split.a_audit),
        "messages": world.network.messages,
        "bytes": world.network.bytes,
        "refusals": compliance_stats["refusals_sent"],
        "budget_refusals": compliance_stats["budget_refusals"],
        **_query_errors(world.transcript.path, split.a_audit, split.y_audit),
        # What the data center's name spent (honest queries and the attack), None if the protocol spends nothing.
        "epsilon_spent": compliance_stats["epsilon_spent"].get(DATA_CENTER) if world.ledger_path else None,
        "delta_spent": compliance_stats["delta_spent"].get(DATA_CENTER) if world.ledger_path else None,
        **model_metrics,
        **observer_metrics,
        **{f"attack_{k}": v for k, v in reconstruction.info.items()},
        "wall_s": round(time.perf_counter() - started, 3),
    }
    if metrics["epsilon_spent"] is not None:
        # (eps, delta)-DP caps an attacker's chance of guessing any one a_j without other knowledge:
        # success <= (e^eps + delta) / (1 + e^eps); it bounds the expectation, not one run's leakage.
        eps, delta = metrics["epsilon_spent"], metrics["delta_spent"] or 0.0
        metrics["leakage_bound"] = min(100.0, 100.0 * (1.0 + delta * math.exp(-eps)) / (1.0 + math.exp(-eps))) \
            if eps < 700 else 100.0
    record = _clean({
        "scenario": scenario.name,
        "description": scenario.description,
        "threat_model": scenario.threat_model,
        "protocol": scenario.protocol.name,
        "attack": scenario.attack.name,
        "dataset": split.table.name,
        "protected": split.table.protected,
        "groups": {"a=0": split.table.groups[0], "a=1": split.table.groups[1]},
        "seed": scenario.seed,
        "sizes": {"n_train": int(split.X_train.shape[0]), "n_audit": int(split.X_audit.shape[0]),
                  "n_features": int(split.X_train.shape[1])},
        "metrics": metrics,
        "ledger": None if ledger_summary is None else {"file": LEDGER_FILE, **ledger_summary},
        "spec": scenario.to_dict(),
        "versions": _versions(),
    })
    (run_dir / "result.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    write_report(record, run_dir)
    return Result(record=record, run_dir=run_dir)
