"""A fairness constraint whose group rates are weighted sums over the training rows, as a fairlearn ``Moment``.

Sec. 6 of the private-demographics paper (Mozannar, Ohannessian & Srebro, ICML
2020) estimates a group rate in three ways that share one form: with weights
omega[a, i] of row i in group a,

    gamma_{e,a}(h) = sum_{i in e} omega[a, i] h(x_i) / sum_{i in e} omega[a, i],

where e is the event of the notion (Y = y for equalized odds, everyone for
demographic parity). The debiased reporters' estimate of Sec. 4 takes
omega[a, i] = 1(i reported) W[a, z_i]; the correction for an individual
reporting function t (:mod:`parley.protocols.estimators.reporting`) divides
that by t(x_i, y_i, a); the proxy estimator (15) takes
omega[a, i] = P(A = a | x_i, y_i). The form is linear in h, so the constraint
M gamma - alpha of (14) is the matrix G of those linear forms and fairlearn's
``ExponentiatedGradient`` solves the Lagrangian unchanged; the objective is the
error over every row. Imported lazily: it imports fairlearn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd

from parley.parties.learners.debiased_moment import LinearParity
from parley.protocols.errors import QueryError

__all__ = ["EMPTY_WEIGHT", "WeightedParity", "weighted_constraint_matrix"]

EMPTY_WEIGHT = ("the weight of group {a} among rows with {event} is {mass:.3g} <= 0: too few rows carry "
                "information on that group (raise epsilon or train_size)")

Constraint = Literal["equalized_odds", "demographic_parity"]
#: omega(X, y, z) -> (k, n) weights of every row in every group.
Weights = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def weighted_constraint_matrix(constraint: Constraint, y: np.ndarray,
                               omega: np.ndarray) -> tuple[np.ndarray, pd.MultiIndex]:
    """G with (G h)[s, e, a] = +-(gamma_{e,a}(h) - gamma_e(h)); gamma_e weighs row i by sum_a omega[a, i].

    Returns G (2 * events * k, n) and the MultiIndex (sign, event, group_id), the "+" rows first.
    """
    y = np.asarray(y)
    omega = np.asarray(omega, dtype=np.float64)
    if constraint == "equalized_odds":
        events = [("label=0", y == 0), ("label=1", y == 1)]
    else:
        events = [("all", np.ones(y.shape, bool))]
    person = omega.sum(axis=0)                                  # each row's total weight
    plus, keys = [], []
    for name, in_event in events:
        total = float((person * in_event).sum())
        if total <= 0:
            raise QueryError(EMPTY_WEIGHT.format(a="(all)", event=name, mass=total))
        base = person * in_event / total                        # gamma_e(h) = base . h
        for a in range(omega.shape[0]):
            w = omega[a] * in_event
            mass = float(w.sum())
            if mass <= 0:
                raise QueryError(EMPTY_WEIGHT.format(a=a, event=name, mass=mass))
            plus.append(w / mass - base)
            keys.append((name, a))
    G = np.vstack([np.asarray(plus), -np.asarray(plus)])
    index = pd.MultiIndex.from_tuples([(s, e, a) for s in ("+", "-") for e, a in keys],
                                      names=["sign", "event", "group_id"])
    return G, index


class WeightedParity(LinearParity):
    """M gamma(h) - alpha with gamma from the weights ``weights(X, y, z)`` (see the module docstring).

    ``sensitive_features`` passed to ``fit`` are the release's codes (-1 where withheld); ``weights``
    turns them (with X and y) into omega. fairlearn's signed weights are -n (G^T lambda)_i, the
    convention of its ``UtilityParity``, as in :class:`parley.parties.learners.debiased_moment.DebiasedParity`.
    """

    short_name = "WeightedParity"

    def __init__(self, constraint: Constraint, weights: Weights, alpha: float = 0.01) -> None:
        super().__init__()
        self.constraint, self.weights, self.alpha = constraint, weights, float(alpha)

    def load_data(self, X: Any, y: Any, *, sensitive_features: Any) -> None:
        y = pd.Series(np.asarray(y).astype(np.int64))
        z = np.asarray(sensitive_features).astype(np.int64)
        super().load_data(X, y, sensitive_features=pd.Series(z, index=y.index))
        omega = self.weights(np.asarray(X, dtype=np.float64), y.to_numpy(), z)
        self.G, self._index = weighted_constraint_matrix(self.constraint, y.to_numpy(), omega)
