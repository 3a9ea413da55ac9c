"""Partition reveal from absolute gaps: Theorem 4 of the query-leakage paper (Sec. 3.3).

Hamman, Chen & Dutta, "Can Querying for Bias Leak Protected Attributes?"
(FAccT 2023), Thm. 4: n absolute-statistical-parity queries partition the
audit set by the protected attribute. Write alpha for the partition of a
reference individual r (the first target) and beta for the other one, with
sizes N_alpha + N_beta = n. |SP| is symmetric in the two groups, so the answers
identify the partition, never which part is a=1.

* A model accepting only individual j answers |SP| = 1/N_alpha if j is in
  alpha and 1/N_beta if j is in beta (case 1 of the proof: readable when
  N_alpha != N_beta).
* A model accepting only r and j answers 2/N_alpha (same partition) or
  |1/N_alpha - 1/N_beta| (different ones), which is 0 when N_alpha = N_beta
  (case 2 of the proof).

Finding the case from the answers
---------------------------------
The data center knows n (it holds X of the audit set), so the first answer
|SP| = 1/N_alpha also gives N_beta = n - N_alpha, as the proof's opening step
does: exact answers settle the case after one query and the attack then sends
the n - 1 remaining probes of that case, n models in all (the theorem's
m = n). With answers rounded to ``decimals`` places one answer leaves a set of
sizes N_alpha consistent with it; the attack keeps that set and picks the probe
kind that separates the two partitions for *every* size still possible (two
values e1, e2 are told apart when |e1 - e2| > 10**-decimals, i.e. their
rounding intervals of half a unit each cannot overlap). Near-equal sizes thus
fall back to pair probes, which separate 2/N_alpha from a near-zero
|1/N_alpha - 1/N_beta|. When no kind separates for every size still possible,
the attack proceeds adaptively, one model at a time: the next target's
single-individual probe (an answer different from the reference's proves
case 1 and pins both sizes), and if that leaves the target undecided, the pair
probe {r, j} (2/N_alpha vs |1/N_alpha - 1/N_beta|, 0 in case 2). Every answer
narrows the set of sizes, and undecided targets are reassessed after each
one. When every undecided target has had both probes, the precision cannot
tell the partitions apart and :data:`NOT_DISTINGUISHABLE` is raised.

A target is decided when, over every size still possible, its answers fit
only one of alpha and beta (answers compared with the exact values within
1e-9 relative, or within half a unit of the last released decimal). The
interval test is conservative at exact rounding ties, where it may call a
precision insufficient that np.round would in fact resolve.

When the targets are the whole audit set (or slice), the count of alpha is
N_alpha itself, which pins sizes that rounded answers left open.

Sec. 3.3 notes that "the partitioned sizes can also be used to determine which
group is which": the disadvantaged group is usually the smaller one. The reconstruction
stays ``partition_only`` (scored with the better labelling), but ``a_hat`` carries that guess:
smaller partition = a=0.
With equal sizes there is nothing to go by and alpha is labelled a=1.

The same engine (:func:`reveal_partition`) reads any absolute gap that moves by
1/N of the flipped individual's group within a slice of the audit set; the
label-slice attacks use it for |EO| and the equalized-odds gap.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import Answer, Attack, Probe, Reconstruction, ask, register_attack
from parley.parties.attacks.query_leakage.probes import flip_one
from parley.parties.attacks.query_leakage.targeted import (
    TARGETS_RANGE,
    TargetedParams,
    TargetsInAudit,
    choose_targets,
)
from parley.protocols.errors import AttackError, ConfigError

__all__ = [
    "AbsSPPartition", "NOT_DISTINGUISHABLE", "INCONSISTENT", "SMALLER_IS_DISADVANTAGED", "PartitionOutcome",
    "PartitionParams", "first_targets", "label_partition", "reveal_partition",
]

NOT_DISTINGUISHABLE = (
    "{metric}: at {decimals} released decimals the answers cannot tell individual {index}'s partition from the "
    "reference's: 1/N_alpha vs 1/N_beta and 2/N_alpha vs |1/N_alpha - 1/N_beta| round alike for the partition "
    "sizes still possible (N_alpha in {sizes}); release more decimals"
)
INCONSISTENT = (
    "{metric}: the answers fit no pair of partition sizes: they are not the exact or rounded |gap| values of the "
    "probes (noisy or inconsistent); use a noise-robust attack"
)
SMALLER_IS_DISADVANTAGED = "smaller partition = disadvantaged (a=0)"

SINGLE, PAIR = "single", "pair"


def _tolerance(expected: np.ndarray, decimals: int | None) -> np.ndarray:
    """How far a released answer may sit from its exact value.

    Exact answers carry float64 error of a matrix product over n terms; rounded
    ones are within half a unit of the last place (np.round), with a hair of
    slack for the binary representation of the rounded value.
    """
    if decimals is None:
        tolerance: np.ndarray = 1e-9 * np.abs(expected) + 1e-12
        return tolerance
    return np.full(np.shape(expected), 0.5 * 10.0 ** (-decimals) * (1 + 1e-6) + 1e-15)


def _consistent(value: float | None, expected: np.ndarray, decimals: int | None) -> np.ndarray:
    if value is None:
        return np.ones(expected.shape, dtype=bool)
    return np.abs(expected - value) <= _tolerance(expected, decimals)


def _separable(e1: np.ndarray, e2: np.ndarray, decimals: int | None) -> np.ndarray:
    """True where no released value can fit both e1 and e2 (their tolerance intervals are disjoint)."""
    separable: np.ndarray = np.abs(e1 - e2) > _tolerance(e1, decimals) + _tolerance(e2, decimals)
    return separable


@dataclass
class PartitionOutcome:
    """What :func:`reveal_partition` found.

    ``alpha[k]`` is True when ``targets[k]`` shares the reference's partition
    (``targets[0]``); ``sizes`` holds every N_alpha (size of alpha within the
    slice) that all answers allow; ``models`` counts the probe models sent.
    """

    targets: np.ndarray
    alpha: np.ndarray
    sizes: np.ndarray
    slice_size: int
    models: int
    decimals: int | None
    probes: dict[str, int] = field(default_factory=dict)


def reveal_partition(metric: str, base: np.ndarray, targets: np.ndarray, slice_size: int, batch: bool,
                     covers_slice: bool = False) -> Generator[Probe, Answer, PartitionOutcome]:
    """Partition ``targets`` by the protected attribute from an absolute gap (Thm. 4).

    Parameters
    ----------
    metric : str
        Metric key whose answer for ``base`` flipped at one individual j of the
        slice is 1/N of j's group within the slice (e.g. ``"abs_sp"`` with
        ``base`` = all zeros, so the probe accepts only j).
    base : array of shape (n,)
        Binary model whose gap on the slice is exactly 0 (it is constant on the
        slice) and whose other outputs do not enter the read gap.
    targets : array of int
        Individuals of the slice to partition; ``targets[0]`` is the reference.
    slice_size : int
        Number of audit individuals in the slice (known to the data center).
    batch : bool
        Send all probes of one kind in one query once the kind is settled.
    covers_slice : bool
        ``targets`` is the whole slice: the count of alpha is then N_alpha.

    Raises
    ------
    AttackError
        :data:`NOT_DISTINGUISHABLE` when the precision cannot separate the
        partitions, :data:`INCONSISTENT` when no sizes fit the answers.
    """
    base = np.asarray(base, dtype=np.float64)
    ref = int(targets[0])
    rest = [int(j) for j in targets[1:]]
    n_alpha = np.arange(1, slice_size, dtype=np.float64)  # candidate N_alpha; both groups non-empty
    n_beta = slice_size - n_alpha
    expected = {  # (kind, label) -> exact answer for every candidate size
        (SINGLE, True): 1.0 / n_alpha,
        (SINGLE, False): 1.0 / n_beta,
        (PAIR, True): 2.0 / n_alpha,
        (PAIR, False): np.abs(1.0 / n_alpha - 1.0 / n_beta),
    }
    seen: dict[str, dict[int, float]] = {SINGLE: {}, PAIR: {}}
    probes = {SINGLE: 0, PAIR: 0}
    state: dict[str, int | None] = {"decimals": None}

    def probe_rows(kind: str, js: list[int]) -> np.ndarray:
        H = flip_one(base, np.asarray(js))
        if kind == PAIR:
            H[:, ref] = 1.0 - base[ref]
        return H

    def query(kind: str, js: list[int], one_query: bool) -> Generator[Probe, Answer, None]:
        purpose = ("flip only the target (Thm. 4 case 1)" if kind == SINGLE
                   else "flip the reference and the target (Thm. 4 case 2)")
        values, decimals = yield from ask(metric, probe_rows(kind, js), one_query, purpose)
        state["decimals"] = decimals
        probes[kind] += len(js)
        seen[kind].update(zip(js, (float(v) for v in values), strict=True))

    def assess() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Feasible sizes and, per remaining target, (decided, in alpha)."""
        decimals = state["decimals"]
        feasible = _consistent(seen[SINGLE][ref], expected[(SINGLE, True)], decimals)
        # individuals with the same answers share the same evidence: assess each signature once
        signatures: dict[tuple[Any, ...], list[int]] = {}
        for k, j in enumerate(rest):
            signatures.setdefault((seen[SINGLE].get(j), seen[PAIR].get(j)), []).append(k)
        fits = {}
        for sig in signatures:
            fit = {}
            for label in (True, False):
                fit[label] = (_consistent(sig[0], expected[(SINGLE, label)], decimals)
                              & _consistent(sig[1], expected[(PAIR, label)], decimals))
            fits[sig] = fit
            feasible &= fit[True] | fit[False]
        decided = np.zeros(len(rest), dtype=bool)
        alpha = np.zeros(len(rest), dtype=bool)
        for sig, ks in signatures.items():
            can_alpha, can_beta = (fits[sig][True] & feasible).any(), (fits[sig][False] & feasible).any()
            decided[ks] = can_alpha != can_beta
            alpha[ks] = can_alpha
        return feasible, decided, alpha

    yield from query(SINGLE, [ref], True)
    while True:
        feasible, decided, alpha = assess()
        if not feasible.any():
            raise AttackError(INCONSISTENT.format(metric=metric))
        todo = [j for j, d in zip(rest, decided, strict=True) if not d]
        if not todo:
            break
        decimals = state["decimals"]
        kind = None
        for candidate in (SINGLE, PAIR):
            if _separable(expected[(candidate, True)], expected[(candidate, False)], decimals)[feasible].all():
                kind = candidate
                break
        if kind is not None and any(j not in seen[kind] for j in todo):
            # the kind separates the partitions for every size still possible: ask all its probes now
            yield from query(kind, [j for j in todo if j not in seen[kind]], batch)
            continue
        # adaptive, one model at a time (each answer may narrow the sizes enough to settle a kind):
        # the next undecided target's single first, then its pair; a target both leave undecided waits,
        # since another target's answers may still narrow the sizes and decide it on reassessment
        nxt = next(((kind_, j) for j in todo for kind_ in (SINGLE, PAIR) if j not in seen[kind_]), None)
        if nxt is None:
            raise AttackError(NOT_DISTINGUISHABLE.format(
                metric=metric, decimals=decimals, index=todo[0], sizes=_span(n_alpha[feasible])))
        yield from query(nxt[0], [nxt[1]], True)
    full = np.concatenate([[True], alpha])
    if covers_slice:
        # every member of the slice was placed: alpha's count is N_alpha itself
        feasible &= n_alpha == full.sum()
        if not feasible.any():
            raise AttackError(INCONSISTENT.format(metric=metric))
    return PartitionOutcome(targets=np.asarray(targets, dtype=np.int64), alpha=full,
                            sizes=n_alpha[feasible].astype(np.int64), slice_size=slice_size,
                            models=probes[SINGLE] + probes[PAIR], decimals=state["decimals"], probes=probes)


def _span(sizes: np.ndarray) -> str:
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 1:
        return f"{{{int(sizes[0])}}}"
    return f"{int(sizes.min())}..{int(sizes.max())} ({sizes.size} values)"


def label_partition(outcome: PartitionOutcome, prefix: str = "") -> tuple[np.ndarray, dict[str, Any]]:
    """Labels under the guess "smaller partition = a=0" and the info a report needs.

    alpha gets a=0 when every size still possible makes alpha the smaller
    part, a=1 when every one makes it the larger; otherwise (equal or
    unresolved sizes) alpha is labelled a=1 and ``info`` says there was no basis.
    """
    sizes = outcome.sizes
    others = outcome.slice_size - sizes
    if (sizes < others).all():
        alpha_label, basis = 0, SMALLER_IS_DISADVANTAGED
    elif (sizes > others).all():
        alpha_label, basis = 1, SMALLER_IS_DISADVANTAGED
    else:
        alpha_label, basis = 1, "partition sizes equal or unresolved: alpha labelled a=1 arbitrarily"
    a_hat = np.where(outcome.alpha, alpha_label, 1 - alpha_label).astype(np.int8)
    if (sizes == others).all():
        case = "2 (equal sizes)"
    elif (sizes != others).all():
        case = "1 (unequal sizes)"
    else:
        case = "undetermined"
    info: dict[str, Any] = {
        f"{prefix}reference": int(outcome.targets[0]),
        f"{prefix}case": case,
        f"{prefix}single_probes": outcome.probes.get(SINGLE, 0),
        f"{prefix}pair_probes": outcome.probes.get(PAIR, 0),
        f"{prefix}labelling_guess": basis,
        f"{prefix}alpha_label": alpha_label,
    }
    if sizes.size == 1:
        info[f"{prefix}N_alpha"] = int(sizes[0])
        info[f"{prefix}N_beta"] = int(outcome.slice_size - sizes[0])
    else:
        info[f"{prefix}N_alpha_candidates"] = int(sizes.size)
    return a_hat, info


class PartitionParams(TargetedParams):
    """Parameters of the partition attack: the targeted attack's, with everyone as the default target."""

    # widens TargetedParams.targets with None (everyone), which the partition attack handles itself
    targets: int | list[int] | None = Field(  # type: ignore[assignment]
        default=None, description="the first k individuals, or these indices (the first is the reference); "
                                  "none = everyone")
    batch: bool = Field(default=False, description="send all probes of the settled case in one query")


def first_targets(targets: int | list[int] | None, n: int, rng: np.random.Generator) -> np.ndarray:
    """Everyone (None), the first ``targets`` individuals (int), or the given indices in their order."""
    if targets is None:
        return np.arange(n, dtype=np.int64)
    if isinstance(targets, int):
        if targets > n:
            raise ConfigError(TARGETS_RANGE.format(n=n, got=targets))
        return np.arange(targets, dtype=np.int64)
    return choose_targets(targets, n, rng)


@register_attack
class AbsSPPartition(TargetsInAudit, Attack[PartitionParams]):
    """Theorem 4: partition the audit set from |SP| answers, case found from the answers.

    Probes accept only the target (case 1, N_alpha != N_beta) or the reference
    and the target (case 2, N_alpha = N_beta); see the module docstring for how
    the case and rounded answers are handled. Returns a ``partition_only``
    reconstruction whose ``a_hat`` labels the smaller partition a=0 (Sec. 3.3:
    "the partitioned sizes can also be used to determine which group is which").

    References
    ----------
    Hamman, Chen & Dutta, "Can Querying for Bias Leak Protected Attributes?",
    FAccT 2023, Sec. 3.3, Theorem 4 and its proof.
    """

    name = "abs-sp-partition"
    Params = PartitionParams
    summary = "|SP| of one-individual (or reference+individual) models partitions the audit set (Thm. 4)"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        n = self.view.n
        idx = first_targets(self.params.targets, n, self.rng)
        outcome = yield from reveal_partition("abs_sp", np.zeros(n), idx, n, self.params.batch,
                                              covers_slice=idx.size == n)
        a_hat, info = label_partition(outcome)
        return Reconstruction(indices=idx, a_hat=a_hat, decided=np.ones(idx.size, dtype=bool),
                              queries=outcome.models, info=info, partition_only=True)
