"""The cov-threshold flow: Alg. 1 of the distributed-fair-learning paper, then the threshold-inversion attack.

1. The data center draws m random hypotheses of its learner's family from a
   seed the flow gives it, and sends their predictions on its training set in
   one signed ``hypothesis-query`` (Alg. 1 steps 1-3).
2. The compliance party, which holds s of the training set, replies with the
   ``accept-set`` (step 4, :mod:`parley.protocols.mechanisms.covariance_threshold`).
3. The data center rebuilds the hypotheses from the same seed and learns in the
   span of the accepted ones (step 5; :meth:`DataCenter.compute`, so X and y
   never leave it). A baseline that needs s (FRR, ExponentiatedGradient) is
   fitted by the referee instead: no party holds X, y and s together.
4. The referee scores the model on the audit set (the 25 % test split) with the
   five Table II metrics, and the attack on the same answers: a curious data
   center (which may send ``probes`` extra hypotheses in its own name) or a
   passive observer reading the transcript. Leakage is scored on s of the
   training set, the set the answers are about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from parley.parties.attacks import get_attack
from parley.parties.attacks.base import AttackerView, Reconstruction
from parley.parties.attacks.threshold_inversion.inversion import AcceptAnswer
from parley.parties.learners import get_learner
from parley.parties.learners import hypotheses as hyp
from parley.parties.learners.evaluation import classification_metrics
from parley.parties.learners.fair_span import DFRR, CovThresholdLearner
from parley.parties.transcript import read_transcript
from parley.protocols.errors import ParleyError
from parley.protocols.metrics import covariance
from parley.scenarios.exchanges.base import AuditView, Exchange, Row, Utility, register_exchange
from parley.scenarios.exchanges.metric_query import score
from parley.scenarios.explain import reconstruction_note
from parley.scenarios.spec import Component
from parley.scenarios.words import models, number, requested_models

if TYPE_CHECKING:
    from parley.parties.data_center import DataCenterData
    from parley.scenarios.world import World

__all__ = ["CovThresholdExchange", "HYPOTHESES", "accept_sets", "cov_threshold_flow", "draw_predictions",
           "fit_in_span"]

NO_ACCEPT_SET = "the compliance party sent no accept-set for the hypothesis query ({refusals})"
REQUEST, REPLY = "hypothesis-query", "accept-set"
#: What a data center computation sees of the replies it received: (kind, payload) each.
Replies = list[tuple[str, dict[str, Any]]]


def _learner(name: str, params: dict[str, Any]) -> Any:  # a cov-threshold learner; fit's arguments vary by kind
    cls = get_learner(name)
    return cls(cls.Params(**params))


def draw_predictions(data: DataCenterData, replies: Replies, name: str, params: dict[str, Any],
                     seed: int) -> np.ndarray:
    """(At the data center) the (m, n_train) predictions of the learner's m random hypotheses."""
    learner = _learner(name, params)
    W = hyp.draw(learner.family, data.X_train, learner.params.hypotheses, learner.params.sigma, seed)
    return hyp.predictions(learner.family, data.X_train, W, getattr(learner.params, "gamma", None))


def _accepted(replies: Replies, query_id: str) -> np.ndarray:
    for kind, payload in replies:
        if kind == REPLY and payload.get("query_id") == query_id:
            return np.asarray(payload["accepted"], dtype=np.int64)
    raise ParleyError(NO_ACCEPT_SET.format(refusals="see the transcript"))


def fit_in_span(data: DataCenterData, replies: Replies, name: str, params: dict[str, Any], seed: int,
                query_id: str) -> dict[str, Any]:
    """(At the data center) rebuild the hypotheses, learn in the accepted span, predict (Alg. 1 step 5)."""
    learner = _learner(name, params)
    W = hyp.draw(learner.family, data.X_train, learner.params.hypotheses, learner.params.sigma, seed)
    accepted = _accepted(replies, query_id)
    learner.fit(data.X_train, data.y_train, W[:, accepted])
    return {"audit": learner.predict(data.X_audit), "train": learner.predict(data.X_train),
            "train_scores": np.asarray(learner.decision_function(data.X_train), dtype=np.float64)}


def _referee_fit(world: World, name: str, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """A baseline that trains with s (the paper's non-distributed counterparts), fitted by the referee."""
    split = world.split
    learner = _learner(name, params)
    if hasattr(learner, "random_state"):
        learner.random_state = seed % (2**31 - 1)
    learner.fit(split.X_train, split.y_train, split.a_train)
    return {"audit": learner.predict(split.X_audit), "train": learner.predict(split.X_train),
            "train_scores": np.asarray(learner.decision_function(split.X_train), dtype=np.float64)}


def _exchange(world: World, payload: dict[str, Any]) -> str:
    """Send one hypothesis-query in the data center's name; the query id of its accept-set."""
    envelope = world.data_center.request(REQUEST, payload)
    world.network.exchange(envelope)
    query_id: str = envelope.payload["query_id"]
    if not any(kind == REPLY and p.get("query_id") == query_id
               for kind, p in world.data_center.replies_received()):
        raise ParleyError(NO_ACCEPT_SET.format(refusals="see the transcript"))
    return query_id


def _answers_on_wire(world: World) -> list[AcceptAnswer]:
    """What a passive observer reconstructs from the transcript: each query's predictions and its accept set."""
    sent, answers = {}, []
    for envelope in read_transcript(world.transcript.path, verify=False):
        if envelope.kind == REQUEST:
            sent[envelope.payload["query_id"]] = envelope.payload["predictions"]
        elif envelope.kind == REPLY and envelope.payload["query_id"] in sent:
            answers.append(AcceptAnswer(np.asarray(sent[envelope.payload["query_id"]]),
                                        np.asarray(envelope.payload["accepted"]), float(envelope.payload["rho"])))
    return answers


def _answers_at_dc(world: World, predictions: dict[str, np.ndarray]) -> list[AcceptAnswer]:
    out = []
    for kind, payload in world.data_center.replies_received():
        if kind == REPLY and payload["query_id"] in predictions:
            out.append(AcceptAnswer(predictions[payload["query_id"]], np.asarray(payload["accepted"]),
                                    float(payload["rho"])))
    return out


class AcceptSetAttack(Protocol):
    """What this flow calls on its attack (one whose ``flows`` name cov-threshold, e.g. threshold-inversion)."""

    def probes(self, n: int, rho: float, n1: int | None) -> np.ndarray | None: ...

    def reconstruct(self, answers: Sequence[AcceptAnswer], n1: int | None) -> Reconstruction: ...


def cov_threshold_flow(world: World) -> dict[str, Any]:
    """Alg. 1 end to end, the learner's Table II metrics, and the threshold-inversion attack on the answers."""
    scenario, split = world.scenario, world.split
    component = scenario.learner or Component(name=DFRR.name, params=DFRR.Params())
    name, params = component.name, component.params.model_dump()
    learner_cls = cast(type[CovThresholdLearner], get_learner(name))  # every cov-threshold learner is one
    seed = int(world.rngs["flow"].integers(2**63 - 1))

    # Alg. 1 steps 1-4: the data center's hypotheses, the third party's accept set.
    predictions = world.data_center.compute(draw_predictions, name, params, seed)
    query_id = _exchange(world, {"predictions": predictions})
    accepted = _accepted(world.data_center.replies_received(), query_id)
    world.learn(f"the data center learns which {accepted.size:,} of its {predictions.shape[0]:,} hypotheses are "
                f"nearly uncorrelated with A, and will learn in their span")

    # Step 5, or the referee's baseline with s.
    if learner_cls.needs_attribute:
        out = _referee_fit(world, name, params, seed)
    else:
        out = world.data_center.compute(fit_in_span, name, params, seed, query_id)
    model = classification_metrics(out["audit"], split.y_audit, split.a_audit)
    metrics: dict[str, Any] = {
        **model,
        "train_error": float((out["train"] != split.y_train).mean()),
        # rho-fairness of the learned f on the training set (Lemma 3 bounds it by sqrt(k) ||alpha|| rho).
        "model_cov": float(covariance(out["train_scores"], split.a_train)),
        "hypotheses": int(predictions.shape[0]),
        "accepted": int(accepted.size),
        "accepted_share": float(accepted.size / predictions.shape[0]),
        # Dimension of what the data center can learn (the accepted hypotheses' predictions on the training
        # set) against that of every linear model on the features: equal means the span constrains nothing.
        "span_rank": int(np.linalg.matrix_rank(np.asarray(predictions)[accepted])) if accepted.size else 0,
        "linear_rank": int(np.linalg.matrix_rank(split.X_train)),
        "features": int(split.X_train.shape[1]),
        "learner": name,
        "learner_access": "attribute" if learner_cls.needs_attribute else "accept-set",
    }

    # The attack on the same answers (and, for a curious data center, on its own probes).
    attack = cast(AcceptSetAttack, get_attack(scenario.attack.name)(
        scenario.attack.params, AttackerView(n=int(split.a_train.size)), world.rngs["adversary"]))
    n1 = int(split.a_train.sum())  # used only if the attack's know_counts (public statistics)
    if scenario.threat_model == "curious-data-center":
        sent = {query_id: predictions}
        rho = float(world.data_center.replies_received()[-1][1]["rho"])  # stated in every reply
        probes = attack.probes(int(split.a_train.size), rho, n1)
        if probes is not None:
            sent[_exchange(world, {"predictions": probes})] = probes
        answers = _answers_at_dc(world, sent)
        world.transcript.close()
    else:
        world.transcript.close()
        answers = _answers_on_wire(world)
    reconstruction = attack.reconstruct(answers, n1)
    metrics.update(score(reconstruction, split.a_train))
    who = "the curious data center" if scenario.threat_model == "curious-data-center" else "the passive observer"
    world.learn(f"the {scenario.attack.name} attack reads the accept sets: " + reconstruction_note(
        who, reconstruction.indices, reconstruction.a_hat, reconstruction.decided, split.a_train,
        partition_only=reconstruction.partition_only, concluded=True))
    world.learn(f"the learned model ({name}): error {model['error']:.3f} and statistical-parity gap "
                f"{model['statistical_parity']:.3f} on the audit set")
    metrics.update({f"attack_{k}": v for k, v in reconstruction.info.items()})
    return metrics


def _accept_set(p: Mapping[str, Any]) -> str:
    accepted = np.asarray(p.get("accepted", []))
    return (f"an accept set: {accepted.size:,} of {models(int(p.get('m', 0)), 'hypothesis')} have covariance with A "
            f"within ρ = {number(p.get('rho', float('nan')))}")


def accept_sets(transcript: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """(predictions sent, accepted indices) of each answered hypothesis query, read off the wire."""
    sent, out = {}, []
    for env in read_transcript(transcript, verify=False):
        if env.kind == "hypothesis-query":
            sent[env.payload["query_id"]] = np.asarray(env.payload["predictions"])
        elif env.kind == "accept-set" and env.payload["query_id"] in sent:
            out.append((sent[env.payload["query_id"]], np.asarray(env.payload["accepted"], dtype=np.int64)))
    return out


def _hypothesis_accepted(transcript: Path, person: int, hypothesis: int) -> float:
    """Whether ``hypothesis`` is in the first accept set on the wire (1) or not (0)."""
    return float(hypothesis in set(accept_sets(transcript)[0][1].tolist()))


#: m of the cov-threshold exchange in ``parley compare`` (full run, quick run).
HYPOTHESES = ((50, 200), (100,))


@register_exchange
class CovThresholdExchange(Exchange):
    """Covariance-thresholded fair hypothesis selection: hypotheses out, the accept set back."""

    name = "cov-threshold"
    utility = Utility("error", "test accuracy of the model learned in the accepted span", True,
                      short="accuracy", fairness_key="statistical_parity",
                      fairness_label="|SP| of the learned model on the audit set", transform="one-minus",
                      use="learning a fair model (accept sets)")
    sizes = ({"audit_size": 1500, "train_size": 4500}, {"audit_size": 300, "train_size": 900})
    # the audit's attack: its view is read from the wire, the attack only has to be cheap
    audit = AuditView(lambda person: {"name": "threshold-inversion", "decoder": "lp", "rounds": 0},
                      _hypothesis_accepted,
                      "accepted (1) or not (0)", about="train", threat_model="passive-observer")

    def run(self, world: World) -> dict[str, Any]:
        """Alg. 1 end to end, the learner's metrics, and the threshold-inversion attack on the answers."""
        return cov_threshold_flow(world)

    def describe(self, kind: str, payload: Mapping[str, Any]) -> str | None:
        """The hypothesis query and its accept set."""
        if kind == "hypothesis-query":
            return requested_models(payload, "a hypothesis query", "hypothesis")
        return _accept_set(payload) if kind == "accept-set" else None

    def rows(self, quick: bool) -> list[Row]:
        """cov-threshold at rho = 0.1 with DFRR over each m."""
        return [Row(f"cov-threshold m={m}", {"name": "cov-threshold", "rho": 0.1}, self.name,
                    {"name": "dfrr", "hypotheses": m}) for m in HYPOTHESES[1 if quick else 0]]
