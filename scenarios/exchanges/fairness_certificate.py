"""The fairness-certificate flow: a fair model is certified, and a black-box attacker exploits the certificate.

Who holds what (threat model ``black-box-auxiliary``, Ferry et al. Sec. III-A, IV-A):

* the **model owner** trains the scenario's fair learner (``[learner]``, e.g.
  fairlearn's ExponentiatedGradient) on the training set *with* its A, as any
  fair learner must. The referee plays it: it hands A of the training set to the
  learner only, and the learner is discarded after predicting;
* the **data center** deploys the model and asks the **compliance party**, which
  holds A of the training set (``holds = ("audit", "train")``), for a signed
  ``fairness-certificate`` of the model's predictions on that set;
* the certificate is **published**: the adversary reads it from the transcript,
  every signature verified. It also holds the training set's features and labels,
  the model's predictions on it (black-box queries) and an **attack set**
  (features, labels, A, and the model's predictions): the data set's audit rows,
  drawn disjoint from the training rows from the same distribution
  (``dataset.audit_size`` sets its size).

The referee scores the baseline guess and the corrected one against A of the
training set, which no party handed to the adversary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from parley.parties.attacks import AttackerView, get_attack, leakage
from parley.parties.attacks.reconstruction_correction.attack import BlackBoxKnowledge, CorrectionOutcome
from parley.parties.learners import get_learner
from parley.parties.transcript import read_transcript
from parley.protocols.errors import ConfigError
from parley.protocols.group_gaps import unfairness
from parley.scenarios.exchanges.base import Exchange, Row, Utility, register_exchange
from parley.scenarios.run_parts import COMPLIANCE
from parley.scenarios.words import metric_name, number, people, requested_models

if TYPE_CHECKING:
    from parley.scenarios.world import World

__all__ = ["FairnessCertificateExchange", "fairness_certificate_flow", "published_certificate", "NO_LEARNER",
           "NOT_BLACK_BOX"]

NO_LEARNER = ("the fairness-certificate flow needs a [learner] table naming the fair target "
              "(e.g. exponentiated-gradient)")
NOT_BLACK_BOX = "the fairness-certificate flow runs under threat_model 'black-box-auxiliary', not {threat!r}"


def published_certificate(world: World) -> dict[str, Any] | None:
    """The last certificate the compliance party signed, read from the verified transcript.

    None if it refused, or if its priced tolerance decision was "not certified" (nothing is
    published then: the decision itself went only to the data center, debited in the ledger).
    """
    certificate = None
    for envelope in read_transcript(world.transcript.path, verify=True):
        if envelope.kind == "fairness-certificate" and envelope.sender == COMPLIANCE:
            certificate = dict(envelope.payload)
    if certificate is not None and certificate.get("certified") is False:
        return None
    return certificate


class FairTarget(Protocol):
    """What this flow calls on its learner (one whose ``flows`` name fairness-certificate)."""

    def fit(self, X: np.ndarray, y: np.ndarray, a: np.ndarray, seed: int = 0) -> Any: ...

    def predict(self, X: np.ndarray, a: np.ndarray | None = None, seed: int = 0) -> np.ndarray: ...


class BlackBoxAttack(Protocol):
    """What this flow calls on its attack (one whose ``flows`` name fairness-certificate)."""

    def reconstruct(self, knowledge: BlackBoxKnowledge) -> CorrectionOutcome: ...


def _train_target(world: World) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The model owner fits the fair learner with A; predictions on the training and attack sets."""
    scenario, split = world.scenario, world.split
    assert scenario.learner is not None  # the flow checked
    learner = cast(FairTarget, get_learner(scenario.learner.name)(scenario.learner.params))
    seed = int(world.rngs["flow"].integers(2**31 - 1))
    learner.fit(split.X_train, split.y_train, split.a_train, seed)
    yhat_train = learner.predict(split.X_train, split.a_train, seed)
    yhat_attack = learner.predict(split.X_audit, split.a_audit, seed + 1)
    metrics = {"target_train_accuracy": float((yhat_train == split.y_train).mean()),
               "target_attack_accuracy": float((yhat_attack == split.y_audit).mean())}
    for metric in ("sp", "pe", "eo", "eodds"):
        metrics[f"target_train_{metric}"] = unfairness(metric, yhat_train, split.a_train, split.y_train)
    return yhat_train, yhat_attack, metrics


def _explained(certificate: dict[str, Any] | None, baseline: tuple[float, float], corrected: tuple[float, float],
               changed: Any) -> str:
    """What the black-box attacker learned from the published certificate ((leakage %, accuracy) pairs)."""
    if certificate is None:
        return (f"no certificate was published; the attacker's guess from its attack set alone reaches leakage "
                f"{baseline[0]:.1f} % (accuracy {100 * baseline[1]:.1f} %)")
    return (f"the certificate is public: the attacker's guess of the training set's A (a model trained on its attack "
            f"set) reaches leakage {baseline[0]:.1f} % (accuracy {100 * baseline[1]:.1f} %); corrected to agree with "
            f"the certified fairness ({changed} guesses changed) it reaches {corrected[0]:.1f} % "
            f"(accuracy {100 * corrected[1]:.1f} %)")


def fairness_certificate_flow(world: World) -> dict[str, Any]:
    """Train the fair target, certify it over the wire, run the attack, score baseline and corrected."""
    scenario, split = world.scenario, world.split
    if scenario.learner is None:
        raise ConfigError(NO_LEARNER)
    if scenario.threat_model != "black-box-auxiliary":
        raise ConfigError(NOT_BLACK_BOX.format(threat=scenario.threat_model))
    yhat_train, yhat_attack, target_metrics = _train_target(world)
    request = world.data_center.request("certificate-request",
                                    {"predictions": yhat_train.astype(np.float64)[None, :]})
    world.network.exchange(request)
    world.transcript.close()
    certificate = published_certificate(world)
    attack = cast(BlackBoxAttack, get_attack(scenario.attack.name)(
        scenario.attack.params, AttackerView(n=int(split.y_train.size)), world.rngs["adversary"]))
    outcome = attack.reconstruct(BlackBoxKnowledge(
        X_train=split.X_train, y_train=split.y_train, yhat_train=yhat_train, X_attack=split.X_audit,
        y_attack=split.y_audit, a_attack=split.a_audit, yhat_attack=yhat_attack, certificate=certificate))
    truth = split.a_train
    constraint = outcome.constraint
    world.learn(_explained(certificate, (leakage(truth, outcome.baseline), float((outcome.baseline == truth).mean())),
                           (leakage(truth, outcome.corrected), float((outcome.corrected == truth).mean())),
                           outcome.changed))
    return {
        "leakage": leakage(truth, outcome.corrected),
        "baseline_leakage": leakage(truth, outcome.baseline),
        "baseline_accuracy": float((outcome.baseline == truth).mean()),
        "corrected_accuracy": float((outcome.corrected == truth).mean()),
        "improvement": float((outcome.corrected == truth).mean() - (outcome.baseline == truth).mean()),
        "solver_status": outcome.status,
        "solve_s": outcome.solve_s,
        "changed": outcome.changed,
        "changed_correctly": int(((outcome.corrected != outcome.baseline) & (outcome.corrected == truth)).sum()),
        "exponent": outcome.exponent,
        "certified": certificate is not None,
        "certificate_value": None if certificate is None else certificate.get("value", certificate.get("tolerance")),
        "constraint_metric": None if constraint is None else constraint.metric,
        "constraint_tolerance": None if constraint is None else constraint.tolerance,
        "attacked": int(truth.size),
        "correct": int((outcome.corrected == truth).sum()),
        "undecided": 0,
        "queries": 1,  # the one certificate request
        "attack_set": int(split.y_audit.size),
        **target_metrics,
        **{f"attack_{k}": v for k, v in outcome.info.items() if k != "moves"},
    }


def _certificate(p: Mapping[str, Any]) -> str:
    metric, n = metric_name(p.get("metric", "?")), int(p.get("n", 0))
    if "value" in p:
        rounded = f", rounded up to {p['decimals']} decimals" if p.get("decimals") is not None else ""
        value = number(p["value"])
        return f"a fairness certificate: {metric} = {value} over {people(n)} (the measured value{rounded})"
    tolerance = number(p.get("tolerance", float("nan")))
    priced = f" (a noisy decision, ε = {number(p['epsilon'])} debited)" if "epsilon" in p else ""
    if p.get("certified") is False:
        return f"no fairness certificate: {metric} was not found within {tolerance} over {people(n)}{priced}"
    return f"a fairness certificate: {metric} is within {tolerance} over {people(n)}{priced}"


@register_exchange
class FairnessCertificateExchange(Exchange):
    """A model's fairness certified by the compliance party, and what the public certificate gives an attacker."""

    name = "fairness-certificate"
    utility = Utility("target_train_accuracy", "training accuracy of the certified fair model", True,
                      short="accuracy", fairness_key="target_train_sp",
                      fairness_label="|SP| of the certified model on its training set", use="certifying a fair model")
    sizes = ({"audit_size": 3000, "train_size": 6000}, {"audit_size": 600, "train_size": 1200})
    not_audited = ("not audited (no DP claim): every audit run retrains the certified fair model "
                   "(exponentiated gradient), too costly for the runs an audit needs")

    def run(self, world: World) -> dict[str, Any]:
        """Train the fair target, certify it over the wire, run the attack, score baseline and corrected."""
        return fairness_certificate_flow(world)

    def describe(self, kind: str, payload: Mapping[str, Any]) -> str | None:
        """The request and the certificate."""
        if kind == "certificate-request":
            return requested_models(payload, "a request to certify a model's fairness")
        return _certificate(payload) if kind == "fairness-certificate" else None

    def rows(self, quick: bool) -> list[Row]:
        """The certificate of an exponentiated-gradient model, its measured value released."""
        return [Row("fairness-certificate", {"name": "fairness-certificate", "metric": "sp", "release": "value"},
                    self.name, {"name": "exponentiated-gradient", "metric": "sp", "tolerance": 0.0})]
