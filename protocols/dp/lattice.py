"""Floating-point-safe noise: exact integer samplers and releases on a power-of-two lattice.

Why not the textbook sampler
----------------------------
A release ``exact + scale * Z`` computed in double precision leaks ``exact``
through its low-order bits (Mironov, CCS 2012, Sec. 4): the set of doubles the
computation can produce depends on ``exact``, so an observer who replays it for
each candidate input rules inputs out. Every mechanism here instead releases

    g * (round(exact / g) + Y),     Y an integer drawn exactly,

on the lattice gZ, g a power of two fixed by public quantities only: 2^-12 to
2^-13 of a public lower bound on both the per-answer sensitivity and the
per-answer noise scale (from epsilon, m, n and, for the global mechanism, Delta). Every
neighbour's release has the same support, the integer Y is drawn with exactly
the probabilities the proofs below use, and the float value ``g * integer`` is
a fixed function of that integer (post-processing).

Why our own sampler, driven by the numpy Generator
--------------------------------------------------
OpenDP (0.16) has exact discrete Laplace and Gaussian samplers and a lattice
Laplace mechanism, but they draw from the operating system's CSPRNG
(``opendp._data.fill_bytes``; ``opendp._lib.get_np_csprng`` wraps it) and cannot
be seeded, which breaks replaying a run from its secrets file. It has no Cauchy
sampler. So the samplers here are exact algorithms in integers and rationals
whose only source of randomness is the Generator's bit generator (uniform 64-bit
words, :class:`RandomBits`), turned into exact uniform integers by rejection:

- :func:`bernoulli_exp` is Algorithm 1 of Canonne, Kamath & Steinke, "The
  Discrete Gaussian for Differential Privacy" (NeurIPS 2020) with its reduction
  for gamma > 1 (Sec. 5.1);
- :func:`discrete_laplace` is their Algorithm 2: P(Y = y) proportional to
  exp(-|y| / tau), tau = t/s;
- :func:`discrete_gaussian` is their Algorithm 3: P(Y = y) proportional to
  exp(-y^2 / (2 sigma^2)), sigma^2 rational, by rejection from discrete Laplace;
- :func:`discrete_cauchy` samples P(Y = y) proportional to 1 / (1 + (y/tau)^2)
  by rejection from a proposal with rational probabilities (its docstring).

Rounding the exact answer
-------------------------
``round(exact/g)`` is computed from the float ``exact``, which differs from the
real value of the metric by at most eta(n) = (n + 8) 2^-52 (:func:`metric_float_error`).
The metrics are means of at most n values of magnitude <= 1, their differences
and maxima; summed in any order, a sum of N such values errs by at most
gamma_{N-1} N (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
Eq. (4.4)), so a mean errs by at most (N + 2) 2^-53 and a difference of two
means over n rows by at most (n + 8) 2^-53: eta(n) has a factor 2 to spare. The
rounding moves each coordinate by at most g/2, so two neighbours' rounded
vectors differ in l1 norm by at most ``Delta + m (g + 2 eta(n))``
(:func:`lattice_sensitivity`): the rounding is accounted inside the sensitivity.

The proofs of the three mechanisms are in the docstrings of
:func:`laplace_lattice`, :func:`smooth_lattice` (Laplace and Cauchy families).
"""

from __future__ import annotations

import functools
import math
import warnings
from fractions import Fraction
from typing import Literal

import numpy as np

from parley.protocols.errors import ConfigError

__all__ = [
    "metric_float_error",
    "RESOLUTION_BITS",
    "SCALE_BITS",
    "BAD_SCALE",
    "FLOAT_UNSAFE_WARNING",
    "FloatUnsafeWarning",
    "warn_float_unsafe",
    "RandomBits",
    "uniform_below",
    "bernoulli",
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_cauchy",
    "discrete_gaussian",
    "granularity",
    "lattice_sensitivity",
    "laplace_lattice",
    "smooth_lattice",
]

#: The lattice spacing g is 2^-RESOLUTION_BITS to 2^-(RESOLUTION_BITS - 1) times the smallest noise scale.
RESOLUTION_BITS = 12
#: The global Laplace scale (in lattice steps) is rounded up to a multiple of 2^-SCALE_BITS.
SCALE_BITS = 20
#: Relative margin on a float sensitivity, covering its few roundings (it is then an upper bound on the real one).
RELATIVE_SLACK = Fraction(1, 2**40)

BAD_SCALE = "the lattice noise needs a finite scale > 0, got {value!r}"
#: Put in every answer released with ``sampler = "float-unsafe"`` (docs/reliability.md#floating-point-events).
FLOAT_UNSAFE_WARNING = ("sampler 'float-unsafe' adds noise in double precision: the low-order bits of each release "
                        "depend on the exact answer, so an observer who reads the code can tell neighbouring audit "
                        "sets apart and the stated epsilon does not hold; use the default sampler 'lattice'")

class FloatUnsafeWarning(UserWarning):
    """Issued when a DP protocol is configured with ``sampler = "float-unsafe"``."""


def warn_float_unsafe(protocol: str) -> None:
    """Warn (once per configuration) that ``protocol`` will release float noise; see :data:`FLOAT_UNSAFE_WARNING`."""
    warnings.warn(f"protocol {protocol!r}: {FLOAT_UNSAFE_WARNING}", FloatUnsafeWarning, stacklevel=3)


class RandomBits:
    """Uniform random bits from a numpy Generator's bit generator, buffered 256 bits at a time.

    The samplers below need many small exact uniform integers; numpy's scalar
    ``Generator.integers`` costs microseconds per call, so the bits come from
    ``bit_generator.random_raw`` (uniform 64-bit words) in blocks. The stream is
    a fixed function of the generator's state: same key, same draws. Unused
    bits of the last block are dropped when the object is.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._raw = rng.bit_generator.random_raw
        self._pool = 0
        self._size = 0

    def bits(self, k: int) -> int:
        """k uniform random bits as an integer in [0, 2^k)."""
        while self._size < k:
            for word in self._raw(4).tolist():
                self._pool |= word << self._size
                self._size += 64
        value = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._size -= k
        return value

    def below(self, n: int) -> int:
        """An exactly uniform integer in {0, ..., n - 1}: bit_length(n - 1) bits, rejected when >= n."""
        k = (n - 1).bit_length()
        while True:
            v = self.bits(k)
            if v < n:
                return v


Source = np.random.Generator | RandomBits


def _bits(rng: Source) -> RandomBits:
    return rng if isinstance(rng, RandomBits) else RandomBits(rng)


def uniform_below(rng: Source, n: int) -> int:
    """An exactly uniform integer in {0, ..., n - 1} (n >= 1, any size)."""
    return _bits(rng).below(n)


def bernoulli(rng: Source, num: int, den: int) -> bool:
    """True with probability num/den exactly (0 <= num <= den); no draw when the answer is certain."""
    if num >= den:
        return True
    if num <= 0:
        return False
    return _bits(rng).below(den) < num


def _bernoulli_exp_unit(rng: RandomBits, num: int, den: int) -> bool:
    """CKS Algorithm 1 for gamma = num/den in [0, 1]: P(True) = exp(-gamma).

    K counts how many Bernoulli(gamma/k), k = 1, 2, ..., succeed in a row; the
    chance that exactly K - 1 do is gamma^(K-1)/(K-1)! - gamma^K/K!, and
    summing over odd K gives the series of exp(-gamma).
    """
    k = 1
    while bernoulli(rng, num, den * k):
        k += 1
    return k % 2 == 1


def bernoulli_exp(rng: Source, num: int, den: int) -> bool:
    """True with probability exp(-num/den) exactly (num >= 0, den >= 1); CKS Sec. 5.1.

    For gamma > 1, exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma))):
    that many independent Bernoulli(exp(-1)) must all succeed.
    """
    rng = _bits(rng)
    while num > den:
        if not _bernoulli_exp_unit(rng, 1, 1):
            return False
        num -= den
    return _bernoulli_exp_unit(rng, num, den)


def discrete_laplace(rng: Source, t: int, s: int) -> int:
    """CKS Algorithm 2: Y with P(Y = y) = (e^{1/tau} - 1)/(e^{1/tau} + 1) e^{-|y|/tau}, tau = t/s.

    U uniform on {0..t-1} kept with probability e^{-U/t} and V geometric with
    P(V = v) = (1 - e^{-1}) e^{-v} make X = U + tV geometric with ratio e^{-1/t};
    floor(X/s) is then geometric with ratio e^{-s/t}, and a fair sign with the
    negative zero rejected gives the two-sided law.
    """
    rng = _bits(rng)
    while True:
        u = uniform_below(rng, t)
        if not bernoulli_exp(rng, u, t):
            continue
        v = 0
        while bernoulli_exp(rng, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = bernoulli(rng, 1, 2)
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(rng: Source, num: int, den: int) -> int:
    """CKS Algorithm 3: Y with P(Y = y) proportional to exp(-y^2 / (2 sigma^2)), sigma^2 = num/den exactly.

    With t = floor(sigma) + 1, Y is drawn from discrete Laplace of scale t
    (:func:`discrete_laplace`) and kept with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)); the kept Y has the discrete Gaussian
    law exactly (Canonne, Kamath & Steinke 2020, Sec. 5.3). The acceptance
    exponent is the rational (|Y| t den - num)^2 / (2 num den t^2).
    """
    if num <= 0 or den <= 0:
        raise ConfigError(BAD_SCALE.format(value=Fraction(num, max(den, 1))))
    rng = _bits(rng)
    t = math.isqrt(num // den) + 1  # floor(sqrt(num/den)) = isqrt(floor(num/den))
    while True:
        y = discrete_laplace(rng, t, 1)
        gap = abs(y) * t * den - num
        if bernoulli_exp(rng, gap * gap, 2 * num * den * t * t):
            return y


def discrete_cauchy(rng: Source, t: int, s: int) -> int:
    """Y with P(Y = y) proportional to w(y) = 1 / (1 + (y/tau)^2), tau = t/s (normaliser pi tau coth(pi tau)).

    Rejection from a proposal q with rational probabilities. Let T = ceil(tau).
    With probability 1/2, y is uniform on {-(T-1), ..., T-1}: q(y) = 1/(2(2T-1)).
    Otherwise a block b >= 0 is drawn with P(b) = 2^{-(b+1)}, a fair sign, and
    |y| uniform on [T 2^b, T 2^{b+1}): q(y) = 1/(8 T 4^b). There w(y) <= tau^2/y^2
    <= 4^{-b}, so w/q <= 8T everywhere; y is kept with probability
    a(y) = w(y) / (8T q(y)) (rational, at most 1), which makes q(y) a(y) = w(y)/(8T)
    for every y: the kept y has law w exactly. Acceptance is about pi/8 per try.
    """
    rng = _bits(rng)
    tt, ss = t * t, s * s
    big_t = -(-t // s)
    while True:
        if bernoulli(rng, 1, 2):
            y = uniform_below(rng, 2 * big_t - 1) - (big_t - 1)
            num, den = tt * (2 * big_t - 1), (tt + ss * y * y) * 4 * big_t
        else:
            b = 0
            while bernoulli(rng, 1, 2):
                b += 1
            low = big_t << b
            y = low + uniform_below(rng, low)
            if bernoulli(rng, 1, 2):
                y = -y
            num, den = tt << (2 * b), tt + ss * y * y
        if bernoulli(rng, num, den):
            return y


def granularity(scale: float) -> float:
    """The lattice spacing for noise of (at least) this scale: 2^(floor(log2 scale) - RESOLUTION_BITS).

    A power of two, so ``x / g`` and ``k * g`` are exact in floating point; the
    noise scale is between 2^12 and 2^13 lattice steps or more.
    """
    if not (math.isfinite(scale) and scale > 0.0):
        raise ConfigError(BAD_SCALE.format(value=scale))
    _, exponent = math.frexp(scale)  # scale = f 2^exponent, f in [1/2, 1): floor(log2 scale) = exponent - 1
    return math.ldexp(1.0, exponent - 1 - RESOLUTION_BITS)


def metric_float_error(n: int) -> Fraction:
    """eta(n) = (n + 8) 2^-52: a bound on |float metric - real metric| on an audit set of n rows (module docstring)."""
    return Fraction(n + 8, 2**52)


def lattice_sensitivity(sensitivity: float, m: int, g: float, n: int) -> Fraction:
    """l1 sensitivity of the rounded release g round(x/g): Delta (1 + 2^-40) + m (g + 2 eta(n)), exactly."""
    return Fraction(sensitivity) * (1 + RELATIVE_SLACK) + m * (Fraction(g) + 2 * metric_float_error(n))


def _release(exact: np.ndarray, g: float, noise: list[int]) -> np.ndarray:
    """g (round(exact/g) + Y) as doubles: x/g is exact (g a power of two), the sum is an exact integer."""
    steps = np.rint(np.asarray(exact, dtype=np.float64).ravel() / g)
    values = [float(int(k) + y) * g for k, y in zip(steps, noise, strict=True)]  # int -> float correctly rounded
    return np.asarray(values, dtype=np.float64).reshape(np.shape(exact))


def laplace_lattice(exact: np.ndarray, sensitivity: float, epsilon: float, n: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, dict[str, float]]:
    """epsilon-DP release of ``exact`` (l1 sensitivity ``sensitivity``) with discrete Laplace noise on gZ.

    g = :func:`granularity` (min(Delta, Delta/epsilon) / m) depends on public
    quantities only; the rounding then adds at most 2^-12 Delta to the sensitivity.
    The rounded vector k(D) = round(x/g) satisfies g ||k(D) - k(D')||_1 <= Delta_g
    = :func:`lattice_sensitivity`. Each coordinate gets Y_i ~ DLap(tau) with
    tau >= Delta_g / (epsilon g) (rounded up to a multiple of 2^-20). For an
    output j in Z^m,

        P[D -> j] / P[D' -> j] = prod_i exp((|j_i - k'_i| - |j_i - k_i|) / tau)
                              <= exp(||k - k'||_1 / tau) <= exp(epsilon),

    the discrete analogue of the Laplace mechanism's proof (Dwork et al. 2006;
    CKS 2020, Sec. 2): pure epsilon-DP, with no floating-point step between the
    exact integer draw and the release.

    ``sensitivity`` must be public (a global sensitivity, the same on neighbouring audit sets):
    g, tau and the scale are kept per (``sensitivity``, ``epsilon``, m, n) once computed, so the
    time of a release could tell whether a value was seen before.

    Returns
    -------
    values : ndarray
        The release, multiples of g.
    notes : dict
        ``granularity`` g and the effective noise ``scale`` tau g (>= Delta/epsilon).
    n, the audit set's size, enters through :func:`metric_float_error`.
    """
    exact = np.asarray(exact, dtype=np.float64)
    g, t, s, scale = _laplace_lattice_plan(sensitivity, epsilon, exact.size, n)
    bits = RandomBits(rng)
    noise = [discrete_laplace(bits, t, s) for _ in range(exact.size)]
    return _release(exact, g, noise), {"granularity": g, "scale": scale}


@functools.lru_cache(maxsize=256, typed=True)
def _laplace_lattice_plan(sensitivity: float, epsilon: float, m: int, n: int) -> tuple[float, int, int, float]:
    """g, the noise scale tau as t/s lattice steps, and tau g, for :func:`laplace_lattice`.

    A function of public quantities only (the global sensitivity, epsilon, m, n), so it is kept
    per argument tuple: its exact rational arithmetic was about a third of a release's time, and
    it is the same for every query of one metric and m on one audit set.
    """
    g = granularity(min(sensitivity, sensitivity / epsilon) / m)
    tau = lattice_sensitivity(sensitivity, m, g, n) / (Fraction(epsilon) * Fraction(g))
    t, s = math.ceil(tau * 2**SCALE_BITS), 2**SCALE_BITS
    return g, t, s, float(Fraction(t, s) * Fraction(g))


def smooth_lattice(exact: np.ndarray, smooth: float, factor: float, epsilon: float, public_bound: float, n: int,
                   family: Literal["laplace", "cauchy"], rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Smooth-sensitivity release on gZ: g (round(x/g) + Y), Y_i i.i.d. with scale tau = factor S_g / (epsilon g).

    Parameters
    ----------
    exact : ndarray
        The m exact answers.
    smooth : float
        S, the beta-smooth sensitivity at the actual audit set (not released).
    factor : float
        6 (Cauchy, Thm. 7) or 2 (Laplace, Thm. 8).
    epsilon : float
        The protocol's epsilon; beta is the theorem's (epsilon/(6m), epsilon/(4(m + ln(2/delta)))).
    public_bound : float
        A public lower bound, per answer, on both S/m and the noise scale factor S/(m epsilon)
        over all audit sets of this size; g = :func:`granularity` (public_bound), so the
        lattice reveals nothing and the rounding adds at most 2^-12 S to the sensitivity.
    n : int
        The audit set's size (public), for :func:`metric_float_error`.
    family : {"laplace", "cauchy"}
        Discrete Laplace (:func:`discrete_laplace`) or discrete Cauchy (:func:`discrete_cauchy`).

    Returns
    -------
    values : ndarray
        The release, multiples of g.
    g : float
        The granularity (public).

    Notes
    -----
    S_g = S (1 + 2^-40) + m (g + 2 eta(n)) is a beta-smooth upper bound on
    the local sensitivity of the rounded query g k(D) (adding a constant keeps
    beta-smoothness; the factor covers S's float evaluation, whose few roundings
    move the ratio S(D)/S(D') by a factor 1 + O(2^-50), which the margins below
    absorb). Write tau, tau' for the scales at neighbours D, D', so
    e^-beta <= tau/tau' <= e^beta, and g ||k - k'||_1 <= S_g(D').

    Privacy loss at an output j in Z^m, L = ln P[D -> j] - ln P[D' -> j], splits
    into *sliding* (k -> k' at scale tau') and *dilation* (tau -> tau' at offset k).

    Cauchy, P_tau(y) = w(y/tau)/N(tau), w(z) = 1/(1 + z^2), N(tau) = pi tau coth(pi tau):
    ln w is 1-Lipschitz (|2z/(1 + z^2)| <= 1), so sliding costs at most
    ||k - k'||_1 / tau' <= epsilon/6. Dilation per coordinate: if tau > tau',
    w(z/tau)/w(z/tau') <= (tau/tau')^2 and N(tau')/N(tau) <= 1 (x coth(pi x)
    increases); if tau < tau', the w-ratio is <= 1 and N(tau')/N(tau) <= tau'/tau.
    So L <= epsilon/6 + 2 m beta = epsilon/6 + epsilon/3 = epsilon/2: pure
    epsilon-DP (Thm. 7's factor 6 is kept; the discrete proof has room to spare).

    Laplace, P_tau(y) = C(tau) e^{-|y|/tau}, C(tau) = tanh(1/(2 tau)): sliding
    costs at most ||k - k'||_1/tau' <= epsilon/2. Dilation, if tau < tau':
    ln C(tau)/C(tau') <= ln(tau'/tau) <= beta per coordinate (tanh(x)/x
    decreases) and the exponential term is <= 0, so L <= epsilon/2 + m beta
    < epsilon. If tau >= tau': C-ratio <= 1 and the exponential term is
    |y_i| (1/tau' - 1/tau) <= (e^beta - 1) |y_i|/tau, so L <= epsilon/2 +
    (e^beta - 1) T with T = ||Y||_1/tau. E[e^{T/2}] = ((1 + sqrt q)^2/(1 + q))^m
    <= 2^m (q = e^{-1/tau}), so P[T >= t] <= 2^m e^{-t/2}. L > epsilon needs
    T > epsilon/(2(e^beta - 1)) >= 2 (m + ln(2/delta)) e^{-beta}; with
    beta (m + ln(2/delta)) = epsilon/4 < 1/4 that is >= 2 (m + ln 2 + ln(1/delta)) - 1/2
    >= 2 (m ln 2 + ln(1/delta)), so the event has probability <= delta under D:
    (epsilon, delta)-DP with Thm. 8's beta and noise factor 2.
    """
    exact = np.asarray(exact, dtype=np.float64)
    m = exact.size
    g = granularity(public_bound)
    smooth_g = Fraction(smooth) * (1 + RELATIVE_SLACK) + m * (Fraction(g) + 2 * metric_float_error(n))
    tau = Fraction(factor) * smooth_g / (Fraction(epsilon) * Fraction(g))  # exact dyadic rational
    sample = discrete_cauchy if family == "cauchy" else discrete_laplace
    bits = RandomBits(rng)
    noise = [sample(bits, tau.numerator, tau.denominator) for _ in range(m)]
    return _release(exact, g, noise), g
