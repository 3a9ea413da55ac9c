"""Mironov's floating-point attack on the textbook Laplace sampler (CCS 2012, Sec. 4), against numpy.

numpy's ``Generator.laplace(loc, scale)`` draws U = k 2^-53 (k a 53-bit integer)
and returns ``loc + scale*log(2U)`` for U < 1/2, else ``loc - scale*log(2 - 2U)``,
each step rounded to a double. Given a release y and a candidate input x, the
attacker inverts the formula to the few k that could have produced y and
recomputes the sampler on each, bit for bit: if no k gives exactly y, the input
was not x. For neighbouring inputs (x and x + Delta) a large share of releases
is possible under one input only, which breaks epsilon-DP outright (Sec. 4).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["possible", "distinguish"]

#: k candidates tried on each side of the inverted value.
WINDOW = 24


def possible(y: float, x: float, scale: float) -> bool:
    """Can numpy's textbook sampler output exactly ``y`` from ``loc=x``? (libm ``log``, as numpy's C code.)

    The expressions are numpy's, operation for operation, so each candidate
    release is reproduced bit for bit (checked: ``possible_under_truth`` is 1).
    """
    z = (y - x) / scale
    candidates = []
    if z <= 0.0:  # branch U < 1/2: y = x + scale * log(2U), 2U = k 2^-52
        candidates.append((math.exp(z) * 2.0**52, lambda k: x + scale * math.log(k * 2.0**-52)))
    if z >= 0.0:  # branch U >= 1/2: y = x - scale * log(2 - 2U), 2 - 2U = 2 - k 2^-52
        # numpy computes 2.0 - U - U, whose first subtraction rounds: recompute it the same way.
        candidates.append(((2.0 - math.exp(-z)) * 2.0**52,
                           lambda k: x - scale * math.log(2.0 - k * 2.0**-53 - k * 2.0**-53)))
    for center, forward in candidates:
        k0 = int(center)
        for k in range(max(1, k0 - WINDOW), min(2**53 - 1, k0 + WINDOW) + 1):
            # U = k 2^-53 must fall in the branch's half
            if ((k < 2**52) == (z <= 0.0) or z == 0.0) and forward(k) == y:
                return True
    return False


def distinguish(releases: np.ndarray, x_true: float, x_other: float, scale: float) -> dict[str, float]:
    """Share of releases the attack pins on the true input (possible under it, impossible under the other)."""
    own = np.array([possible(float(y), x_true, scale) for y in releases])
    other = np.array([possible(float(y), x_other, scale) for y in releases])
    return {"releases": int(releases.size), "possible_under_truth": float(own.mean()),
            "ruled_out_other": float((own & ~other).mean())}
