"""Fairness statistics from randomized-response releases: debiased and naive estimators.

Mozannar, Ohannessian & Srebro, "Fair Learning with Private Demographic Data",
ICML 2020 (the private-demographics paper), Sec. 3-4.

k-ary randomized response (Sec. 3) releases Z with Q(z | a) = pi if z = a and
pi_bar = (1 - pi) / (k - 1) otherwise, pi = e^eps / (k - 1 + e^eps). Let Pi be
the k x k matrix with pi on the diagonal and pi_bar elsewhere.

Every fairness notion of Def. 1 is a conditional probability
gamma_a = P(E1 | E2, A = a) for events E1, E2 of (X, Y, Y-hat) (eq. (1)).
The naive estimator reads Z as if it were A: q_a = P^S(E1 | E2, Z = a). It is
biased: by eq. (3), q = P gamma with P row-stochastic, so every q_a is pulled
towards the others and the gaps are shrunk by roughly a factor (pi - pi_bar).

The debiased estimator inverts the mechanism. Since Z depends on A only (Y-hat
is a function of X, Prop. 1), P(E, Z = .) = Pi P(E, A = .) for any event E of
(X, Y, Y-hat), hence

    P~(E1, E2, A = .) = Pi^{-1} P^S(E1, E2, Z = .),
    P~(E2, A = .)     = Pi^{-1} P^S(E2, Z = .),
    gamma~_a          = P~(E1, E2, A = a) / P~(E2, A = a).

This is exactly Sec. 4's estimator (plug P~_{ya} = Pi_k^{-1} Q_{y.} into the
matrix P of eq. (2) and solve q = P gamma): multiplying eq. (3) through by
P^S(E2, Z = i) gives P^S(E1, E2, Z = .) = Pi P(E1, E2, A = .), the first line
above. Lemma 1 bounds its error for EO by sqrt(log(16/delta) / (2n)) * 4 C^2 /
min_ya P_ya^2 with C = (k - 2 + e^eps) / (e^eps - 1): an O(n^{-1/2}) rate whose
constant grows like eps^{-2} for small eps.

Withheld attributes (Sec. 6, partial reporting) are coded Z = -1 and left out:
by Prop. 2 the estimate on the reporters is consistent when reporting is
independent of E1 given (A, E2) (e.g. reporting at random).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from parley.protocols.errors import QueryError

__all__ = ["FAIRNESS_NOTIONS", "WITHHELD", "GroupRates", "discrimination", "group_rates", "privatize",
           "rr_keep_probability", "rr_matrix", "privacy_penalty", "debias_joint"]

#: Code of an attribute its owner chose not to report (Sec. 6).
WITHHELD = -1

Notion = Literal["equalized_odds", "demographic_parity", "accuracy_parity", "predictive_rate_parity"]
#: The fairness notions of Def. 1 and the conditions E2 each is made of.
FAIRNESS_NOTIONS: tuple[str, ...] = ("equalized_odds", "demographic_parity", "accuracy_parity",
                                     "predictive_rate_parity")

BAD_EPSILON = "epsilon must be a finite number > 0, got {value!r}"
BAD_GROUPS = "groups must be an integer >= 2, got {value!r}"
BAD_NOTION = "notion must be one of {known}, got {value!r}"
BAD_CODES = "z must hold integer codes in 0..{last} (or -1 for withheld); found {bad!r}"
BAD_LENGTHS = "predictions, y and z must have the same length; got {lengths}"
NO_REPORTS = "no individual reported an attribute: nothing to estimate from"


def rr_keep_probability(epsilon: float, groups: int) -> float:
    """pi = e^eps / (k - 1 + e^eps): the chance that randomized response reports the true group (Sec. 3)."""
    _check(epsilon, groups)
    # 1 / (1 + (k - 1) e^-eps) is the same number without overflow for large eps.
    return 1.0 / (1.0 + (groups - 1) * math.exp(-epsilon))


def rr_matrix(epsilon: float, groups: int) -> np.ndarray:
    """Pi[z, a] = Q(Z = z | A = a): pi on the diagonal, (1 - pi) / (k - 1) elsewhere (symmetric)."""
    pi = rr_keep_probability(epsilon, groups)
    out = np.full((groups, groups), (1.0 - pi) / (groups - 1))
    np.fill_diagonal(out, pi)
    return out


def privacy_penalty(epsilon: float, groups: int) -> float:
    """C = (k - 2 + e^eps) / (e^eps - 1) of Sec. 4 (about 1/eps for small eps): the scale Lemma 1 pays."""
    _check(epsilon, groups)
    return (groups - 2 + math.exp(epsilon)) / math.expm1(epsilon)


def privatize(a: np.ndarray, epsilon: float, groups: int, rng: np.random.Generator,
              report_probability: float = 1.0) -> np.ndarray:
    """k-ary randomized response of ``a`` (int8, -1 where the owner withholds it).

    Each entry is kept with probability pi and otherwise replaced by one of the
    k - 1 other groups uniformly; that is eps-LDP (Def. 2): the likelihood ratio
    pi / pi_bar = e^eps. Independently, an owner reports at all with
    probability ``report_probability`` (Sec. 6; 1 = everyone reports).
    """
    a = np.asarray(a)
    if a.size and (a.min() < 0 or a.max() >= groups):
        raise QueryError(BAD_CODES.format(last=groups - 1, bad=sorted(set(a[(a < 0) | (a >= groups)].tolist()))[:5]))
    pi = rr_keep_probability(epsilon, groups)
    keep = rng.random(a.shape[0]) < pi
    # A shift of 1..k-1 modulo k picks one of the other groups uniformly.
    shift = rng.integers(1, groups, size=a.shape[0]) if groups > 2 else np.ones(a.shape[0], dtype=np.int64)
    z = np.where(keep, a, (a + shift) % groups).astype(np.int8)
    if report_probability < 1.0:
        z[rng.random(a.shape[0]) >= report_probability] = WITHHELD
    return z


def debias_joint(counts_z: np.ndarray, epsilon: float, groups: int) -> np.ndarray:
    """P~(E, A = .) = Pi^{-1} P^S(E, Z = .) along the last axis (Sec. 4; may leave [0, 1] on small samples)."""
    # Row vectors times Pi^{-T}; Pi is symmetric, so this is Pi^{-1} applied to each row.
    return np.asarray(counts_z, dtype=np.float64) @ np.linalg.inv(rr_matrix(epsilon, groups)).T


@dataclass(frozen=True)
class GroupRates:
    """Per-group rates gamma[c, a] = P(E1 | E2 = c, A = a) of one notion, debiased and naive.

    ``conditions`` names the rows c (e.g. ``("y=0", "y=1")`` for equalized odds).
    ``debiased`` inverts the mechanism (Sec. 4); ``naive`` treats Z as A.
    """

    notion: str
    conditions: tuple[str, ...]
    debiased: np.ndarray  # (len(conditions), k)
    naive: np.ndarray     # (len(conditions), k)
    reporters: int

    @property
    def debiased_gap(self) -> float:
        """max_{c, a} |gamma~[c, a] - gamma~[c, 0]|: the paper's disc (Sec. 3) of the debiased rates."""
        return discrimination(self.debiased)

    @property
    def naive_gap(self) -> float:
        return discrimination(self.naive)


def discrimination(rates: np.ndarray) -> float:
    """max over conditions c and groups a of |rates[c, a] - rates[c, 0]| (Sec. 3, alpha-EO)."""
    rates = np.atleast_2d(rates)
    return float(np.max(np.abs(rates - rates[:, :1])))


def _events(notion: str, yhat: np.ndarray, y: np.ndarray) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(condition names, E1 weights (n,), E2 weights (c, n)) of a notion; soft ``yhat`` gives expected counts."""
    ones = np.ones_like(yhat)
    if notion == "equalized_odds":      # P(Y-hat = 1 | Y = y, A = a)
        return ("y=0", "y=1"), yhat, np.stack([(y == 0) * ones, (y == 1) * ones])
    if notion == "demographic_parity":  # P(Y-hat = 1 | A = a)
        return ("all",), yhat, ones[None, :]
    if notion == "accuracy_parity":     # P(Y-hat != Y | A = a)
        return ("all",), np.where(y == 1, 1.0 - yhat, yhat), ones[None, :]
    if notion == "predictive_rate_parity":  # P(Y = 1 | Y-hat = y-hat, A = a): false omission rate / precision
        # E1 = {Y = 1} within E2 = {Y-hat = 0} (the false omission rate) and within {Y-hat = 1} (the precision,
        # 1 - the false discovery rate: the same gaps across groups, up to sign).
        return ("yhat=0", "yhat=1"), (y == 1) * 1.0, np.stack([1.0 - yhat, yhat])
    raise QueryError(BAD_NOTION.format(known=", ".join(FAIRNESS_NOTIONS), value=notion))


def group_rates(notion: str, predictions: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float,
                groups: int) -> GroupRates:
    """Debiased and naive group rates of one notion of Def. 1 for predictions that ignore Z.

    Parameters
    ----------
    notion : str
        One of :data:`FAIRNESS_NOTIONS`.
    predictions : array (n,)
        Y-hat in {0, 1}, or P(Y-hat = 1 | x) of a randomized predictor (expected counts are used).
    y : array (n,)
        True labels in {0, 1}.
    z : array (n,)
        The released attribute: codes 0..k-1, -1 where withheld (left out, Sec. 6).
    epsilon, groups : float, int
        The mechanism's parameters (the release states them).
    """
    _check(epsilon, groups)
    yhat, y, z = (np.asarray(v) for v in (predictions, y, z))
    if not (yhat.shape == y.shape == z.shape) or yhat.ndim != 1:
        raise QueryError(BAD_LENGTHS.format(lengths=[yhat.shape, y.shape, z.shape]))
    bad = (z < WITHHELD) | (z >= groups)
    if bad.any():
        raise QueryError(BAD_CODES.format(last=groups - 1, bad=sorted(set(z[bad].tolist()))[:5]))
    keep = z != WITHHELD
    if not keep.any():
        raise QueryError(NO_REPORTS)
    yhat, y, z = yhat[keep].astype(np.float64), y[keep], z[keep]
    conditions, e1, e2 = _events(notion, yhat, y)
    onehot = np.eye(groups)[z]                       # (n, k)
    both = (e2 * e1[None, :]) @ onehot               # counts of E1 and E2 by Z: (c, k)
    cond = e2 @ onehot                               # counts of E2 by Z: (c, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        naive = both / cond
        debiased = debias_joint(both, epsilon, groups) / debias_joint(cond, epsilon, groups)
    return GroupRates(notion, conditions, debiased, naive, int(keep.sum()))


def _check(epsilon: float, groups: int) -> None:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 2:
        raise QueryError(BAD_GROUPS.format(value=groups))
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) or not (
            math.isfinite(epsilon) and epsilon > 0):
        raise QueryError(BAD_EPSILON.format(value=epsilon))
