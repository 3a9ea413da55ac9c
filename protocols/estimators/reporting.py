"""Individual choice of reporting, t(x, y, a): who withholds A, and the estimates that correct for it.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 6 ("Individual choice of
reporting", Prop. 2). Each individual (x, y, a) reports their attribute with
probability t(x, y, a) in (0, 1]; T is the reporting indicator,
P(T = 1 | X = x, Y = y, A = a) = t(x, y, a). Reporting at random (t = beta,
Lemma 3) is the constant case.

Prop. 2: if T and E1 are conditionally independent given {A, E2}, the
reporters' estimate P^{S_l}(E1 | E2, A = a) is consistent for
P(E1 | E2, A = a). For equalized odds (E1 = {Y-hat = 1}, E2 = {Y = y}) and a
predictor of X alone this holds for every t that depends on (y, a) only (the
paper's t_1: Y x A -> (0, 1]); for demographic parity (E2 = everything) t
must depend on a only. When t also depends on x, T and Y-hat = h(X) are
dependent given (A, E2) and the reporters' estimate is biased in general.

The correction for a known t is inverse-probability weighting (Horvitz and
Thompson): a reporter stands for 1 / t(x_i, y_i, a_i) people. The data center
sees the randomized-response release z_i, not a_i, so the weight of reporter i
in group a is W[a, z_i] / t(x_i, y_i, a) with W = Pi^{-1} (Sec. 4). Since the
randomized-response coins are independent of the reporting coin and
E[W[a, Z] | A] = 1(A = a),

    E[T W[a, Z] f(X, Y) / t(X, Y, a)] = E[t(X, Y, A) 1(A = a) f(X, Y) / t(X, Y, a)] = E[1(A = a) f(X, Y)]

for any f, so numerator and denominator of

    gamma^_{c,a} = sum_{i in S_l} e2_c(i) e1(i) W[a, z_i] / t(x_i, y_i, a)
                   / sum_{i in S_l} e2_c(i) W[a, z_i] / t(x_i, y_i, a)

are unbiased estimates of n P(E1, E2 = c, A = a) and n P(E2 = c, A = a), and
the ratio is consistent for every t > 0, whether or not Prop. 2's condition
holds. For a constant t the weights cancel and gamma^ is the reporters'
debiased estimate of Sec. 4. A wrong t makes it inconsistent again.

The reporting function here is

    t(x, y, a) = r e^{s x_j} / (1 - r + r e^{s x_j}),   r = table[y][a],

i.e. logit t = logit table[y][a] + s x_j: ``table`` is t(y, a) when the slope
s is 0, and a positive s makes people with a large feature j report more often.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from parley.protocols.errors import QueryError
from parley.protocols.estimators.rr_estimators import (
    WITHHELD,
    _events,
    discrimination,
    rr_matrix,
)

__all__ = ["BAD_FEATURE", "BAD_TABLE", "NO_FEATURE", "ReportingFunction", "ReportingRates", "report",
           "reporting_rates"]

BAD_TABLE = ("reporting.table must be 2 rows (y = 0, 1) of k >= 2 probabilities in (0, 1], one per group "
             "(t(y, a) of Prop. 2); got {value!r}")
NO_FEATURE = "reporting.slope is {slope!r}: name the column of X it applies to in reporting.feature"
BAD_FEATURE = "reporting.feature is column {feature} but X has {columns} column(s)"
BAD_LABELS = "y must be a vector of labels 0 or 1 (t(x, y, a) has a row per label); found {bad!r}"
BAD_INPUTS = "X, y and a (or z) must describe the same n individuals; got X {x}, y {y}, a {a}"
GROUPS_MISMATCH = "the reporting table has {table} groups but the release has {groups}"
BAD_CODES = "z must hold codes 0..{last} or -1 (withheld); found {bad!r}"
NO_REPORTS = "no individual reported an attribute: nothing to estimate from"


class ReportingFunction(BaseModel):
    """t(x, y, a) = P(T = 1 | x, y, a): logit t = logit table[y][a] + slope * x[feature] (Sec. 6, Prop. 2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table: tuple[tuple[float, ...], ...] = Field(
        ..., description="t(y, a) at slope 0: row y = 0, 1, one probability in (0, 1] per group a")
    feature: int | None = Field(None, ge=0, description="column j of X that t depends on (with slope != 0)")
    slope: float = Field(0.0, allow_inf_nan=False, description="s in logit t = logit table[y][a] + s x_j")

    @field_validator("table", mode="before")
    @classmethod
    def _table(cls, value: Any) -> Any:
        try:
            rows = [[float(v) for v in row] for row in value]
        except (TypeError, ValueError):
            raise ValueError(BAD_TABLE.format(value=value)) from None
        if (len(rows) != 2 or len(rows[0]) < 2 or len(rows[1]) != len(rows[0])
                or not all(math.isfinite(v) and 0.0 < v <= 1.0 for row in rows for v in row)):
            raise ValueError(BAD_TABLE.format(value=value))
        return tuple(tuple(row) for row in rows)

    @model_validator(mode="after")
    def _feature(self) -> ReportingFunction:
        if self.slope != 0.0 and self.feature is None:
            raise ValueError(NO_FEATURE.format(slope=self.slope))
        return self

    @classmethod
    def constant(cls, beta: float, groups: int) -> ReportingFunction:
        """Reporting at random with probability beta (Lemma 3)."""
        return cls(table=((beta,) * groups, (beta,) * groups), feature=None, slope=0.0)

    @property
    def groups(self) -> int:
        return len(self.table[0])

    @property
    def depends_on_x(self) -> bool:
        return self.slope != 0.0

    def meets_prop2(self, notion: str) -> bool:
        """Does T satisfy Prop. 2's condition (T independent of E1 given A, E2) for every predictor of X?

        True when t depends on a only (any notion), or on (y, a) only for equalized odds (E2 = {Y = y}).
        A t that depends on x breaks it for a predictor that reads that feature.
        """
        if self.depends_on_x:
            return False
        if self.table[0] == self.table[1]:
            return True
        return notion == "equalized_odds"

    def candidates(self, X: np.ndarray | None, y: np.ndarray) -> np.ndarray:
        """(n, k) array of t(x_i, y_i, a) for every group a (what a data center without A can evaluate)."""
        y = np.asarray(y).astype(np.int64)
        if y.ndim != 1 or (y.size and (y.min() < 0 or y.max() > 1)):
            raise QueryError(BAD_LABELS.format(bad=sorted(set(np.ravel(y).tolist()) - {0, 1})[:5]))
        table = np.asarray(self.table, dtype=np.float64)        # (2, k)
        base: np.ndarray = table[y]                             # (n, k)
        if not self.depends_on_x:
            return base
        X = np.asarray(X, dtype=np.float64) if X is not None else None
        if self.feature is None or X is None or X.ndim != 2 or X.shape[0] != y.shape[0]:
            raise QueryError(BAD_INPUTS.format(x=None if X is None else X.shape, y=y.shape, a="-"))
        if self.feature >= X.shape[1]:
            raise QueryError(BAD_FEATURE.format(feature=self.feature, columns=X.shape[1]))
        odds = np.exp(np.clip(self.slope * X[:, self.feature], -700.0, 700.0))[:, None]
        out: np.ndarray = base * odds / (1.0 - base + base * odds)
        return out

    def probabilities(self, X: np.ndarray | None, y: np.ndarray, a: np.ndarray) -> np.ndarray:
        """t(x_i, y_i, a_i) of every individual (needs the true A: the individual's own coin)."""
        a = np.asarray(a).astype(np.int64)
        every = self.candidates(X, y)
        if a.shape != (every.shape[0],) or (a.size and (a.min() < 0 or a.max() >= self.groups)):
            raise QueryError(BAD_INPUTS.format(x=None if X is None else np.shape(X), y=np.shape(y), a=a.shape))
        return np.asarray(every[np.arange(a.shape[0]), a], dtype=np.float64)


def report(reporting: ReportingFunction, X: np.ndarray | None, y: np.ndarray, a: np.ndarray,
           rng: np.random.Generator) -> np.ndarray:
    """T_i ~ Bernoulli(t(x_i, y_i, a_i)): who reports (bool, (n,)). ``rng`` must be the reporter's own coins."""
    t = reporting.probabilities(X, y, a)
    reported: np.ndarray = rng.random(t.shape[0]) < t
    return reported


@dataclass(frozen=True)
class ReportingRates:
    """Group rates of one notion from the reporters: Prop. 2's estimate and the t-corrected one.

    ``reporters_only`` is P^{S_l}(E1 | E2, A = a), debiased for the release (Sec. 4) and nothing else:
    consistent when Prop. 2's condition holds. ``corrected`` weighs reporter i in group a by
    W[a, z_i] / t(x_i, y_i, a): consistent for the t it was given.
    """

    notion: str
    conditions: tuple[str, ...]
    corrected: np.ndarray       # (conditions, k)
    reporters_only: np.ndarray  # (conditions, k)
    reporters: int

    @property
    def corrected_gap(self) -> float:
        return discrimination(self.corrected)

    @property
    def reporters_only_gap(self) -> float:
        return discrimination(self.reporters_only)


def group_weights(reporting: ReportingFunction | None, X: np.ndarray | None, y: np.ndarray, z: np.ndarray,
                  epsilon: float, groups: int) -> np.ndarray:
    """(k, n) weights omega[a, i] = 1(i reported) W[a, z_i] / t(x_i, y_i, a) (W = Pi^{-1}); t = 1 if None."""
    z = np.asarray(z).astype(np.int64)
    bad = (z < WITHHELD) | (z >= groups)
    if bad.any():
        raise QueryError(BAD_CODES.format(last=groups - 1, bad=sorted(set(z[bad].tolist()))[:5]))
    reported = z != WITHHELD
    if not reported.any():
        raise QueryError(NO_REPORTS)
    W = np.linalg.inv(rr_matrix(epsilon, groups))
    omega = W[:, np.where(reported, z, 0)] * reported          # (k, n)
    if reporting is not None:
        if reporting.groups != groups:
            raise QueryError(GROUPS_MISMATCH.format(table=reporting.groups, groups=groups))
        omega = omega / reporting.candidates(X, y).T
    out: np.ndarray = omega
    return out


def reporting_rates(notion: str, predictions: np.ndarray, X: np.ndarray | None, y: np.ndarray, z: np.ndarray,
                    epsilon: float, groups: int, reporting: ReportingFunction) -> ReportingRates:
    """Group rates of ``notion`` corrected for the reporting function ``reporting`` (and Prop. 2's, beside).

    Parameters
    ----------
    predictions : array (n,)
        Y-hat(x_i) in {0, 1} or P(Y-hat = 1 | x_i), for *everyone* (reporters or not); a predictor of X.
    X, y : arrays (n, d), (n,)
        What the data center holds of everyone (X only read when t depends on x).
    z : array (n,)
        The release: codes 0..k-1, -1 where withheld.
    epsilon, groups : float, int
        The release's randomized response (``epsilon`` large for an exact A).
    reporting : ReportingFunction
        The t assumed. The estimate is consistent when it is the true one.
    """
    yhat, y, z = (np.asarray(v) for v in (predictions, y, z))
    if not (yhat.shape == y.shape == z.shape) or yhat.ndim != 1:
        raise QueryError(BAD_INPUTS.format(x=None if X is None else np.shape(X), y=y.shape, a=z.shape))
    yhat = yhat.astype(np.float64)
    conditions, e1, e2 = _events(notion, yhat, y)
    out = []
    for given in (reporting, None):
        omega = group_weights(given, X, y, z, epsilon, groups).T     # (n, k)
        both = (e2 * e1[None, :]) @ omega                            # (c, k)
        cond = e2 @ omega
        with np.errstate(divide="ignore", invalid="ignore"):
            out.append(both / cond)
    return ReportingRates(notion, conditions, out[0], out[1], int(np.count_nonzero(z != WITHHELD)))
