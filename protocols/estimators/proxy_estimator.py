"""Equalized-odds rates from a probabilistic proxy of A: the estimator (15) of the private-demographics paper.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 6 ("Trade-offs and proxies").
When the protected attribute is missing, a learner may hold a proxy: for every
individual a distribution over groups. Sec. 6 points out that the proxy
P(A | X) alone gives inconsistent equalized-odds estimates whenever A is not
a function of X, and proposes instead, with the proxy P(A | X, Y),

    gamma~_ya = sum_i Y-hat(x_i) 1(y_i = y) P(A = a | x_i, y_i)
                / sum_i 1(y_i = y) P(A = a | x_i, y_i),                    (15)

which Lemma 4 shows consistent for gamma_ya = P(Y-hat = 1 | Y = y, A = a):
numerator and denominator are empirical means of E[Y-hat 1(Y = y) 1(A = a) | X, Y]
and E[1(Y = y) 1(A = a) | X, Y], because Y-hat is a function of X.
"""

from __future__ import annotations

import numpy as np

from parley.protocols.errors import QueryError

__all__ = ["proxy_rates"]

BAD_PROXY = "proxy must be an (n, k) array of probabilities whose rows sum to 1, n = {n}; got shape {shape}"
BAD_PROXY_LENGTHS = "predictions and y must have the same length n; got {lengths}"
EMPTY_CELL = "no weight in cell y={y}, a={a}: the proxy puts no mass on that group among Y = {y}"


def proxy_rates(predictions: np.ndarray, y: np.ndarray, proxy: np.ndarray) -> np.ndarray:
    """Estimator (15): gamma~[y, a] = P~(Y-hat = 1 | Y = y, A = a) from the proxy P(A = a | x_i, y_i).

    Parameters
    ----------
    predictions : array (n,)
        Y-hat(x_i) in {0, 1}, or P(Y-hat = 1 | x_i) of a randomized predictor (expected counts).
    y : array (n,)
        Labels in {0, 1}.
    proxy : array (n, k)
        Row i is P(A = . | x_i, y_i). Lemma 4's consistency needs the proxy given X *and* Y;
        a proxy given X alone makes the estimate inconsistent unless A is a function of X.

    Returns
    -------
    numpy.ndarray (2, k)
        Rows y = 0, 1 (false and true positive rates), columns a = 0..k-1.
    """
    yhat, y = np.asarray(predictions, dtype=np.float64), np.asarray(y)
    proxy = np.asarray(proxy, dtype=np.float64)
    if yhat.shape != y.shape or yhat.ndim != 1:
        raise QueryError(BAD_PROXY_LENGTHS.format(lengths=[yhat.shape, y.shape]))
    if (proxy.ndim != 2 or proxy.shape[0] != y.shape[0] or proxy.shape[1] < 2 or (proxy < 0).any()
            or not np.allclose(proxy.sum(axis=1), 1.0)):
        raise QueryError(BAD_PROXY.format(n=y.shape[0], shape=proxy.shape))
    out = np.empty((2, proxy.shape[1]))
    for label in (0, 1):
        weights = proxy * (y == label)[:, None]        # 1(y_i = y) P(A = a | x_i, y_i): (n, k)
        mass = weights.sum(axis=0)
        if (mass <= 0).any():
            raise QueryError(EMPTY_CELL.format(y=label, a=int(np.argmin(mass))))
        out[label] = yhat @ weights / mass
    return out
