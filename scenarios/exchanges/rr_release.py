"""The rr-release flow: randomized-response releases, auditing and fair learning on them, and the adversary.

Mozannar, Ohannessian & Srebro, ICML 2020 (the private-demographics paper).

1. The data center trains its base model and asks the compliance party for a
   release of the audit set's A (``release-request`` -> ``attribute-release``),
   and, when the scenario names a ``[learner]``, of the training set's A too.
   Each release is eps-LDP and charged to the data center in the ledger.
2. Auditing (Sec. 4): at the data center, the debiased and the naive
   estimates of its base model's discrimination under every notion of Def. 1,
   from the audit set's release; the referee puts the true value beside them.
3. Learning (Sec. 5): the learner runs inside the data center
   (:meth:`parley.parties.data_center.DataCenter.compute`); the referee scores the
   step-1 and the two-step predictors on the audit set against the true A.
   With withheld entries (``report_probability`` < 1, Sec. 6) the learner
   ``partial-reporting`` solves the two-dataset Lagrangian (14) instead; the
   referee scores it (as ``step1``) beside its baselines.
4. The adversary (``rr-bayes``) reads the release (the larger set released: the
   training set when there is one) as the curious data center, or from the
   transcript as a passive observer; with ``auxiliary`` rows it also holds X
   and A of that many individuals of the *other* set and a model of A from X.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parley.parties.attacks import AttackerView, get_attack, leakage
from parley.parties.confidential import is_sealed
from parley.parties.handles import ReleaseAdversaryHandle
from parley.parties.learners import get_learner
from parley.parties.learners.individual_reporting import individual_reporting_at_data_center
from parley.parties.learners.partial_reporting import partial_reporting_at_data_center
from parley.parties.learners.proxy_fair import proxy_fair_at_data_center
from parley.parties.learners.two_step import release_of, two_step_at_data_center
from parley.parties.learners.z_post_processing import z_post_processing_at_data_center
from parley.parties.transcript import read_transcript
from parley.protocols.errors import InternalError
from parley.protocols.estimators.rr_estimators import (
    FAIRNESS_NOTIONS,
    discrimination,
    group_rates,
    rr_keep_probability,
)
from parley.protocols.mechanisms.randomized_response import ATTRIBUTE_RELEASE, RELEASE_REQUEST
from parley.scenarios.exchanges.base import EPSILONS, AuditView, Exchange, Row, Utility, register_exchange
from parley.scenarios.run_parts import ADVERSARY
from parley.scenarios.words import number, set_name

if TYPE_CHECKING:
    from parley.scenarios.world import World

__all__ = ["RrReleaseExchange", "fairness_of", "rr_release_flow"]


def _audit_base_model(data: Any, replies: list[tuple[str, dict[str, Any]]],
                      predictions: np.ndarray) -> dict[str, float]:
    """The data center's audit of its own base model (debiased and naive gaps for every notion)."""
    release = release_of(replies, "audit", allow_withheld=True)   # withheld rows are left out (Prop. 2)
    z, eps, k = np.asarray(release["z"]), float(release["epsilon"]), int(release["groups"])
    out: dict[str, float] = {}
    for notion in FAIRNESS_NOTIONS:
        rates = group_rates(notion, predictions, data.y_audit, z, eps, k)
        out[f"audit_{notion}_debiased"] = rates.debiased_gap
        out[f"audit_{notion}_naive"] = rates.naive_gap
        # Signed gaps (last group minus group 0, last condition row): the max |gap| above is biased upwards
        # by noise whatever the estimator; the signed gaps show the estimators' own bias.
        for label, table in (("debiased", rates.debiased), ("naive", rates.naive)):
            out[f"audit_{notion}_signed_{label}"] = float(table[-1, -1] - table[-1, 0])
    return out


def fairness_of(predictions: np.ndarray, y: np.ndarray, a: np.ndarray, notion: str) -> float:
    """The referee's truth: disc (max group gap) of ``notion`` with the true A (eps -> infinity, no noise)."""
    groups = int(max(a.max(), 1)) + 1
    return discrimination(group_rates(notion, predictions, y, a, 700.0, groups).naive)


def _accuracy(soft: np.ndarray, y: np.ndarray) -> float:
    """Expected accuracy of a randomized predictor with P(Y-hat = 1 | x) = ``soft``."""
    return float(np.mean(np.where(y == 1, soft, 1.0 - soft)))


def _release(world: World, name: str) -> None:
    world.network.exchange(world.data_center.request(RELEASE_REQUEST, {"set": name}))


def _released_on_wire(world: World) -> dict[str, dict[str, Any]]:
    """What a passive observer reads: the attribute-release payloads in the transcript, by set."""
    return {env.payload["set"]: env.payload for env in read_transcript(world.transcript.path, verify=False)
            if env.kind == ATTRIBUTE_RELEASE and not is_sealed(env.payload)}  # a sealed release tells it nothing


def _attack(world: World, releases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The adversary reads the release of the training set (else the audit set); the referee scores it."""
    split, component = world.split, world.scenario.attack
    if not releases:  # nothing readable (a confidential channel seen from the wire): nothing to infer from
        return {"attack_target": None, "leakage": float("nan"), "exact_recovery": False, "attacked": 0, "correct": 0,
                "undecided": 0, "queries": 0}
    target = "train" if "train" in releases else "audit"
    release = releases[target]
    a_true, X = (split.a_train, split.X_train) if target == "train" else (split.a_audit, split.X_audit)
    X_aux = a_aux = None
    aux = int(getattr(component.params, "auxiliary", 0))
    if aux:  # auxiliary data: X and A of individuals of the other set (never the targets)
        X_other, a_other = (split.X_audit, split.a_audit) if target == "train" else (split.X_train, split.a_train)
        rows = world.rngs["adversary"].permutation(a_other.shape[0])[:aux]
        X_aux, a_aux = X_other[rows], a_other[rows]
    attack_cls = get_attack(component.name)
    world.deployment.add(ADVERSARY, attack_cls, component.params, AttackerView(n=int(a_true.shape[0])),
                         world.rngs["adversary"])
    eps, k = float(release["epsilon"]), int(release["groups"])
    reconstruction = ReleaseAdversaryHandle(world.deployment, ADVERSARY).infer(
        np.asarray(release["z"]), eps, k, X if aux else None, X_aux, a_aux)
    truth = a_true[reconstruction.indices]
    correct = int(np.count_nonzero(reconstruction.a_hat == truth))
    out: dict[str, Any] = {
        "attack_target": target,
        "leakage": leakage(truth, reconstruction.a_hat),
        "exact_recovery": bool(truth.size > 0 and correct == truth.size),
        "attacked": int(reconstruction.indices.size),
        "correct": correct,
        "undecided": 0,
        # The eps-LDP cap on one release's balanced accuracy (what Z alone can tell about anyone).
        # For k groups it is 100 pi = 100 e^eps / (k - 1 + e^eps) (the k-class form of the same argument).
        "leakage_bound_release": 100.0 * rr_keep_probability(eps, k),
        "queries": len(releases),
    }
    features_only = ReleaseAdversaryHandle(world.deployment, ADVERSARY).features_only_guess()
    if features_only is not None:
        out["leakage_features_only"] = leakage(a_true, features_only)
    out.update({f"attack_{key}": value for key, value in reconstruction.info.items()})
    return out


def _parties(scenario: Any) -> tuple[str, ...]:
    """The adversary, unless it is a passive observer of a confidential channel (it then reads nothing).

    A curious data center reads the releases it received, decrypted, whatever the channel.
    """
    return () if scenario.confidential and scenario.threat_model == "passive-observer" else (ADVERSARY,)


def rr_release_flow(world: World) -> dict[str, Any]:
    """Releases, the data center's audit and learning, the adversary's inference; scored by the referee."""
    scenario, split = world.scenario, world.split
    metrics: dict[str, Any] = world.data_center.train()
    sets = ["train", "audit"] if scenario.learner is not None else ["audit"]
    after: dict[str, int] = {}  # the message number of each set's release (or refusal)
    for name in sets:
        _release(world, name)
        after[name] = world.network.messages
    base = world.data_center.view().require("base_predictions").astype(np.float64)
    metrics.update(world.data_center.compute(_audit_base_model, base))
    for notion in FAIRNESS_NOTIONS:
        metrics[f"audit_{notion}_true"] = fairness_of(base, split.y_audit, split.a_audit, notion)
        truth = group_rates(notion, base, split.y_audit, split.a_audit, 700.0, int(split.a_audit.max()) + 1).naive
        metrics[f"audit_{notion}_signed_true"] = float(truth[-1, -1] - truth[-1, 0])
        for label in ("debiased", "naive"):  # the referee's verdict on each estimator
            metrics[f"audit_{notion}_error_{label}"] = (metrics[f"audit_{notion}_signed_{label}"]
                                                        - metrics[f"audit_{notion}_signed_true"])
    world.learn(f"from this release the data center estimates its base model's demographic-parity gap at "
                f"{metrics['audit_demographic_parity_signed_debiased']:+.4f} (debiased) or "
                f"{metrics['audit_demographic_parity_signed_naive']:+.4f} (naive); the true gap, which only the "
                f"referee knows, is {metrics['audit_demographic_parity_signed_true']:+.4f}", after=after["audit"])
    if scenario.learner is not None:
        learner = get_learner(scenario.learner.name)
        seed = int(world.rngs["flow"].integers(2**31 - 1))
        fitted = world.data_center.compute(_learn_with, learner.name, scenario.learner.params,
                                       seed)
        metrics.update(_score_learning(fitted, split.y_audit, split.a_audit, scenario.learner.params.constraint))
        world.learn(_learning_sentence(learner.name, scenario.learner.params.constraint, metrics),
                    after=max(after.values()))
    world.transcript.close()
    if scenario.threat_model == "passive-observer":
        releases = _released_on_wire(world)
    else:  # the data center itself (curious, or holding auxiliary data) reads what it was given
        releases = {p["set"]: p for kind, p in world.data_center.replies_received()
                    if kind == ATTRIBUTE_RELEASE}
    metrics.update(_attack(world, releases))
    _explain_attack(world, metrics, after.get(metrics["attack_target"], world.network.messages))
    return metrics


def _explain_attack(world: World, metrics: dict[str, Any], after: int) -> None:
    """The Bayes adversary's leakage from the release it read, beside the release's eps-LDP cap."""
    if metrics["attack_target"] is None:
        world.learn("the releases are sealed: the observer sees only their sizes and has nothing to infer A from")
        return
    who = {"passive-observer": "a passive observer reading it on the wire",
           "black-box-auxiliary": "the data center, with auxiliary data"}.get(world.scenario.threat_model,
                                                                             "the curious data center")
    sentence = (f"the Bayes adversary ({who}) guesses the {set_name(metrics['attack_target'])} set's A "
                "from this release with "
                f"leakage {metrics['leakage']:.1f} %; the release's ε-LDP cap is "
                f"{metrics['leakage_bound_release']:.1f} %")
    if "leakage_features_only" in metrics:
        sentence += f" (from the features alone it would reach {metrics['leakage_features_only']:.1f} %)"
    world.learn(sentence, after=after)


def _score_learning(fitted: dict[str, Any], y: np.ndarray, a: np.ndarray, notion: str) -> dict[str, Any]:
    """The referee's verdict on every predictor the learner returned: disc w.r.t. the true A and accuracy.

    ``two-step`` returns ``step1`` and ``two_step`` (Sec. 5); ``partial-reporting`` returns ``learner``
    (the modified step 1 of Sec. 6, reported as ``step1``) and its baselines ``reporters_only`` and
    ``unconstrained``.
    """
    out: dict[str, Any] = {}
    labels = {"step1": "step1", "two_step": "two_step", "learner": "step1", "reporters_only": "reporters_only",
              "unconstrained": "unconstrained", "uncorrected": "uncorrected",
              "debiased": "debiased_post"}
    for key, label in labels.items():
        if key in fitted:
            out[f"{label}_disc"] = fairness_of(fitted[key], y, a, notion)
            out[f"{label}_accuracy"] = _accuracy(fitted[key], y)
    if "two_step" in fitted:
        # How far the two-step predictor is from a constant: its mean positive rate, and the spread of the
        # LP (13) solution p[y_hat, z] (0 means Y~ ignores both Y-hat and Z, i.e. a constant predictor).
        out["two_step_positive_rate"] = float(np.mean(fitted["two_step"]))
        if "p" in fitted:
            p = np.asarray(fitted["p"], dtype=np.float64)
            out["two_step_p_spread"] = float(p.max() - p.min())
    for key in ("step1_disc_estimate", "step1_disc_naive", "two_step_disc_released"):
        if key in fitted:
            out[key] = fitted[key]
    for key in ("learner", "unconstrained"):   # proxy-fair: the data center's audits by (15) and Sec. 4
        for how in ("proxy_xy", "proxy_x", "debiased"):
            if f"{key}_eo_{how}" in fitted:
                out[f"{'step1' if key == 'learner' else key}_eo_{how}"] = fitted[f"{key}_eo_{how}"]
    if "learner_disc_estimate" in fitted:
        out["step1_disc_estimate"] = fitted["learner_disc_estimate"]
        out["step1_disc_naive"] = fitted["learner_disc_naive"]
    if "reporters" in fitted:
        out["reporters_train"] = fitted["reporters"]
    return out


def _learning_sentence(name: str, notion: str, metrics: dict[str, Any]) -> str:
    """What the learner's predictor achieves against the true A, beside the first step or unconstrained model."""
    final = "two_step" if "two_step_disc" in metrics else "step1"
    sentence = (f"the data center fits the {name} learner on the releases: accuracy "
                f"{metrics[final + '_accuracy']:.3f}, {notion} gap {metrics[final + '_disc']:.4f} against the true A")
    other = "step1" if final == "two_step" else "unconstrained"
    if f"{other}_disc" in metrics:
        label = "the first step alone" if other == "step1" else "an unconstrained model"
        sentence += f" ({label}: {metrics[other + '_accuracy']:.3f}, {metrics[other + '_disc']:.4f})"
    return sentence


def _learn_with(data: Any, replies: list[tuple[str, dict[str, Any]]], learner_name: str, params: Any,
                seed: int) -> dict[str, Any]:
    """Inside the data center: fit the named learner on its releases and predict on the audit set.

    ``two-step`` (Sec. 5) needs Z of everyone and refuses a release with withheld entries;
    ``partial-reporting`` (Sec. 6, Lagrangian (14)) takes them.
    """
    if learner_name == "two-step":
        return two_step_at_data_center(data, replies, params, seed)
    if learner_name == "partial-reporting":
        return partial_reporting_at_data_center(data, replies, params, seed)
    if learner_name == "individual-reporting":
        return individual_reporting_at_data_center(data, replies, params, seed)
    if learner_name == "z-post-processing":
        return z_post_processing_at_data_center(data, replies, params, seed)
    if learner_name == "proxy-fair":
        return proxy_fair_at_data_center(data, replies, params, seed)
    raise InternalError(f"the rr-release flow has no way to run learner {learner_name!r}")


def _attribute_release(p: Mapping[str, Any]) -> str:
    z = np.asarray(p.get("z", []))
    text = f"a randomized-response release of {z.size:,} values of A (the {set_name(p.get('set', '?'))} set)"
    if p.get("epsilon") is not None:
        text += f" at ε = {number(p['epsilon'])}"
    if p.get("pi") is not None:
        text += f": each value kept with probability {float(p['pi']):.2f}"
    return text


def _released_value(transcript: Path, person: int, hypothesis: int) -> float:
    """The person's released value in the audit set's release, as the wire holds it."""
    releases = [env.payload for env in read_transcript(transcript, verify=False)
                if env.kind == ATTRIBUTE_RELEASE and env.payload.get("set") == "audit"]
    return float(np.asarray(releases[0]["z"])[person])


@register_exchange
class RrReleaseExchange(Exchange):
    """A randomized-response release of A, the learning on it, and the adversary's inference."""

    name = "rr-release"
    utility = Utility("two_step_accuracy", "test accuracy of the two-step fair model learned on the release", True,
                      short="accuracy", fairness_key="two_step_disc",
                      fairness_label="equalized-odds violation of that model (true A)",
                      use="learning and auditing on released A")
    sizes = ({"audit_size": 2000, "train_size": 6000}, {"audit_size": 600, "train_size": 1800})
    audit = AuditView(lambda person: {"name": "rr-bayes"}, _released_value, "released attribute")
    confidential = True

    def parties(self, scenario: Any) -> tuple[str, ...]:
        """The adversary, unless a passive observer of a confidential channel (see ``_parties``)."""
        return _parties(scenario)

    def run(self, world: World) -> dict[str, Any]:
        """Releases, the data center's audit and learning, the adversary's inference; scored by the referee."""
        return rr_release_flow(world)

    def describe(self, kind: str, payload: Mapping[str, Any]) -> str | None:
        """The request and the release."""
        if kind == RELEASE_REQUEST:
            return f"a request for a randomized-response release of the {set_name(payload.get('set', '?'))} set's A"
        return _attribute_release(payload) if kind == ATTRIBUTE_RELEASE else None

    def rows(self, quick: bool) -> list[Row]:
        """rr-release at each epsilon, learned on with the two-step learner."""
        return [Row(f"rr-release ε={eps:g}", {"name": "rr-release", "epsilon": eps}, self.name, {"name": "two-step"})
                for eps in EPSILONS[1 if quick else 0]]
