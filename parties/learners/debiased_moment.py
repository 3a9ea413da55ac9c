"""The constraint of the two-dataset Lagrangian (14) as a fairlearn ``Moment``.

Sec. 6 of the private-demographics paper.

Mozannar, Ohannessian & Srebro, ICML 2020. M gamma^{S_l}(h) - alpha for a
classifier h of X, with gamma^{S_l} read from the reporters S_l only (rows with
a released code; withheld rows, code -1, carry no constraint weight) and,
since the reporters' codes are a randomized-response release, debiased as in
Sec. 4 with W = Pi^{-1}:

    gamma~_{e,a}(h) = sum_{i in S_l, e_i = e} W[a, z_i] h(x_i) / sum_{i in S_l, e_i = e} W[a, z_i].

Each constraint is a linear form in (h(x_1), ..., h(x_n)), so the moment is the
matrix G of those forms: gamma = G h. The objective err^S is fairlearn's
``ErrorRate`` over every row. Imported lazily: it imports fairlearn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd
from fairlearn.reductions import ClassificationMoment, ErrorRate

from parley.protocols.errors import QueryError
from parley.protocols.estimators.rr_estimators import WITHHELD, rr_matrix

__all__ = ["BAD_CODES", "EMPTY_GROUP", "NO_REPORTERS", "DebiasedParity", "LinearParity", "constraint_matrix"]

NO_REPORTERS = "no individual of the training set reported an attribute: the constraint of (14) has no data"
EMPTY_GROUP = ("the debiased weight of group {a} among reporters with {event} is {mass:.3g} <= 0: too few "
               "reporters for eps = {epsilon:g} and {groups} groups (raise epsilon, report_probability or train_size)")
BAD_CODES = "z must hold codes 0..{last} or -1 (withheld); found {bad!r}"

Constraint = Literal["equalized_odds", "demographic_parity"]


def constraint_matrix(constraint: Constraint, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int,
                      debiased: bool = True) -> tuple[np.ndarray, pd.MultiIndex]:
    """G with (G h)[s, e, a] = +-(gamma~_{e,a}(h) - gamma_e(h)) on the reporters; zero columns for S_u.

    M of Agarwal et al. (fairlearn's ``EqualizedOdds`` / ``DemographicParity``): every group's
    rate against the reporters' rate gamma_e in the same event e (Y = y, or all), both signs.
    Since the columns of Pi^{-1} sum to 1, sum_a P~(a | e) gamma~_{e,a} = gamma_e.

    Returns
    -------
    G : numpy.ndarray (2 * events * k, n)
    index : pandas.MultiIndex of (sign, event, group_id), the "+" rows first.
    """
    y, z = np.asarray(y), np.asarray(z).astype(np.int64)
    bad = (z < WITHHELD) | (z >= groups)
    if bad.any():
        raise QueryError(BAD_CODES.format(last=groups - 1, bad=sorted(set(z[bad].tolist()))[:5]))
    reported = z != WITHHELD
    if not reported.any():
        raise QueryError(NO_REPORTERS)
    W = np.linalg.inv(rr_matrix(epsilon, groups)) if debiased else np.eye(groups)   # W[a, z]
    if constraint == "equalized_odds":
        events = [("label=0", y == 0), ("label=1", y == 1)]
    else:
        events = [("all", np.ones(y.shape, bool))]
    weight_of = W[:, np.where(reported, z, 0)] * reported        # (k, n): W[a, z_i] on S_l, 0 on S_u
    plus, keys = [], []
    for name, in_event in events:
        rows = reported & in_event
        base = rows / max(int(rows.sum()), 1)                   # gamma_e(h) = base . h
        for a in range(groups):
            w = weight_of[a] * in_event
            mass = float(w.sum())                               # n_l P~(e, A = a) = (Pi^{-1} counts of e by Z)[a]
            if mass <= 0:
                raise QueryError(EMPTY_GROUP.format(a=a, event=name, mass=mass, epsilon=epsilon, groups=groups))
            plus.append(w / mass - base)
            keys.append((name, a))
    G = np.vstack([np.asarray(plus), -np.asarray(plus)])
    index = pd.MultiIndex.from_tuples([(s, e, a) for s in ("+", "-") for e, a in keys],
                                      names=["sign", "event", "group_id"])
    return G, index


class LinearParity(ClassificationMoment):
    """A constraint M gamma(h) - alpha whose gammas are linear in h, ``G h``, with G set by ``load_data``.

    Subclasses set ``self.G`` and ``self._index`` (sign, event, group_id) in ``load_data``; the objective
    is the error over every row (err^S of (14): reporter or not).
    """

    alpha: float
    G: np.ndarray
    _index: pd.MultiIndex

    def default_objective(self) -> ErrorRate:
        """err^S of (14): every row, reporter or not."""
        return ErrorRate()

    @property
    def index(self) -> pd.MultiIndex:
        return self._index

    def gamma(self, predictor: Callable[[Any], Any]) -> pd.Series:
        h = np.squeeze(np.asarray(predictor(self.X), dtype=np.float64))
        return pd.Series(self.G @ h, index=self._index)

    def bound(self) -> pd.Series:
        return pd.Series(self.alpha, index=self._index)

    def project_lambda(self, lambda_vec: pd.Series) -> pd.Series:
        """The identity: a valid projection (it never lowers the Lagrangian), as fairlearn's for ratio bounds."""
        return lambda_vec

    def signed_weights(self, lambda_vec: pd.Series) -> pd.Series:
        weights = -self.total_samples * (self.G.T @ lambda_vec.reindex(self._index).to_numpy(dtype=np.float64))
        return pd.Series(weights, index=self.tags.index)


class DebiasedParity(LinearParity):
    """M gamma~^{S_l}(h) - alpha of (14): rows of S_u get no constraint weight.

    ``sensitive_features`` passed to ``fit`` are the release's codes, -1 for S_u.
    fairlearn's signed weights are -n d(lambda^T gamma)/dh_i = -n (G^T lambda)_i, the
    convention of its ``UtilityParity`` (the objective's are 2 y_i - 1), so the learner's
    best response is the cost-sensitive problem Sec. 6 describes: misclassification cost
    alone on S_u, plus the constraint's term on S_l.

    Parameters
    ----------
    constraint : {"equalized_odds", "demographic_parity"}
    epsilon, groups : float, int
        The release's mechanism (Pi).
    alpha : float
        The slack alpha of (14).
    debiased : bool
        W = Pi^{-1} (rates w.r.t. A, Sec. 4) or W = I (rates w.r.t. Z read as A).
    """

    short_name = "DebiasedParity"

    def __init__(self, constraint: Constraint, epsilon: float, groups: int, alpha: float = 0.01,
                 debiased: bool = True) -> None:
        super().__init__()
        self.constraint, self.epsilon, self.groups = constraint, float(epsilon), int(groups)
        self.alpha, self.debiased = float(alpha), bool(debiased)

    def load_data(self, X: Any, y: Any, *, sensitive_features: Any) -> None:
        y = pd.Series(np.asarray(y).astype(np.int64))
        z = np.asarray(sensitive_features).astype(np.int64)
        super().load_data(X, y, sensitive_features=pd.Series(z, index=y.index))
        self.G, self._index = constraint_matrix(self.constraint, y.to_numpy(), z, self.epsilon, self.groups,
                                                self.debiased)
