"""Floating-point-safe Laplace noise: Mironov's snapping mechanism.

Mironov (CCS 2012, "On Significance of the Least Significant Bits for
Differential Privacy", Sec. 3-4) shows that the textbook sampler
``x + lambda * ln(U)`` in double precision leaks its input: the set of doubles
it can output depends on ``x`` (``ln`` and the product are rounded, and ``U``
takes only multiples of 2^-53), so an observer who checks which input can
produce an observed release tells neighbouring inputs apart, often with
certainty. numpy's ``Generator.laplace`` is such a textbook sampler.

The snapping mechanism (Sec. 5.2, Def. in Eq. (7)) releases

    clamp_B( round_Lambda( clamp_B(x) + S * lambda * LN(U*) ) )

where ``U*`` is uniform on the doubles in (0, 1) with each double drawn with the
probability of the real interval that rounds to it (exponent geometric, 52
random mantissa bits), ``S`` a fair random sign, ``LN`` the floating-point
natural logarithm, ``Lambda`` the smallest power of two >= ``lambda``, and
``round_Lambda`` rounding to the nearest multiple of ``Lambda`` (exact for a
power of two). Theorem 1 (Sec. 5.2): for a function of sensitivity 1 and
``lambda < B < 2^46 * lambda``, the mechanism is
``(1/lambda + 2^-49 * B / lambda)``-differentially private, assuming ``LN`` is
correctly rounded (glibc's ``log``, which numpy calls, is documented to be within
one ulp and is correctly rounded in practice; this is the one assumption the
implementation cannot check).

Sensitivity Delta is handled by snapping ``x / Delta`` (sensitivity 1, up to
one rounding of the division, which moves a value by at most
``2^-53 * B`` and so adds at most ``2^-52 * B`` to the sensitivity) and
multiplying the release by Delta (post-processing). To spend at most the target
epsilon, lambda is chosen as ``(1 + 2^-48 * B) / epsilon``, which covers
Theorem 1's ``2^-49 * B / lambda`` term and the division's rounding.

Cost. The output lies on the grid of multiples of ``Lambda * Delta`` (Lambda < 2
lambda), so it adds rounding error of variance at most ``Lambda^2 / 12 <
lambda^2 / 3`` to the Laplace variance ``2 lambda^2`` (in units of Delta), and
the clamp at B truncates the tails beyond B (B defaults to 32 lambda above the
metric's range, where the Laplace tail mass is e^-32).
"""

from __future__ import annotations

import math

import numpy as np

from parley.protocols.errors import ConfigError

__all__ = ["snapping_laplace", "snapping_lambda", "uniform_doubles", "textbook_laplace"]

BAD_BOUND = "snapping needs lambda < B < 2^46 lambda (Mironov 2012, Thm. 1); got lambda={lam!r}, B={bound!r}"
#: Default clamp bound B in units of lambda, beyond the metric's own range.
TAIL_SCALES = 32.0


def uniform_doubles(rng: np.random.Generator, size: int) -> np.ndarray:
    """U* of Sec. 5.2: doubles in (0, 1), each with the probability mass of the reals that round down to it.

    A real uniform in (0, 1) lies in [2^-e, 2^-e+1) with probability 2^-e (e >= 1,
    geometric), and within that binade it is uniform, so its 52 mantissa bits are
    uniform: U* = (1 + M 2^-52) 2^-e. Unlike a multiple of 2^-53, U* reaches every
    double down to 2^-1074 with the right weight. (A geometric e beyond 1022
    would need subnormals; its probability is 2^-1022.)
    """
    exponent = rng.geometric(0.5, size=size)
    mantissa = rng.integers(0, 1 << 52, size=size, dtype=np.int64)
    return np.ldexp(1.0 + mantissa.astype(np.float64) * 2.0**-52, -exponent)


def snapping_lambda(epsilon: float, bound: float) -> float:
    """lambda (in units of the sensitivity) so that the snapped release costs at most ``epsilon``."""
    return (1.0 + 2.0**-48 * bound) / epsilon


def snapping_laplace(exact: np.ndarray, sensitivity: float, epsilon: float, value_bound: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, dict[str, float]]:
    """epsilon-DP release of ``exact`` (l1 sensitivity ``sensitivity``) by the snapping mechanism.

    Parameters
    ----------
    exact : ndarray
        The exact values; each coordinate is snapped with its own noise (the
        l1 sensitivity of the vector is ``sensitivity``, so one lambda serves all).
    sensitivity : float
        l1 sensitivity Delta of ``exact``.
    epsilon : float
        Target privacy loss of the whole release.
    value_bound : float
        A bound on |exact| (the metric's range); B adds 32 lambda to it.
    rng : numpy.random.Generator
        Source of U* and the signs.

    Returns
    -------
    values : ndarray
        The release, on the grid of multiples of ``Lambda * sensitivity``.
    notes : dict
        lambda (in units of Delta), Lambda, B, the effective Laplace scale and
        the epsilon Theorem 1 guarantees (at most ``epsilon``).
    """
    x = np.asarray(exact, dtype=np.float64) / sensitivity
    # B must exceed lambda; lambda depends on B only through a 2^-48 B term, so one fixed-point step suffices.
    lam = 1.0 / epsilon
    bound = value_bound / sensitivity + TAIL_SCALES * lam
    lam = snapping_lambda(epsilon, bound)
    bound = value_bound / sensitivity + TAIL_SCALES * lam
    if not lam < bound < 2.0**46 * lam:
        raise ConfigError(BAD_BOUND.format(lam=lam, bound=bound))
    grid = 2.0 ** math.ceil(math.log2(lam))  # Lambda: the smallest power of two >= lambda
    u = uniform_doubles(rng, x.size).reshape(x.shape)
    sign = np.where(rng.integers(0, 2, size=x.shape) == 1, 1.0, -1.0)
    noisy = np.clip(x, -bound, bound) + sign * lam * np.log(u)
    # Division and multiplication by a power of two are exact, so rint rounds to the nearest multiple of Lambda.
    snapped = np.clip(np.rint(noisy / grid) * grid, -bound, bound)
    guaranteed = 1.0 / lam + 2.0**-49 * bound / lam + 2.0**-52 * bound / lam
    return snapped * sensitivity, {"snap_lambda": float(lam), "snap_grid": float(grid * sensitivity),
                                   "snap_bound": float(bound * sensitivity), "epsilon_guaranteed": float(guaranteed)}


def textbook_laplace(exact: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """The textbook sampler numpy implements: x + Lap(scale).

    The laplace protocol's default, and the one the attack breaks.
    """
    return np.asarray(exact, dtype=np.float64) + rng.laplace(0.0, scale, size=np.shape(exact))
