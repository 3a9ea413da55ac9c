"""The metric-query flow: honest fairness queries, then the adversary's probes, then observers.

The data center trains its base model and asks how fair it is; in the curious
data-center threat model it then defects and the adversary queries in its name
until its attack concludes; a passive observer (the threat model's adversary,
or an extra ``observer``) attacks the transcript afterwards. The referee
scores every reconstruction against A of the audit set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parley.parties.adversary import Adversary, exchanges_from
from parley.parties.attacks import Attack, AttackerView, Reconstruction, get_attack, leakage
from parley.parties.attacks.curious_compliance import compliance_view_accuracy
from parley.parties.confidential import is_sealed
from parley.parties.transcript import iter_transcript, read_transcript
from parley.protocols.errors import AttackError
from parley.protocols.metrics import AuditEvaluator
from parley.protocols.queries import apply_edits
from parley.scenarios.exchanges.base import EPSILONS, AuditView, Exchange, Row, Utility, register_exchange
from parley.scenarios.explain import reconstruction_note
from parley.scenarios.run_parts import ADVERSARY, COMPLIANCE, DATA_CENTER, OBSERVER
from parley.scenarios.spec import Component
from parley.scenarios.words import answer_values, metric_name, models, number, people, shape_of

if TYPE_CHECKING:
    from parley.parties.wire import Envelope
    from parley.scenarios.world import World

__all__ = ["AUDIT_PURPOSE", "MAX_PROGRESS_NOTES", "MetricQueryExchange", "metric_query_flow", "score"]

#: The purpose the data center's honest queries declare under a per-purpose budget policy.
AUDIT_PURPOSE = "audit"
#: Progress sentences a run records at most (a 100,000-person attack answers thousands of queries).
MAX_PROGRESS_NOTES = 200


def _build_attack(component: Component, view: AttackerView, rng: np.random.Generator) -> Attack[Any]:
    return get_attack(component.name)(component.params, view, rng)


def _honest_use(world: World) -> dict[str, Any]:
    """The data center trains and asks how fair its base model is."""
    metrics = world.data_center.train()
    budget = world.scenario.budget
    # Under a per-purpose budget policy the honest queries declare the audit purpose (charged to its account).
    purpose = AUDIT_PURPOSE if budget is not None and budget.purposes is not None else None
    for metric in world.scenario.audit_metrics:
        world.network.exchange(world.data_center.audit_query(metric, purpose))
    for answer in world.data_center.answers_received():
        metrics[f"base_{answer['metric']}"] = float(answer["values"][0])
    return metrics


def _curious_attack(world: World) -> Reconstruction:
    """The data center defects: the adversary queries in its name until the attack ends."""
    view, identity = world.data_center.defect()
    world.learn(f"the data center turns adversary: it runs the {world.scenario.attack.name} attack, querying "
                "in its own name with its base model, its scores and the audit labels in hand")
    world.deployment.add(ADVERSARY, Adversary, identity, world.keyring,
                         _build_attack(world.scenario.attack, view, world.rngs["adversary"]), COMPLIANCE,
                         world.protocol.name, codec=world.adversary_codec)
    world.network.route(DATA_CENTER, ADVERSARY)  # answers to the data center's name now reach the adversary
    if world.progress is not None:  # a terminal's status line counts what the attack learns from here on
        world.progress.watch(world.attacker().status)
    models_before = world.compliance.stats()["models_answered"]
    world.network.exchange(world.attacker().start())
    try:
        return world.attacker().outcome()
    except AttackError:
        # The budget did its job: the attack ran out of budget before it could conclude. The run
        # still reports (nobody attacked, what was answered and spent) instead of failing.
        stats = world.compliance.stats()
        if world.ledger_path is None or not stats["budget_refusals"]:
            raise
        empty = np.empty(0, dtype=np.int64)
        return Reconstruction(indices=empty, a_hat=empty.astype(np.int8), decided=empty.astype(bool),
                              queries=stats["models_answered"] - models_before, info={"stopped": "budget-exceeded"})


def _explain_attack(world: World, reconstruction: Reconstruction, a: np.ndarray, position: dict[str, int]) -> None:
    """What the curious data center learned: after each answer its attack reports on, then its conclusion.

    ``position``: each envelope's place in the transcript (1-based), by id.
    """
    steps = world.attacker().progress()
    targeted, a_hat = np.zeros(a.size, dtype=bool), np.zeros(a.size, dtype=np.int8)
    decided = np.zeros(a.size, dtype=bool)
    # A sentence after every answer up to MAX_PROGRESS_NOTES answers, then after evenly spaced ones and the last.
    told = set(np.linspace(0, len(steps) - 1, min(len(steps), MAX_PROGRESS_NOTES)).round().astype(int).tolist())
    pinned = rightly = 0  # kept up to date from each change, not recounted over n
    for step, (envelope_id, change) in enumerate(steps):  # each step: what changed after that answer
        was = decided[change.indices]
        pinned -= int(was.sum())
        rightly -= int((was & (a_hat[change.indices] == a[change.indices])).sum())
        targeted[change.indices], a_hat[change.indices], decided[change.indices] = True, change.a_hat, change.decided
        now = decided[change.indices]
        pinned += int(now.sum())
        rightly += int((now & (a_hat[change.indices] == a[change.indices])).sum())
        world.knowledge.append((position[envelope_id], pinned, rightly))
        if step in told:
            known = np.flatnonzero(targeted)
            world.learn(reconstruction_note("the adversary", known, a_hat[known], decided[known], a,
                                            partition_only=change.partition_only), after=position[envelope_id])
    if reconstruction.info.get("stopped") == "budget-exceeded":
        world.learn("the privacy budget is spent: the compliance party refuses every further query, and the attack "
                    "ends without a conclusion")
        return
    world.learn("the attack concludes: " + reconstruction_note(
        "the adversary", reconstruction.indices, reconstruction.a_hat, reconstruction.decided, a,
        partition_only=reconstruction.partition_only, concluded=True))


def _explain_overheard(world: World, who: str, seen: list[Envelope], reconstruction: Reconstruction,
                       a: np.ndarray) -> None:
    """What a passive observer concluded from the whole transcript."""
    readable = sum(1 for env in seen if not is_sealed(env.payload))
    world.learn(f"{who} reads the {len(seen):,} messages on the wire ({readable:,} with readable payloads) and runs "
                f"its attack: " + reconstruction_note(who, reconstruction.indices, reconstruction.a_hat,
                                                      reconstruction.decided, a, concluded=True,
                                                      partition_only=reconstruction.partition_only),
                after=len(seen))


def _overhear(world: World, slot: str, component: Component, seen: list[Envelope],
              rng: np.random.Generator) -> Reconstruction:
    """A passive attack on the transcript; the observer knows only n (from the queries' shape)."""
    wire_view = AttackerView(n=int(world.split.a_audit.shape[0]))
    world.deployment.add(slot, Adversary, world.identities[OBSERVER], world.keyring,
                         _build_attack(component, wire_view, rng), COMPLIANCE, world.protocol.name)
    return world.attacker(slot).observe(seen)


def score(reconstruction: Reconstruction, a: np.ndarray) -> dict[str, Any]:
    """The referee's verdict: leakage (Def. 5.1) and counts, against the truth no party handed over."""
    truth = a[reconstruction.indices]
    decided = reconstruction.decided
    correct = decided & (reconstruction.a_hat == truth)
    swap = reconstruction.partition_only
    return {
        "leakage": leakage(truth, reconstruction.a_hat, swap, decided),
        # A partition (|SP|, |EO|, accept sets) fixes A only up to swapping the two labels: the headline
        # scores the better labelling, as the paper does; the labels as the attack wrote them are scored too.
        "leakage_up_to_swap": bool(swap),
        **({"leakage_as_labelled": leakage(truth, reconstruction.a_hat, False, decided)} if swap else {}),
        "exact_recovery": bool(reconstruction.indices.size > 0 and correct.all()),
        "attacked": int(reconstruction.indices.size),
        "correct": int(correct.sum()),
        "undecided": int((~decided).sum()),
        "queries": int(reconstruction.queries),
    }


def _read_back(path: Path, a: np.ndarray, y: np.ndarray, opened: list[tuple[str, np.ndarray, np.ndarray]] | None = None
               ) -> tuple[dict[str, float | None], dict[str, int]]:
    """One pass over the closed transcript: the referee's query errors, and every envelope's place by id.

    Errors: mean and median |released - exact| over every answered model (the referee recomputes
    the exact values). Both are reported: Cauchy noise has no finite mean, so its mean error is
    ruled by the tails. The exact values are :func:`parley.protocols.metrics.evaluate`'s bit for
    bit; a query in edit form is computed from its kept model's exact group sums and its changed
    entries, as the compliance party answered it (:meth:`parley.protocols.metrics.AuditEvaluator.edited`),
    never expanded to n wide. Under a secure protocol no prediction is on the wire: ``opened`` holds the
    data center's own (metric, predictions, answer) of its honest queries, and the errors are theirs.
    """
    exact = AuditEvaluator(a, y)
    errors = [np.abs(values - exact(metric, predictions)) for metric, predictions, values in opened or []]
    pending: dict[str, dict[str, Any]] = {}
    kept: dict[str, np.ndarray] = {}
    position: dict[str, int] = {}
    # queries and answers are paired as exchanges_from pairs them
    for at, e in enumerate(iter_transcript(path, verify=False), 1):
        position[e.id] = at
        if is_sealed(e.payload):
            continue
        if e.kind == "metric-query":
            pending[e.payload["query_id"]] = e.payload
        elif e.kind == "metric-answer" and opened is None and e.payload.get("query_id") in pending:
            q = pending.pop(e.payload["query_id"])
            if "edit_of" in q:
                base = kept[q["edit_of"]]
                values = exact.edited(q["metric"], base, np.atleast_2d(q["indices"]), np.atleast_2d(q["values"]))
                model = None
            else:
                H = np.atleast_2d(np.asarray(q["predictions"], dtype=np.float64))
                values, model = exact(q["metric"], H), H[0]
            if q.get("keep"):
                kept[q["query_id"]] = model if model is not None else apply_edits(
                    base, np.atleast_2d(q["indices"]), np.atleast_2d(q["values"]))[0]
            errors.append(np.abs(np.asarray(e.payload["values"]) - values))
    if not errors:
        return {"avg_query_error": None, "median_query_error": None}, position
    flat = np.concatenate(errors)
    return {"avg_query_error": float(flat.mean()), "median_query_error": float(np.median(flat))}, position


def _parties(scenario: Any) -> tuple[str, ...]:
    """The adversary of a curious data center or of a passive observer, and the scenario's extra observer."""
    attacker = (ADVERSARY,) if scenario.threat_model in ("curious-data-center", "passive-observer") else ()
    return attacker + ((OBSERVER,) if scenario.observer is not None else ())


def metric_query_flow(world: World) -> dict[str, Any]:
    """Honest queries, the curious data center's attack or the observers', scored; the transcript is closed."""
    scenario, a = world.scenario, world.split.a_audit
    model_metrics = _honest_use(world)
    base = world.data_center.view().require("base_predictions")
    if scenario.threat_model == "curious-data-center":
        reconstruction = _curious_attack(world)
    world.transcript.close()
    # The curious compliance party: how well it reads the base model's predictions from the first honest query.
    model_metrics["compliance_view_accuracy"] = compliance_view_accuracy(
        iter_transcript(world.transcript.path, verify=False), COMPLIANCE, DATA_CENTER, base)
    opened = world.data_center.opened() if world.protocol.encoding is not None else None
    query_errors, position = _read_back(world.transcript.path, a, world.split.y_audit, opened)
    if scenario.threat_model == "curious-data-center":
        _explain_attack(world, reconstruction, a, position)
    overhearing = scenario.threat_model == "passive-observer" or scenario.observer is not None
    seen = read_transcript(world.transcript.path, verify=False) if overhearing else []
    if scenario.threat_model == "passive-observer":
        reconstruction = _overhear(world, ADVERSARY, scenario.attack, seen, world.rngs["adversary"])
        _explain_overheard(world, "the passive observer", seen, reconstruction, a)
    observer_metrics: dict[str, Any] = {}
    if scenario.observer is not None:
        overheard = _overhear(world, OBSERVER, scenario.observer, seen, world.rngs["observer"])
        _explain_overheard(world, "the passive observer", seen, overheard, a)
        observer_metrics = {"observer_leakage": score(overheard, a)["leakage"],
                            "observer_revealed": int(overheard.indices.size)}
    return {
        **score(reconstruction, a),
        **query_errors,
        **model_metrics,
        **observer_metrics,
        **{f"attack_{k}": v for k, v in reconstruction.info.items()},
    }


# -- narration: what each message of the exchange says, from the wire alone ---------------------------------


def _metric_query(p: Mapping[str, Any]) -> str:
    metric = metric_name(p.get("metric", "?"))
    if "edit_of" in p:
        indices = np.atleast_2d(np.asarray(p.get("indices", np.empty((1, 0)))))
        m, k = indices.shape[0], indices.shape[-1]
        each = "the kept model" if m == 1 else f"{m:,} models, each the kept model"
        changed = f"{k:,} prediction{'' if k == 1 else 's'} changed"
        return f"a metric query: {metric} of {each} with {changed} (sent as edits)"
    shape = shape_of(p, "predictions")
    text = f"a metric query: {metric} of {models(shape[0])} over {people(shape[1])}" if shape else \
        f"a metric query: {metric}"
    return text + (" (the compliance party keeps the model, for queries that edit it)" if p.get("keep") else "")


def _metric_answer(p: Mapping[str, Any]) -> str:
    notes = []
    if p.get("noise") is not None or p.get("epsilon") is not None:
        noise = f"{p['noise']} noise" if p.get("noise") else "noise"
        notes.append(f"{noise} at ε = {number(p['epsilon'])}" if p.get("epsilon") is not None else noise)
    if p.get("decimals") is not None:
        notes.append(f"rounded to {p['decimals']} decimals")
    text = answer_values(p.get("values", []), metric_name(p.get("metric", "?")), exact=not notes)
    return text + (f" ({', '.join(notes)})" if notes else " (exact)")


def _secure(kind: str, p: Mapping[str, Any]) -> str:
    """A message of the secure protocols: what its shares are of (the values are uniform field elements)."""
    metric, m = metric_name(p.get("metric", "?")), p.get("m", "?")
    which = models(m) if type(m) is int else "? models"
    shares, a_share = p.get("shares"), p.get("a_share")
    if kind == "mpc-query" and isinstance(shares, np.ndarray) and shares.ndim == 3:
        return (f"a secure {metric} query of {which}: the compliance party's Shamir shares of "
                f"{shares.shape[0]:,} rows of predictions over {people(shares.shape[1])} (uniform in GF(2^127 - 1))")
    if kind == "mpc-query":
        return f"a secure {metric} query of {which} for the helper: the header and a padded share of A"
    owner = "the compliance party's" if isinstance(a_share, np.ndarray) else "the helper's"
    extra = " and the helper's share of A, padded" if isinstance(a_share, np.ndarray) else ""
    return f"{owner} output share of the {metric} statistics of {which}{extra} (alone, uniform: no value in it)"


def _homomorphic(kind: str, p: Mapping[str, Any]) -> str:
    """A message of ``he``: what its ciphertexts hold (pseudorandom to anyone without the secret key)."""
    metric, m = metric_name(p.get("metric", "?")), p.get("m", "?")
    which = models(m) if type(m) is int else "? models"
    if kind == "he-query":
        cts = p.get("ciphertexts")
        count = len(cts) if isinstance(cts, list) else "?"
        context = "with its public key and Galois keys" if "galois_keys" in p else "naming its public context"
        return (f"an encrypted {metric} query of {which}: {count} CKKS ciphertexts of the predictions under the "
                f"data center's key, {context}")
    answers = p.get("answers")
    count = len(answers) if isinstance(answers, list) else "?"
    return (f"the {metric} answers of {which} in {count} CKKS ciphertexts, every other slot masked and the "
            "decryption error noise-flooded (only the data center can decrypt them)")


# -- parley compare and the privacy audit ------------------------------------------------------------------

#: smooth-laplace is (epsilon, delta)-DP for epsilon in (0, 1) only (Thm. 8 of the query-leakage paper).
SMOOTH_LAPLACE = (((0.25, 0.5, 0.9), (0.5,)), 1e-6)
#: dp-counts runs at the epsilons of laplace twice: discrete Laplace (pure DP) and discrete Gaussian at this delta.
COUNT_GAUSSIAN_DELTA = 1e-6


def _first_answer(transcript: Path, person: int, hypothesis: int) -> float:
    """The audited probe's answer (a model accepting only the person), as the adversary reads it off the wire."""
    return float(next(iter(exchanges_from(iter_transcript(transcript, verify=False)))).values[0])


@register_exchange
class MetricQueryExchange(Exchange):
    """Fairness metric queries and their answers: every metric protocol, in clear, under ``he`` or ``mpc``."""

    name = "metric-query"
    utility = Utility("median_query_error", "median |released - exact| of the honest queries "
                      "(the passive-observer runs, whose traffic is the honest use alone)",
                      higher_is_better=False, short="median query error", honest_threat="passive-observer",
                      use="answering fairness-metric queries")
    honest_metrics = ("sp",)
    # the audited view: one single-query probe on a model accepting only the person
    audit = AuditView(lambda person: {"name": "single-query", "targets": [person], "batch": True}, _first_answer,
                      "answer")
    confidential = True
    _KINDS = {"metric-query": _metric_query, "metric-answer": _metric_answer}

    def parties(self, scenario: Any) -> tuple[str, ...]:
        """The adversary of a curious data center or of a passive observer, and the scenario's extra observer."""
        return _parties(scenario)

    def run(self, world: World) -> dict[str, Any]:
        """Honest queries, then the attack (or the observers'), scored against A of the audit set."""
        return metric_query_flow(world)

    def describe(self, kind: str, payload: Mapping[str, Any]) -> str | None:
        """Queries and answers; the ``he`` ciphertexts and the ``mpc`` shares they travel as."""
        if kind in self._KINDS:
            return self._KINDS[kind](payload)
        if kind in ("mpc-query", "mpc-partial"):
            return _secure(kind, payload)
        if kind in ("he-query", "he-answer"):
            return _homomorphic(kind, payload)
        return None

    def rows(self, quick: bool) -> list[Row]:
        """The metric protocols: the DP ones at each epsilon, the secure ones, any other at its defaults."""
        pick = 1 if quick else 0
        rows = [Row("raw", {"name": "raw"}, self.name)]
        for name in ("laplace", "smooth-cauchy", "dp-counts"):
            rows += [Row(f"{name} ε={eps:g}", {"name": name, "epsilon": eps}, self.name) for eps in EPSILONS[pick]]
        # the Gaussian answers record their zCDP rho: their runs' ledgers compose them in zCDP (what their epsilon is)
        rows += [Row(f"dp-counts gaussian ε={eps:g}", {"name": "dp-counts", "epsilon": eps, "noise": "gaussian",
                                                      "delta": COUNT_GAUSSIAN_DELTA}, self.name, composition="zcdp")
                 for eps in EPSILONS[pick]]
        # Secure computation: mpc opens raw's numbers, mpc-dp the dp-counts release (noise drawn inside the computation)
        rows.append(Row("mpc", {"name": "mpc"}, self.name))
        rows += [Row(f"mpc-dp ε={eps:g}", {"name": "mpc-dp", "epsilon": eps}, self.name) for eps in EPSILONS[pick]]
        # Two-party homomorphic encryption: raw's numbers up to the noise flooding (exact decoders give up on them)
        rows.append(Row("he", {"name": "he"}, self.name))
        epsilons, delta = SMOOTH_LAPLACE
        rows += [Row(f"smooth-laplace ε={eps:g}", {"name": "smooth-laplace", "epsilon": eps, "delta": delta},
                     self.name) for eps in epsilons[pick]]
        named = {row.protocol["name"] for row in rows}
        return rows + [row for row in super().rows(quick) if row.protocol["name"] not in named]
