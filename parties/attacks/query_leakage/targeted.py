"""Targeted reveals: single query (Example 1) and double query (Example 2).

Both are from Sec. 3.1 of the query-leakage paper (Hamman, Chen, Dutta, FAccT
2023). With SP_i = mean_{a=1} h_i - mean_{a=0} h_i (Def. 2.1):

* single query: a model accepting only individual j answers SP = +1/N1 if
  a_j = 1 and -1/N0 if a_j = 0, so the sign reveals a_j;
* double query: the base model h1 and h2 = h1 with j's prediction flipped
  differ by one acceptance, so SP(h2) - SP(h1) = (1 - 2 h1_j) * (+1/N1 or -1/N0).
  Both models are realistic: their accuracies differ by at most 1/n.

The magnitudes of the steps give N1 and N0 (Remark 4), which the attack reports
and uses to check that every step is one of the two possible values.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from parley.parties.attacks.base import (
    Answer,
    Attack,
    AttackParams,
    Probe,
    Reconstruction,
    ask,
    probe_accuracy,
    register_attack,
)
from parley.parties.attacks.query_leakage.group_sizes import sizes_from_unit_steps
from parley.parties.attacks.query_leakage.probes import flip_one
from parley.protocols.errors import AttackError, ConfigError

__all__ = ["SingleQuery", "DoubleQuery", "TargetsInAudit", "check_targets", "decide_from_steps",
           "TARGETS_OVER_AUDIT", "TARGET_OUTSIDE_AUDIT"]

TARGETS_RANGE = "attack.targets must pick between 1 and n={n} individuals, got {got}"
TARGET_INDEX = "attack.targets holds index {index}, outside the audit set 0..{last}"
#: ``check_scenario`` of the attacks whose targets are audit-set members: what the spec says cannot be drawn.
TARGETS_OVER_AUDIT = ("attack.targets: {got} individuals cannot be drawn from the audit set; give at most the audit "
                      "set's size ({n}) or a larger dataset.audit_size")
TARGET_OUTSIDE_AUDIT = "attack.targets: index {index} is outside the audit set 0..{last} (dataset.audit_size = {n})"
SIGN_LOST = "{count} of {total} answer differences are zero at the released precision: their individuals are undecided"


class TargetedParams(AttackParams):
    targets: int | list[int] = Field(default=20, description="how many random individuals to reveal, or their indices")
    batch: bool = Field(default=False, description="send all probe models in one query instead of one query per target")

    @field_validator("targets")
    @classmethod
    def _positive(cls, value: int | list[int]) -> int | list[int]:
        if isinstance(value, int) and value < 1:
            raise ValueError("must be at least 1")
        if isinstance(value, list) and (not value or len(set(value)) != len(value)):
            raise ValueError("must be a non-empty list of distinct indices")
        return value


def check_targets(targets: int | list[int] | str | None, n: int | None) -> None:
    """Refuse (ConfigError) targets that an audit set of ``n`` people does not hold.

    ``targets`` is a count (at most ``n``), a list of indices (each in 0..n-1), or a value every audit
    set holds (None: everyone, ``"visible"``: a slice); ``n`` None (a data set without an audit size)
    accepts everything.
    """
    if n is None:
        return
    if isinstance(targets, int) and targets > n:
        raise ConfigError(TARGETS_OVER_AUDIT.format(got=targets, n=n))
    if isinstance(targets, list):
        outside = [index for index in targets if not 0 <= index < n]
        if outside:
            raise ConfigError(TARGET_OUTSIDE_AUDIT.format(index=outside[0], last=n - 1, n=n))


class TargetsInAudit:
    """Mixin of the attacks whose ``targets`` are members of the audit set (their view's n is its size).

    Its ``check_scenario`` refuses, when the scenario is read, more targets than
    ``dataset.audit_size`` or an index outside the audit set: without it the run would
    fail only once the data is loaded and the base model trained.
    """

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """:func:`check_targets` of ``attack.targets`` against ``dataset.audit_size``."""
        check_targets(scenario.attack.params.targets, getattr(scenario.dataset, "audit_size", None))


def choose_targets(targets: int | list[int], n: int, rng: np.random.Generator) -> np.ndarray:
    """The individuals to attack: ``targets`` random ones, or the given indices."""
    if isinstance(targets, int):
        if targets > n:
            raise ConfigError(TARGETS_RANGE.format(n=n, got=targets))
        return np.sort(rng.choice(n, size=targets, replace=False))
    idx = np.asarray(targets, dtype=np.int64)
    bad = idx[(idx < 0) | (idx >= n)]
    if bad.size:
        raise ConfigError(TARGET_INDEX.format(index=int(bad[0]), last=n - 1))
    return idx


def _target_count(targets: int | list[int]) -> int:
    return targets if isinstance(targets, int) else len(targets)


def decide_from_steps(steps: np.ndarray, n: int, decimals: int | None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Decide a_j from unit steps (+1/N1 -> 1, -1/N0 -> 0) and recover N0, N1.

    Returns ``(a_hat, decided, info)``. A step that rounds to zero carries no
    sign: its individual is undecided and guessed as the advantaged group.
    """
    decided = steps != 0
    a_hat = np.where(steps > 0, 1, 0).astype(np.int8)
    a_hat[~decided] = 1
    sizes = sizes_from_unit_steps(steps[decided], n, decimals)
    info: dict[str, Any] = {"N1_candidates": len(sizes.candidates_n1)}
    if not sizes.candidates_n1:
        raise AttackError("the answer differences fit no pair of group sizes: answers are not exact unit steps "
                          "(noisy or inconsistent); use a noise-robust attack")
    if sizes.identified:
        info.update(N0=sizes.N0, N1=sizes.N1)
    if not decided.all():
        info["warning"] = SIGN_LOST.format(count=int((~decided).sum()), total=steps.size)
    return a_hat, decided, info


class _Stepwise:
    """Progress of a targeted attack: each answered target is pinned down by the sign of its step."""

    _targets: np.ndarray | None = None
    _steps: tuple[float, np.ndarray] = (0.0, np.empty(0))  # (reference answer, sign direction per target)
    _received: list[float]
    _reported = 0  # answers already reported by :meth:`progress`

    def progress(self) -> Reconstruction | None:
        """The targets answered since the previous call, each pinned down by the sign of its step."""
        done, k = self._reported, len(getattr(self, "_received", ()))
        if self._targets is None or k == done:
            return None
        reference, direction = self._steps
        steps = (np.asarray(self._received[done:]) - reference) * direction[done:k]
        self._reported = k
        return Reconstruction(self._targets[done:k], np.where(steps > 0, 1, 0).astype(np.int8), steps != 0,
                              queries=k)


@register_attack
class SingleQuery(TargetsInAudit, _Stepwise, Attack[TargetedParams]):
    """Example 1: one contrived model per target that accepts only that individual."""

    name = "single-query"
    Params = TargetedParams
    summary = "one model accepting only the target; the sign of SP reveals a_j (Example 1)"

    def planned_queries(self) -> int:
        """One model per target."""
        return _target_count(self.params.targets)

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        n = self.view.n
        idx = choose_targets(self.params.targets, n, self.rng)
        H = np.zeros((idx.size, n))
        H[np.arange(idx.size), idx] = 1.0
        self._targets, self._steps, self._received = idx, (0.0, np.ones(idx.size)), []
        steps, decimals = yield from ask("sp", H, self.params.batch, "accept only the target", received=self._received)
        a_hat, decided, info = decide_from_steps(steps, n, decimals)
        info.update(probe_accuracy(H, self.view))
        return Reconstruction(indices=idx, a_hat=a_hat, decided=decided, queries=idx.size, info=info)


@register_attack
class DoubleQuery(TargetsInAudit, _Stepwise, Attack[TargetedParams]):
    """Example 2: the base model and, per target, the base model with that prediction flipped."""

    name = "double-query"
    Params = TargetedParams
    summary = "base model vs the base model flipped at the target; the SP difference reveals a_j (Example 2)"

    def planned_queries(self) -> int:
        """The base model, then one flipped model per target."""
        return _target_count(self.params.targets) + 1

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        n = self.view.n
        idx = choose_targets(self.params.targets, n, self.rng)
        base = self.view.require("base_predictions").astype(np.float64)
        flipped = flip_one(base, idx)
        H = np.vstack([base[None, :], flipped])
        first = yield Probe("sp", base[None, :], "base model", keep=True, name="base")
        # Flipping 0 -> 1 adds an acceptance (+1/N1 or -1/N0); 1 -> 0 removes one.
        direction = 1.0 - 2.0 * base[idx]
        self._targets, self._received = idx, []
        self._steps = (float(np.asarray(first.values, dtype=np.float64).reshape(-1)[0]), direction)
        rest, decimals = yield from ask("sp", flipped, self.params.batch, "base model flipped at one target",
                                        relative_to="base", received=self._received)
        answers = np.concatenate([np.asarray(first.values, dtype=np.float64).reshape(-1), rest])
        steps = (answers[1:] - answers[0]) * direction
        a_hat, decided, info = decide_from_steps(steps, n, decimals)
        info.update(probe_accuracy(H, self.view))
        return Reconstruction(indices=idx, a_hat=a_hat, decided=decided, queries=H.shape[0], info=info)
