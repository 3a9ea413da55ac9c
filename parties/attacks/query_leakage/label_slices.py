"""Reveals through label-conditioned metrics: EO, PE, equalized odds, predictive rate parity.

Remark 5 of the query-leakage paper (Hamman, Chen & Dutta, FAccT 2023) says the
reveals extend to equal opportunity, equalized odds and predictive rate parity,
and that equal opportunity, conditioning on Y = 1, says nothing about
individuals with Y = 0. The data center holds the audit labels y
(:class:`~parley.parties.attacks.base.AttackerView`), so it knows which slice each
target falls in and spends no query on targets a metric cannot see. Metric
definitions and signs (advantaged minus disadvantaged) are those of
:mod:`parley.protocols.metrics`. Write N_g^(s) = #{a=g, y=s}; the data center knows
n^(s) = N_0^(s) + N_1^(s) from y.

* ``eo-flip`` (metric ``eo``): the double query of Example 2 inside the y=1
  slice. EO is SP over y=1, so flipping target j (y_j = 1) moves EO by
  delta_j/N_1^(1) if a_j = 1 and -delta_j/N_0^(1) if a_j = 0, delta_j =
  1 - 2 h_j; :func:`~parley.parties.attacks.query_leakage.targeted.decide_from_steps` reads the
  signs and recovers the slice's group sizes. Targets with y_j = 0 are
  reported undecided (Remark 5).
* ``eo-flip`` (metric ``abs_eo``): |EO| is unchanged when a is swapped for
  1 - a, so only the partition of the y=1 slice is identifiable, whatever the
  probes; no base model "with a known nonzero gap" can break that symmetry,
  because its sign is itself unknown. The attack uses the base model that
  accepts every y=1 individual (its EO is exactly 0, a known gap, and it is
  right on every positive) and flips targets away from it: |EO| = 1/N_g^(1) of
  the flipped individual's group, the Thm. 4 partition logic
  (:func:`~parley.parties.attacks.query_leakage.partition.reveal_partition`) inside the slice.
* ``pe-flip``: the mirror image on the y=0 slice with the PE (FPR) gap.
* ``eodds-flip``: EOdds = max(|EO|, |PE|). The probes start from the perfect
  classifier h = y, whose EO and PE are both exactly 0 (constant on each
  slice). Flipping targets of one slice moves only that slice's term, so the
  other term stays 0 and the flipped term is the binding one: the answer is
  |EO| or |PE| alone, read with the Thm. 4 partition logic within the slice.
  EOdds is moreover unchanged when a is swapped *inside one slice only* (that
  slice's term changes sign, the max of absolute values does not), so the
  y=1 and y=0 partitions are each identifiable only up to their own swap and
  can never be linked by EOdds answers: the reconstruction is
  ``partition_only`` and ``a_hat`` labels the smaller part of each slice a=0
  (the size remark of Sec. 3.3), which is also what links the two slices.
* ``prp-flip``: see :class:`PRPFlip` for the derivation; the sign of the
  answer difference, times delta_j and (2 y_j - 1), is the sign of a_j.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import (
    Answer,
    Attack,
    AttackerView,
    Probe,
    Reconstruction,
    ask,
    probe_accuracy,
    register_attack,
)
from parley.parties.attacks.query_leakage.partition import INCONSISTENT, label_partition, reveal_partition
from parley.parties.attacks.query_leakage.probes import flip_one
from parley.parties.attacks.query_leakage.targeted import (
    TargetedParams,
    TargetsInAudit,
    choose_targets,
    decide_from_steps,
)
from parley.protocols.errors import AttackError

__all__ = ["EOFlip", "PEFlip", "EOddsFlip", "PRPFlip", "EOFlipParams", "NEEDS_LABELS", "OUTSIDE_SLICE"]

NEEDS_LABELS = "attack {name!r} needs the audit labels y and the base model's predictions in the attacker's view"
OUTSIDE_SLICE = ("{count} of {total} targets have y={label}: metric {metric!r} carries no information about them "
                 "(Remark 5); they are undecided")
PRP_ZERO = ("{count} of {total} answer differences are zero at the released precision (the base model's precision "
            "in the target's group is 0 or 1, or the step rounds away): their individuals are undecided")


class SliceParams(TargetedParams):
    # widens TargetedParams.targets with 'visible' (the helpers below handle it before choose_targets)
    targets: int | list[int] | Literal["visible"] = Field(  # type: ignore[assignment]
        default=20, description="how many random individuals, their indices, or 'visible': every individual of the "
                                "slice the metric sees (the data center knows y)")


def _slice_targets(attack: EOFlip | PEFlip, y: np.ndarray, label: int) -> np.ndarray:
    if attack.params.targets == "visible":
        return np.flatnonzero(y == label)
    return choose_targets(attack.params.targets, attack.view.n, attack.rng)


class EOFlipParams(SliceParams):
    """Parameters of the EO attack on the y = 1 slice: the signed gap or its absolute value."""

    metric: Literal["eo", "abs_eo"] = Field(
        default="eo", description="signed EO gap (double queries) or |EO| (partition of the y=1 slice)")


def _labelled_view(attack: Attack) -> tuple[np.ndarray, np.ndarray]:
    view: AttackerView = attack.view
    if view.y is None or view.base_predictions is None:
        raise AttackError(NEEDS_LABELS.format(name=attack.name))
    return np.asarray(view.y).astype(np.int8), np.asarray(view.base_predictions, dtype=np.float64)


def _signed_slice_flip(attack: EOFlip | PEFlip, metric: str, label: int) -> Generator[Probe, Answer, Reconstruction]:
    """Double query (Example 2) inside the slice y = ``label`` for a signed sliced gap (EO or PE)."""
    y, base = _labelled_view(attack)
    idx = _slice_targets(attack, y, label)
    a_hat = np.ones(idx.size, dtype=np.int8)
    decided = np.zeros(idx.size, dtype=bool)
    inside = y[idx] == label
    info: dict[str, Any] = {"slice": f"y={label}"}
    if (~inside).any():
        info["outside_slice"] = OUTSIDE_SLICE.format(count=int((~inside).sum()), total=idx.size, label=1 - label,
                                                     metric=metric)
    sel = idx[inside]
    if sel.size == 0:
        return Reconstruction(indices=idx, a_hat=a_hat, decided=decided, queries=0, info=info)
    H = np.vstack([base[None, :], flip_one(base, sel)])
    answers, decimals = yield from ask(metric, H, attack.params.batch,
                                              f"base model, then flipped at one target with y={label}")
    # the sliced gap is SP over the slice: flipping 0 -> 1 adds +1/N_1^(s) or -1/N_0^(s)
    steps = (answers[1:] - answers[0]) * (1.0 - 2.0 * base[sel])
    slice_a, slice_decided, step_info = decide_from_steps(steps, int((y == label).sum()), decimals)
    a_hat[inside], decided[inside] = slice_a, slice_decided
    for key, value in step_info.items():  # sizes are those of the slice
        info[f"{key}_y{label}" if key in ("N0", "N1", "N1_candidates") else key] = value
    info.update(probe_accuracy(H, attack.view))
    return Reconstruction(indices=idx, a_hat=a_hat, decided=decided, queries=H.shape[0], info=info)


def _slice_partition(attack: EOFlip | EOddsFlip, metric: str, base: np.ndarray, labels: tuple[int, ...],
                     idx: np.ndarray, y: np.ndarray) -> Generator[Probe, Answer, Reconstruction]:
    """Thm. 4 partition of each slice y in ``labels``, from probes flipping ``base`` (gap 0 on the slice)."""
    a_hat = np.ones(idx.size, dtype=np.int8)
    decided = np.zeros(idx.size, dtype=bool)
    info: dict[str, Any] = {}
    models = 0
    for label in labels:
        inside = y[idx] == label
        if not inside.any():
            continue
        in_slice = int((y == label).sum())
        outcome = yield from reveal_partition(metric, base, idx[inside], in_slice, attack.params.batch,
                                              covers_slice=int(inside.sum()) == in_slice)
        slice_a, slice_info = label_partition(outcome, prefix=f"y{label}_")
        a_hat[inside], decided[inside] = slice_a, True
        info.update(slice_info)
        models += outcome.models
    return Reconstruction(indices=idx, a_hat=a_hat, decided=decided, queries=models, info=info, partition_only=True)


@register_attack
class EOFlip(TargetsInAudit, Attack[EOFlipParams]):
    """Equal-opportunity reveal of the y=1 targets (Remark 5): double queries, or Thm. 4 for |EO|.

    With ``metric="eo"`` each target j with y_j = 1 costs one model: the base
    model flipped at j; the EO difference is +-1/N_1^(1) (a_j = 1) or
    -+1/N_0^(1) (a_j = 0). With ``metric="abs_eo"`` the y=1 slice is
    partitioned (labels up to a swap, ``partition_only``) from probes that
    accept every positive but the target (EO of the unflipped probe is 0).
    Targets with y_j = 0 are undecided either way: EO conditions on Y = 1.

    References
    ----------
    Hamman, Chen & Dutta, FAccT 2023: Example 2, Theorem 4, Remark 5.
    """

    name = "eo-flip"
    Params = EOFlipParams
    summary = "flip one y=1 target of the base model; the EO (or |EO|, up to a swap) difference reveals a_j (Remark 5)"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        if self.params.metric == "eo":
            return (yield from _signed_slice_flip(self, "eo", 1))
        y, base = _labelled_view(self)
        idx = _slice_targets(self, y, 1)
        # accept every positive (EO = 0 exactly); the negatives keep the base model's outputs, which EO ignores
        probe_base = np.where(y == 1, 1.0, base)
        rec = yield from _slice_partition(self, "abs_eo", probe_base, (1,), idx, y)
        rec.info["slice"] = "y=1"
        outside = y[idx] != 1
        if outside.any():
            rec.info["outside_slice"] = OUTSIDE_SLICE.format(count=int(outside.sum()), total=idx.size, label=0,
                                                             metric="abs_eo")
        return rec


@register_attack
class PEFlip(TargetsInAudit, Attack[SliceParams]):
    """Predictive-equality reveal of the y=0 targets: the mirror image of ``eo-flip``.

    PE is SP over the y=0 slice, so the base model flipped at a target j with
    y_j = 0 moves PE by +-1/N_1^(0) (a_j = 1) or -+1/N_0^(0) (a_j = 0); targets
    with y_j = 1 are undecided (Remark 5, mirrored).

    References
    ----------
    Hamman, Chen & Dutta, FAccT 2023: Example 2, Remark 5.
    """

    name = "pe-flip"
    Params = SliceParams
    summary = "flip one y=0 target of the base model; the PE (FPR gap) difference reveals a_j (Remark 5, mirrored)"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        return (yield from _signed_slice_flip(self, "pe", 0))


@register_attack
class EOddsFlip(TargetsInAudit, Attack[TargetedParams]):
    """Equalized-odds reveal: each y-slice partitioned through the binding term (Remark 5, Thm. 4).

    Probes are the perfect classifier h = y flipped at the target (and at the
    slice's reference when the slice's two groups have equal size). h = y has
    EO = PE = 0, and a flip inside one slice leaves the other slice's term at
    0, so max(|EO|, |PE|) is the flipped slice's |gap| = 1/N_g^(s) of the
    target's group: the Thm. 4 partition logic applies within each slice.
    EOdds cannot tell a from 1 - a inside one slice (that slice's term only
    changes sign), so the reconstruction is ``partition_only``: each slice's
    partition is exact, and ``a_hat`` labels each slice's smaller part a=0.

    References
    ----------
    Hamman, Chen & Dutta, FAccT 2023: Theorem 4, Remark 5.
    """

    name = "eodds-flip"
    Params = TargetedParams
    summary = "flip targets of the perfect classifier h = y; max(|EO|, |PE|) partitions each y-slice (Thm. 4, Remark 5)"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        y, _ = _labelled_view(self)
        idx = choose_targets(self.params.targets, self.view.n, self.rng)
        rec = yield from _slice_partition(self, "eodds", y.astype(np.float64), (1, 0), idx, y)
        rec.info["identifiable"] = ("each y-slice's partition, up to a swap within the slice; slices linked by the "
                                    "size guess")
        return rec


@register_attack
class PRPFlip(TargetsInAudit, Attack[TargetedParams]):
    """Predictive-rate-parity reveal by double queries (Remark 5).

    Derivation from :func:`parley.protocols.metrics.predictive_rate_parity_difference`:
    PRP(h) = T_1/S_1 - T_0/S_0 with S_g = sum_{a_j=g} h_j (mass accepted in
    group g) and T_g = sum_{a_j=g} h_j y_j (positives accepted). Flipping target
    j of group g changes h_j by delta = 1 - 2 h_j = +-1: S_g always moves by
    delta, T_g only if y_j = 1, and the other group's term stays. With
    p_g = T_g/S_g (the base model's precision in group g),

        (T_g + delta y_j)/(S_g + delta) - p_g = delta (y_j - p_g)/(S_g + delta),

    so PRP(flipped) - PRP(base) = sigma_g delta (y_j - p_g)/(S_g + delta) with
    sigma_1 = +1, sigma_0 = -1 (advantaged minus disadvantaged). Since
    0 <= p_g <= 1 and S_g + delta > 0, y_j - p_g has the sign of 2 y_j - 1 or
    is 0, hence

        sign(difference * delta * (2 y_j - 1)) = +1 if a_j = 1, -1 if a_j = 0,

    whenever the difference is nonzero. It is zero only when the base model's
    precision in j's group is exactly 1 (for y_j = 1) or 0 (for y_j = 0):
    those targets are undecided. Rounding is monotone, so a nonzero difference
    of two rounded answers still has the true sign; differences that round to
    zero are undecided. Within one class (y_j, delta, a_j) every flipped model
    has the same exact answer, so their released differences must agree;
    otherwise the answers are not exact and :data:`INCONSISTENT` is raised.

    Precondition: the base model accepts at least two individuals of each group
    (else removing the only acceptance of a group leaves P(y=1 | h, a) undefined
    and the compliance party refuses the probe).

    References
    ----------
    Hamman, Chen & Dutta, FAccT 2023: Example 2, Remark 5.
    """

    name = "prp-flip"
    Params = TargetedParams
    summary = "flip one target of the base model; sign(PRP difference * delta * (2y-1)) is the sign of a_j (Remark 5)"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        y, base = _labelled_view(self)
        n = self.view.n
        idx = choose_targets(self.params.targets, n, self.rng)
        H = np.vstack([base[None, :], flip_one(base, idx)])
        answers, decimals = yield from ask("prp", H, self.params.batch, "base model, then flipped at one target")
        delta = 1.0 - 2.0 * base[idx]
        evidence = (answers[1:] - answers[0]) * delta * (2.0 * y[idx] - 1.0)
        # exact: binary h gives integer sums, so a true nonzero difference is >= 1/(n (n+1)) >> float error
        zero_tol = 1e-14 if decimals is None else 0.5 * 10.0 ** (-decimals)
        decided = np.abs(evidence) > zero_tol
        a_hat = np.where(evidence > 0, 1, 0).astype(np.int8)
        a_hat[~decided] = 1
        self._check_classes(answers[1:] - answers[0], delta, y[idx], a_hat, decided, decimals)
        info: dict[str, Any] = {}
        if not decided.all():
            info["warning"] = PRP_ZERO.format(count=int((~decided).sum()), total=idx.size)
        info.update(probe_accuracy(H, self.view))
        return Reconstruction(indices=idx, a_hat=a_hat, decided=decided, queries=H.shape[0], info=info)

    @staticmethod
    def _check_classes(diffs: np.ndarray, delta: np.ndarray, y: np.ndarray, a_hat: np.ndarray, decided: np.ndarray,
                       decimals: int | None) -> None:
        """Equal exact answers within a class (y_j, delta_j, a_j) must be released equal."""
        tol = 1e-9 if decimals is None else 0.5 * 10.0 ** (-decimals)
        for key in set(zip(y[decided].tolist(), delta[decided].tolist(), a_hat[decided].tolist(), strict=True)):
            members = decided & (y == key[0]) & (delta == key[1]) & (a_hat == key[2])
            if np.ptp(diffs[members]) > tol * max(1.0, float(np.abs(diffs[members]).max())):
                raise AttackError(INCONSISTENT.format(metric="prp"))
