"""The metric-query flow: honest fairness queries, then the adversary's probes, then observers.

The data center trains its base model and asks how fair it is; in the curious
data-center threat model it then defects and the adversary queries in its name
until its attack concludes; a passive observer (the threat model's adversary,
or an extra ``observer``) attacks the transcript afterwards. The referee
scores every reconstruction against A of the audit set.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.adversary import Adversary
from parley.parties.attacks import AttackerView, Reconstruction, get_attack, leakage
from parley.parties.attacks.curious_compliance import compliance_view_accuracy
from parley.parties.confidential import is_sealed
from parley.parties.transcript import iter_transcript, read_transcript
from parley.protocols.errors import AttackError
from parley.protocols.metrics import AuditEvaluator
from parley.protocols.queries import apply_edits
from parley.scenarios.explain import reconstruction_note
from parley.scenarios.flows import register_flow
from parley.scenarios.spec import Component
from parley.scenarios.world import ADVERSARY, COMPLIANCE, DATA_CENTER, OBSERVER, World

__all__ = ["AUDIT_PURPOSE", "MAX_PROGRESS_NOTES", "metric_query_flow", "score"]

#: The purpose the data center's honest queries declare under a per-purpose budget policy.
AUDIT_PURPOSE = "audit"
#: Progress sentences a run records at most (a 100,000-person attack answers thousands of queries).
MAX_PROGRESS_NOTES = 200


def _build_attack(component: Component, view: AttackerView, rng: np.random.Generator):
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
        world.progress.watch(functools.partial(world.deployment.call, ADVERSARY, "status"))
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


def _explain_overheard(world: World, who: str, seen: list, reconstruction: Reconstruction, a: np.ndarray) -> None:
    """What a passive observer concluded from the whole transcript."""
    readable = sum(1 for env in seen if not is_sealed(env.payload))
    world.learn(f"{who} reads the {len(seen):,} messages on the wire ({readable:,} with readable payloads) and runs "
                f"its attack: " + reconstruction_note(who, reconstruction.indices, reconstruction.a_hat,
                                                      reconstruction.decided, a, concluded=True,
                                                      partition_only=reconstruction.partition_only),
                after=len(seen))


def _overhear(world: World, slot: str, component: Component, seen: list, rng: np.random.Generator) -> Reconstruction:
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


def _read_back(path: Path, a: np.ndarray, y: np.ndarray, opened: list | None = None
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
    for number, e in enumerate(iter_transcript(path, verify=False), 1):
        position[e.id] = number
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


@register_flow("metric-query", parties=_parties)
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
    opened = world.data_center.opened() if getattr(world.protocol, "secure", False) else None
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
