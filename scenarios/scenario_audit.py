"""Whole-scenario privacy audit: an empirical lower bound on epsilon of a full run, parties and wire included.

:func:`protocols.privacy_audit.audit_epsilon` bounds the epsilon of a mechanism
from below with Clopper-Pearson intervals (Ding et al., CCS 2018, Sec. 4). Here
the mechanism is a whole scenario: the data center trains its model, the
compliance party answers under the protocol through signed envelopes, the ledger
charges the budget. The split is fixed once; its neighbour differs in one
person's protected attribute (Def. 4.1 of the query-leakage paper); each audit
run is the scenario under a fresh seed on one of the two. The pair is chosen where
a metric answer moves most (:func:`worst_case_attributes`): DP must hold for every
pair, and a loose pair only weakens the bound. The output audited is
the adversary's view, the transcript: the answer (metric-query protocols, to a
query on a model accepting only the audited person) or the released attribute
(rr-release) about that person, read from the wire. Anything the adversary
derives from its view is post-processing of it, so a bound on the view bounds
every attack's guess.

With confidence ``1 - alpha`` the bound of an epsilon-DP scenario is at or below
the epsilon the ledger charged; a raw protocol's bound is as large as the number
of runs allows (``ln`` of the ratio of two Clopper-Pearson limits).
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from parties.adversary import exchanges_from
from parties.transcript import iter_transcript, read_transcript
from protocols import get_protocol
from protocols.errors import ConfigError, ParleyError
from protocols.privacy_audit import audit_epsilon
from protocols.randomized_response import ATTRIBUTE_RELEASE

from .datasets import load_split
from .runner import run
from .spec import Scenario

__all__ = ["AUDITABLE_FLOWS", "ScenarioAudit", "audit_scenario", "audit_spec", "worst_case_attributes",
           "NOT_AUDITABLE"]

NOT_AUDITABLE = ("protocol {name!r} runs a {flow!r} exchange; the whole-scenario audit reads the answers of "
                 "metric-query and rr-release exchanges")
#: The data center's model in audit runs: the audited view does not depend on it, hundreds of fits do cost.
AUDIT_MODEL = {"estimator": "sklearn.naive_bayes.GaussianNB", "params": {}}
#: The flows whose wire carries a per-person output the audit can read.
AUDITABLE_FLOWS = ("metric-query", "rr-release")


@dataclass(frozen=True)
class ScenarioAudit:
    """The audit of one protocol configuration: the empirical bound beside the claim."""

    protocol: str
    params: dict[str, Any]
    claimed_epsilon: float | None  # what the ledger charged the adversary's view (None: no DP claim)
    claimed_delta: float | None
    epsilon_lower: float
    confidence: float
    runs: int  # per data set and per half (selection, estimation)
    person: int
    p: float
    p_prime: float

    def row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def audit_spec(protocol: dict[str, Any], dataset: dict[str, Any], person: int = 0) -> dict[str, Any]:
    """The scenario (as a dict) whose adversary's view is audited for ``protocol``.

    Metric-query protocols: one single-query probe on a model accepting only ``person``, no honest
    queries (so the view holds exactly one answer about the person). rr-release: the one release of the
    audit set. Backend local and a Gaussian naive Bayes base model: the audit runs hundreds of short
    scenarios, and the probe's answer does not depend on the base model.
    """
    flow = get_protocol(protocol["name"]).flow
    if flow == "metric-query":
        attack = {"name": "single-query", "targets": [person], "batch": True}
    elif flow == "rr-release":
        attack = {"name": "rr-bayes"}
    else:
        raise ConfigError(NOT_AUDITABLE.format(name=protocol["name"], flow=flow))
    return {"name": f"audit-{protocol['name']}", "dataset": dataset, "protocol": protocol, "attack": attack,
            "audit_metrics": [], "backend": "local", "model": AUDIT_MODEL}


def _view_statistic(transcript: Path, flow: str, person: int) -> float:
    """The audited person's output as the adversary reads it off the wire."""
    if flow == "metric-query":
        answers = [e.values for e in exchanges_from(iter_transcript(transcript, verify=False))]
        return float(answers[0][0])
    releases = [env.payload for env in read_transcript(transcript, verify=False) if env.kind == ATTRIBUTE_RELEASE]
    return float(np.asarray(releases[0]["z"])[person])


def _claim(scenario: Scenario, split: Any, person: int) -> tuple[float | None, float | None]:
    """Epsilon and delta the ledger charges for the audited view (one run, seed 0)."""
    with tempfile.TemporaryDirectory(prefix="parley-audit-") as tmp:
        try:
            result = run(scenario, out=tmp, split=split)
            metrics = result.metrics
        except ParleyError:
            return _claim_from_ledger(Path(tmp))
    return metrics.get("epsilon_spent"), metrics.get("delta_spent")


def _claim_from_ledger(run_dir: Path) -> tuple[float | None, float | None]:
    """What the run's ledger charged the data center (the attack may have given up after the answers)."""
    from parties.ledger import Ledger

    from .world import DATA_CENTER, LEDGER_FILE

    path = run_dir / LEDGER_FILE
    if not path.is_file():
        return None, None
    with Ledger(path) as ledger:
        spent = ledger.spent(DATA_CENTER)
    return spent.epsilon, spent.delta


def worst_case_attributes(n: int, person: int) -> np.ndarray:
    """A protected attribute with two members in group 0, ``person`` one of them, everyone else in group 1.

    DP must hold for every pair of neighbouring audit sets, so the audit may choose the pair. Flipping
    ``person`` here moves the answer to a query on a model accepting only them from -1/2 to about 1/n:
    the largest move of one SP answer, where Thm. 5's sensitivity m/2 + m/(n-1) is nearly attained.
    """
    a = np.ones(n, dtype=np.int64)
    a[person] = 0
    a[(person + 1) % n] = 0
    return a


def audit_scenario(protocol: dict[str, Any], dataset: dict[str, Any], runs: int, alpha: float, seed: int,
                   person: int = 0, on_run: Callable[[], None] | None = None,
                   worst_case: bool = True) -> ScenarioAudit:
    """Lower-bound the epsilon of a whole scenario under ``protocol`` from the adversary's view.

    Parameters
    ----------
    protocol : dict
        The protocol table (``{"name": "laplace", "epsilon": 1.0}``).
    dataset : dict
        The data set table; keep ``audit_size`` and ``train_size`` small, every run trains the base model.
    runs : int
        Scenario runs per data set and per half; the audit costs ``4 * runs`` runs.
    alpha : float
        1 - confidence of the bound.
    seed : int
        Fixes the split, the neighbour and every run's seed.
    person : int
        The audit-set index whose protected attribute the neighbour flips.
    on_run : callable, optional
        Called after each scenario run (progress).
    worst_case : bool
        Audit at the neighbouring pair :func:`worst_case_attributes` (default), where a metric answer moves
        most; False keeps the data set's own attribute.
    """
    spec = audit_spec(protocol, dataset, person)
    scenario = Scenario.from_dict(spec)
    flow = get_protocol(scenario.protocol.name).flow
    split = load_split(scenario.dataset, np.random.default_rng(seed), None)
    a = worst_case_attributes(split.a_audit.size, person) if worst_case else split.a_audit.astype(np.int64)
    split = dataclasses.replace(split, a_audit=a.astype(split.a_audit.dtype))
    a_prime = a.copy()
    a_prime[person] = 1 - a_prime[person]
    claimed_eps, claimed_delta = _claim(scenario, split, person)
    seeds = np.random.default_rng([seed, 1])

    def mechanism(attr: np.ndarray, _rng: np.random.Generator) -> np.ndarray:
        neighbour = dataclasses.replace(split, a_audit=attr.astype(split.a_audit.dtype))
        run_seed = int(seeds.integers(2**31 - 1))
        with tempfile.TemporaryDirectory(prefix="parley-audit-") as tmp:
            try:
                run(scenario.with_values({"seed": run_seed}), out=tmp, split=neighbour)
            except ParleyError:
                pass  # an attack that gives up (noisy answers) still saw the answers: the view is on the wire
            value = _view_statistic(Path(tmp) / "transcript.jsonl", flow, person)
        if on_run is not None:
            on_run()
        return np.array([value])

    result = audit_epsilon(mechanism, a, a_prime, runs=runs, alpha=alpha, rng=np.random.default_rng(seed),
                           delta=claimed_delta or 0.0)
    return ScenarioAudit(protocol=scenario.protocol.name, params=scenario.protocol.to_dict(),
                         claimed_epsilon=claimed_eps, claimed_delta=claimed_delta,
                         epsilon_lower=result.epsilon_lower, confidence=result.confidence, runs=runs, person=person,
                         p=result.p, p_prime=result.p_prime)
