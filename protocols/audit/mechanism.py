"""The mechanism level of the two-level privacy audit: many releases of one query, drawn at once.

The whole-scenario audit (:mod:`parley.scenarios.compare.audit`) used to run the whole scenario
(parties, signed envelopes, ledger) for every draw of the audited statistic: about 0.1 s a draw,
so a few hundred draws per neighbour. Here the exact statistics of the query are computed once,
by the protocol's own code (:meth:`parley.protocols.base.AuditSet.answer`, the public plans of
:mod:`parley.protocols.dp.lattice`, :mod:`parley.protocols.mechanisms.count_dp`'s statistics,
centres and noise scales), and only the integer noise is drawn, vectorised: ``size`` releases in
milliseconds. The noise laws are the protocols' (discrete Laplace, discrete Gaussian, discrete
Cauchy on the protocol's lattice, with its scale); numpy draws them in floating point, which is
fine for an audit (it must sample the law, not protect a secret). That the parties release this
law is what the wiring level checks (a two-sample test of whole-scenario runs against these draws).

A protocol (or sampler) without a vectorised path is drawn by calling its own
:meth:`~parley.protocols.base.Protocol.answer` in a loop (:func:`answer_loop`), exact and slower
(0.1-0.5 ms a draw), so :func:`draw_answers` caps its draws at :data:`LOOP_DRAWS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from parley.protocols.base import AuditSet, MetricQuery, Protocol

__all__ = ["LOOP_DRAWS", "VECTORISED", "answer_loop", "draw_answers", "discrete_laplace_array",
           "discrete_gaussian_array", "discrete_cauchy_array"]

#: The most draws :func:`draw_answers` makes by calling a protocol's ``answer`` one draw at a time.
LOOP_DRAWS = 4000


def discrete_laplace_array(rng: np.random.Generator, tau: float, size: int) -> np.ndarray:
    """``size`` draws of Y with P(Y = y) proportional to exp(-|y| / tau): the difference of two geometric laws."""
    if tau <= 0.0:
        return np.zeros(size, dtype=np.int64)
    p = -math.expm1(-1.0 / tau)
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.int64)


def discrete_gaussian_array(rng: np.random.Generator, sigma2: float, size: int) -> np.ndarray:
    """``size`` draws of the discrete Gaussian N_Z(0, sigma2), CKS Algorithm 3 on arrays.

    The rejection of :func:`parley.protocols.dp.lattice.discrete_gaussian`.
    """
    if sigma2 <= 0.0:
        return np.zeros(size, dtype=np.int64)
    t = math.floor(math.sqrt(sigma2)) + 1
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        y = discrete_laplace_array(rng, float(t), todo.size)
        keep = rng.random(todo.size) < np.exp(-((np.abs(y) - sigma2 / t) ** 2) / (2.0 * sigma2))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out


def discrete_cauchy_array(rng: np.random.Generator, tau: float, size: int) -> np.ndarray:
    """``size`` draws of Y with P(Y = y) proportional to 1 / (1 + (y / tau)^2).

    The proposal and acceptance of :func:`parley.protocols.dp.lattice.discrete_cauchy` on arrays
    (probabilities in floating point).
    """
    big_t = math.ceil(tau)
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        k = todo.size
        near = rng.random(k) < 0.5
        y = np.empty(k, dtype=np.float64)
        accept = np.empty(k, dtype=np.float64)
        # near zero: uniform on {-(T-1), ..., T-1}
        yn = rng.integers(-(big_t - 1), big_t, size=k).astype(np.float64)
        # far: block b with P(b) = 2^-(b+1), |y| uniform on [T 2^b, T 2^(b+1)), a fair sign
        b = np.minimum(rng.geometric(0.5, k) - 1, 60)
        low = big_t * np.exp2(b)
        yf = np.floor(low + rng.random(k) * low) * np.where(rng.random(k) < 0.5, -1.0, 1.0)
        y[near], y[~near] = yn[near], yf[~near]
        w = 1.0 / (1.0 + (y / tau) ** 2)
        accept[near] = w[near] * (2 * big_t - 1) / (4.0 * big_t)
        accept[~near] = w[~near] * np.exp2(2 * b[~near])
        keep = rng.random(k) < accept
        out[todo[keep]] = y[keep].astype(np.int64)
        todo = todo[~keep]
    return out


def _on_lattice(exact: np.ndarray, g: float, noise: np.ndarray) -> np.ndarray:
    """g (round(exact / g) + Y), (size, m): the release of :func:`parley.protocols.dp.lattice._release`."""
    steps = np.rint(np.asarray(exact, dtype=np.float64).ravel() / g)
    return (steps[None, :] + noise.astype(np.float64)) * g


def _raw(protocol: Any, query: MetricQuery, audit: AuditSet, rng: np.random.Generator, size: int) -> np.ndarray:
    values, _ = protocol.release(audit.answer(query), query, audit, rng)
    return np.repeat(np.asarray(values, dtype=np.float64)[None, :], size, axis=0)


def _laplace(protocol: Any, query: MetricQuery, audit: AuditSet, rng: np.random.Generator,
             size: int) -> np.ndarray | None:
    from parley.protocols.dp.lattice import _laplace_lattice_plan
    from parley.protocols.mechanisms.laplace import apply_out_of_range

    if protocol.params.sampler != "lattice":
        return None
    exact = np.asarray(audit.answer(query), dtype=np.float64)
    g, t, s, _ = _laplace_lattice_plan(protocol.sensitivity(query, audit), protocol.params.epsilon, exact.size, audit.n)
    noise = discrete_laplace_array(rng, t / s, size * exact.size).reshape(size, exact.size)
    values, _ = apply_out_of_range(_on_lattice(exact, g, noise), query.metric, protocol.params.out_of_range)
    return values


def _smooth(protocol: Any, query: MetricQuery, audit: AuditSet, rng: np.random.Generator,
            size: int) -> np.ndarray | None:
    from parley.protocols.dp.lattice import RELATIVE_SLACK, granularity, metric_float_error
    from parley.protocols.dp.sensitivity import smooth_sensitivity
    from parley.protocols.mechanisms.laplace import apply_out_of_range
    from parley.protocols.mechanisms.smooth_sensitivity import lattice_bound
    from parley.protocols.metrics import group_sizes

    if protocol.params.sampler != "lattice":
        return None
    exact = np.asarray(audit.answer(query), dtype=np.float64)
    m, eps = exact.size, protocol.params.epsilon
    n0, n1 = group_sizes(audit.a)
    smooth = smooth_sensitivity(query.metric, query.m, n0, n1, protocol.beta(query.m))
    g = granularity(lattice_bound(protocol.factor, eps, audit.n))
    smooth_g = Fraction(smooth) * (1 + RELATIVE_SLACK) + m * (Fraction(g) + 2 * metric_float_error(audit.n))
    tau = float(Fraction(protocol.factor) * smooth_g / (Fraction(eps) * Fraction(g)))
    draw = discrete_cauchy_array if protocol.noise == "cauchy" else discrete_laplace_array
    noise = draw(rng, tau, size * m).reshape(size, m)
    values, _ = apply_out_of_range(_on_lattice(exact, g, noise), query.metric, protocol.params.out_of_range)
    return values


def _gaps(metric: str, k: list[np.ndarray], n1: list[np.ndarray], t: list[float], sizes: list[int]) -> np.ndarray:
    """:func:`parley.protocols.mechanisms.count_dp.metrics_from_statistics` with arrays of draws (one model)."""
    from parley.protocols.metrics import METRICS

    gaps = []
    for s, n_slice in enumerate(sizes):
        if metric == "cov":
            n = float(n_slice)
            gaps.append(k[s] / n - t[s] * n1[s] / (n * n))
            continue
        size1 = np.clip(n1[s], 1.0, n_slice - 1.0)
        mean1 = np.clip(k[s] / size1, 0.0, 1.0)
        mean0 = np.clip((t[s] - k[s]) / (n_slice - size1), 0.0, 1.0)
        gaps.append(mean1 - mean0)
    if metric == "eodds":
        values = np.maximum(np.abs(gaps[0]), np.abs(gaps[1]))
    elif metric in ("abs_sp", "abs_eo"):
        values = np.abs(gaps[0])
    else:
        values = gaps[0]
    low, high = METRICS[metric].range
    return np.clip(values, low, high)


def _counts(protocol: Any, query: MetricQuery, audit: AuditSet, rng: np.random.Generator,
            size: int) -> np.ndarray | None:
    """dp-counts' one-model answer: the pair release (Laplace) or the centred release, noise drawn on arrays."""
    from parley.protocols.mechanisms import count_dp as cd

    if query.m != 1 or query.metric not in protocol.metrics:
        return None
    params = protocol.params
    masks = cd.slices_of(query.metric, audit.y)
    K, N, T, sizes = cd.statistics(query.predictions, audit.a, masks)
    C, S = cd.centres(query.predictions, masks)
    scales = cd.noise_scales(1, params)
    kinds = cd.release_kinds(1, params, S)
    unit = float(1 << cd.PREDICTION_BITS)
    steps = [cd.pair_step(params.epsilon, g, params.optimise) if kind == cd.PAIR else 1
             for kind, g in zip(kinds, cd.support_steps(query.predictions, masks), strict=True)]
    k_units, n_noisy = [], []
    for s in range(len(masks)):
        if kinds[s] == cd.PAIR:
            per_step = float(cd.pair_scale(params) / steps[s])
            k_noisy = K[s][0] + steps[s] * discrete_laplace_array(rng, per_step, size).astype(np.float64)
            z_noisy = ((N[s] << cd.PREDICTION_BITS) - K[s][0]
                       + steps[s] * discrete_laplace_array(rng, per_step, size).astype(np.float64))
            k_units.append(k_noisy / unit)
            n_noisy.append((k_noisy + z_noisy) / unit)
            continue

        def draw(scale: Fraction, sensitivity: int) -> np.ndarray:
            if sensitivity == 0:
                return np.zeros(size)
            if params.noise == "laplace":
                return discrete_laplace_array(rng, float(scale * sensitivity), size).astype(np.float64)
            return discrete_gaussian_array(rng, float(scale * sensitivity * sensitivity), size).astype(np.float64)

        noisy_d = K[s][0] - C[s][0] * N[s] + draw(scales["sum"], S[s][0])
        n_size = N[s] + draw(scales["size"], 1)
        k_units.append((noisy_d + C[s][0] * n_size) / unit)
        n_noisy.append(n_size)
    values = _gaps(query.metric, k_units, n_noisy, [T[s][0] / unit for s in range(len(masks))], sizes)
    return values[:, None]


Vectorised = Callable[[Any, MetricQuery, AuditSet, np.random.Generator, int], "np.ndarray | None"]
#: Protocol name -> its vectorised release of ``size`` answers (None: no vectorised path for these parameters).
VECTORISED: dict[str, Vectorised] = {"raw": _raw, "laplace": _laplace, "smooth-cauchy": _smooth,
                                     "smooth-laplace": _smooth, "dp-counts": _counts}


def answer_loop(protocol: Protocol[Any], query: MetricQuery, audit: AuditSet, rng: np.random.Generator,
                size: int) -> np.ndarray:
    """``size`` answers from the protocol's own :meth:`~parley.protocols.base.Protocol.answer`, one at a time."""
    return np.array([np.asarray(protocol.answer(query, audit, rng)["values"], dtype=np.float64)
                     for _ in range(size)]).reshape(size, -1)


def draw_answers(protocol: Protocol[Any], query: MetricQuery, audit: AuditSet, rng: np.random.Generator,
                 size: int) -> np.ndarray:
    """``size`` releases of ``query`` on ``audit``, shape (size, m).

    Vectorised where the protocol has a path (:data:`VECTORISED`), else :func:`answer_loop` with at
    most :data:`LOOP_DRAWS` draws.
    """
    fast = VECTORISED.get(protocol.name)
    values = fast(protocol, query, audit, rng, size) if fast is not None else None
    if values is not None:
        return np.asarray(values, dtype=np.float64)
    return answer_loop(protocol, query, audit, rng, min(size, LOOP_DRAWS))
