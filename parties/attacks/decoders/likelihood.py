"""Likelihood decoders: reconstruct A from noisy answers under the exact noise law of the mechanism.

A DP protocol publishes how it adds noise (the mechanism, epsilon, and for most the scale of each
answer), so an adversary who reads the code can write down the likelihood of every binary A:

* ``laplace`` (global sensitivity): y_i = SP_i(A) + Lap(b_i), b_i public in the answer;
* ``smooth-laplace`` / ``smooth-cauchy`` (Thm. 8 / Thm. 7 of Hamman, Chen & Dutta, FAccT 2023): the
  scale 2 S/epsilon or 6 S/epsilon is a function of the group sizes, which A itself fixes, so the
  likelihood of A uses S(N0(A), N1(A)) with its normaliser;
* ``dp-counts``: the noisy centred group-1 sums d_i = sum_j (h_ij - c_i) a_j + Y_i (c_i the public
  slice mean) and size N1 + Y_0, discrete Laplace or discrete Gaussian with public scales b_i and
  b_0, a linear model in A. Row i is divided by b_i / b (b the scale per unit of sensitivity), so
  every sum has the one law of scale b: d_i / s_i = ((H - c 1^T) a)_i / s_i + Lap(b). A one-model
  Laplace answer releases instead the pair K = (h a) + Lap(b) and Z = ((1 - h) a) + Lap(b) (``release``
  ``"sum-pair"``; Z = N1 - K from the answer's sizes): two rows of one law, no size row.

SP answers are c (H a)_i - (H 1)_i / N0 with c = 1/N1 + 1/N0, so every model here is a function of
s = H a and N1 = sum a: flipping one a_j moves s by one column of H, and the log-likelihood of the
flip costs O(m). Two decoders use it:

* :func:`gibbs_marginals`: posterior marginals P(a_j = 1 | y) by Gibbs sampling (Geman & Geman
  1984), with the exact likelihood and a Bernoulli prior; any noise law. Deciding a_j = 1 when the
  marginal exceeds the prior (likelihood ratio above 1) maximises the expected balanced accuracy
  (Def. 5.1 of the query-leakage paper) up to the coupling between individuals: Dinur-Nissim
  reconstruction (PODS 2003) with the Bayes decoder in place of LP rounding.
* :func:`milp_map`: the exact maximum-likelihood A for the Laplace laws, a mixed-integer LP (least
  absolute deviations weighted by 1/b_i) solved by HiGHS (``scipy.optimize.milp``); for SP answers
  one program per candidate N1 (the public group share restricts N1 to a window). The likelihood,
  not the posterior, is maximised: with a 10 % minority the joint MAP is "everyone in the majority"
  unless the answers say otherwise strongly, which is right most often but scores 50 % balanced
  accuracy; the flat prior is the joint analogue of the Bayes rule for balanced accuracy.

:func:`informed_log_odds` is the strongest adversary DP speaks to: it knows every a but a_j and
tests a_j by the likelihood ratio. Its balanced accuracy is capped by e^eps/(1 + e^eps) (+ delta)
in expectation, so it separates "the attack is weak" from "the answers hold little".

Discrete noise (lattice samplers, discrete Laplace and Gaussian) is scored with the continuous
log-density at the released value: the normaliser of a discrete law on a fixed lattice does not
depend on A. Where every candidate's exact value lies on the noise's lattice (the dp-counts pair, whose
step may be as coarse as epsilon times its scale) the probability mass is exactly proportional to that
density, so the ranking of candidates is exact; elsewhere the lattice spacing is below 2^-12 of the
scale, and the ranking is that of the mass function up to that spacing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from parley.protocols.errors import AttackError

__all__ = ["Family", "NoiseLaw", "SpModel", "SumModel", "LikelihoodModel", "gibbs_marginals", "informed_log_odds",
           "log_density", "milp_map", "model_from_release", "MILP_NEEDS_LAPLACE", "UNKNOWN_RELEASE"]

Family = Literal["laplace", "gaussian", "cauchy"]

MILP_NEEDS_LAPLACE = ("the exact maximum likelihood by MILP needs a Laplace noise law (got {family!r}): use decoder "
                      "'gibbs', which samples the posterior under any law")
UNKNOWN_RELEASE = ("the answer does not say how its noise was drawn (public notes: {keys}); the likelihood attack "
                   "needs a DP protocol's answer (laplace, smooth-laplace, smooth-cauchy or dp-counts)")
SP_OUT_OF_RANGE_CLAMP = ("smooth and laplace answers clamped to the metric's range are censored; the likelihood "
                         "scores a value at the bound by the tail probability beyond it")


def log_density(family: Family, r: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """Log-density of the noise ``r`` for a zero-centred law of ``scale`` (b, sigma or gamma).

    Laplace: -|r|/b - log(2b); Gaussian: -r^2/(2 sigma^2) - log(sigma sqrt(2 pi));
    Cauchy: -log(pi gamma (1 + (r/gamma)^2)).
    """
    r = np.asarray(r, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    logpdf: np.ndarray
    if family == "laplace":
        logpdf = -np.abs(r) / scale - np.log(2.0 * scale)
        return logpdf
    if family == "gaussian":
        logpdf = -0.5 * (r / scale) ** 2 - np.log(scale * math.sqrt(2.0 * math.pi))
        return logpdf
    if family == "cauchy":
        logpdf = -np.log1p((r / scale) ** 2) - np.log(math.pi * scale)
        return logpdf
    raise AttackError(f"unknown noise family {family!r}")


def log_tail(family: Family, t: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """log P(noise >= t) for the same laws (a value clamped at the upper bound; use -t for the lower)."""
    t = np.asarray(t, dtype=np.float64) / np.asarray(scale, dtype=np.float64)
    if family == "laplace":
        return np.where(t >= 0, np.log(0.5) - t, np.log1p(-0.5 * np.exp(np.minimum(t, 0.0))))
    if family == "gaussian":
        from scipy import special  # scipy is imported where it is used: design.md, "Start-up"

        log_tail: np.ndarray = special.log_ndtr(-t)
        return log_tail
    return np.log(0.5 - np.arctan(t) / math.pi)


@dataclass(frozen=True)
class NoiseLaw:
    """A noise family and its scale; ``scale`` may depend on N1 through ``scale_of`` (smooth sensitivity)."""

    family: Family
    scale: float | None = None
    scale_of: Any = None  # callable n1 -> scale, when the scale depends on the group sizes

    def at(self, n1: int) -> float:
        """The scale when group 1 has ``n1`` members."""
        scale = self.scale if self.scale_of is None else self.scale_of(n1)
        if scale is None:
            raise ValueError("a noise model needs a scale or a scale function")
        return float(scale)


@dataclass
class SumModel:
    """dp-counts: y_i = (H a)_i + noise_i (law ``law``) and y0 = sum a + noise_0 (law ``size_law``)."""

    H: np.ndarray
    y: np.ndarray
    law: NoiseLaw
    y0: float | None = None
    size_law: NoiseLaw | None = None

    def loglik(self, s: np.ndarray, n1: int) -> float:
        out = float(log_density(self.law.family, self.y - s, self.law.at(n1)).sum())
        if self.y0 is not None and self.size_law is not None:
            out += float(log_density(self.size_law.family, np.array([self.y0 - n1]), self.size_law.at(n1))[0])
        return out


@dataclass
class SpModel:
    """SP answers: y_i = c (H a)_i - (H 1)_i / N0 + noise_i, c = 1/N1 + 1/N0; values at ``bounds`` censored."""

    H: np.ndarray
    y: np.ndarray
    law: NoiseLaw
    bounds: tuple[float, float] | None = None  # the metric's range when answers were clamped to it
    rowsum: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.rowsum = self.H.sum(axis=1)

    def mean(self, s: np.ndarray, n1: int) -> np.ndarray:
        n0 = self.H.shape[1] - n1
        expected: np.ndarray = (1.0 / n1 + 1.0 / n0) * s - self.rowsum / n0
        return expected

    def loglik(self, s: np.ndarray, n1: int) -> float:
        n = self.H.shape[1]
        if not 0 < n1 < n:
            return -math.inf
        mu, scale = self.mean(s, n1), self.law.at(n1)
        r = self.y - mu
        if self.bounds is None:
            return float(log_density(self.law.family, r, scale).sum())
        low, high = self.bounds
        dens = log_density(self.law.family, r, scale)
        dens = np.where(self.y >= high, log_tail(self.law.family, high - mu, scale), dens)
        dens = np.where(self.y <= low, log_tail(self.law.family, mu - low, scale), dens)
        return float(dens.sum())


LikelihoodModel = SumModel | SpModel


def model_from_release(metric: str, H: np.ndarray, values: np.ndarray, release: Mapping[str, Any]
                       ) -> LikelihoodModel:
    """The likelihood model of one answered query, from its public notes (what the mechanism published).

    ``statistics`` (dp-counts) gives the noisy group-1 sums and size; ``scale`` (laplace) the per-answer
    Laplace scale; otherwise ``noise`` with ``epsilon`` (and ``delta``) are the smooth protocols, whose
    scale factor x S(N0, N1)/epsilon the adversary evaluates for every candidate A.
    """
    from parley.protocols.dp.sensitivity import smooth_sensitivity
    from parley.protocols.mechanisms.count_dp import PAIR, PREDICTION_BITS
    from parley.protocols.mechanisms.smooth_sensitivity import beta_cauchy, beta_laplace

    m, n = H.shape
    y = np.asarray(values, dtype=np.float64)
    if "statistics" in release:
        stats = release["statistics"]
        if list(stats.get("slices", [])) != ["all"]:
            raise AttackError(UNKNOWN_RELEASE.format(keys="statistics of a label slice (only SP is decoded)"))
        k1 = np.asarray(stats["sums"], dtype=np.float64)[0, :, 1]
        n1_noisy = float(np.asarray(stats["sizes"])[0, 1])
        unit = float(1 << PREDICTION_BITS)
        Hr = np.rint(H * unit) / unit  # the compliance party sums predictions on this grid
        if list(release.get("release", []))[:1] == [PAIR]:
            # one model, the pair: K = h a + Lap(b) and Z = (1 - h) a + Lap(b), Z = N - K, no separate size
            b = float(np.asarray(release["scale"]["sum"], dtype=np.float64)[0, 0])
            rows = np.vstack([Hr, 1.0 - Hr])
            return SumModel(rows, np.concatenate([k1, n1_noisy - k1]), NoiseLaw("laplace", b))
        family: Family = "laplace" if "scale" in release else "gaussian"
        notes = release["scale"] if family == "laplace" else release["sigma"]
        centre = np.asarray(release["centre"], dtype=np.float64)[0]
        scales = np.asarray(notes["sum"], dtype=np.float64)[0]
        d = k1 - centre * n1_noisy  # the released centred sums (exact: both terms lie on the 2^-B grid)
        live = scales > 0  # a model constant on the slice releases d_i = 0 exactly: no information on A
        base = float(scales[live].min()) if live.any() else 1.0
        weight = scales[live] / base  # row i divided by its scale's multiple: one law of scale ``base``
        A = (Hr[live] - centre[live, None]) / weight[:, None]
        return SumModel(A, d[live] / weight, NoiseLaw(family, base), n1_noisy,
                        NoiseLaw(family, float(notes["size"])))
    bounds = (-1.0, 1.0) if release.get("out_of_range") == "clamp" and metric == "sp" else None
    if metric != "sp":
        raise AttackError(UNKNOWN_RELEASE.format(keys=f"metric {metric!r}; the attack decodes SP answers"))
    if "scale" in release and release.get("noise") == "laplace":
        return SpModel(H, y, NoiseLaw("laplace", float(release["scale"])), bounds)
    noise, eps = release.get("noise"), release.get("epsilon")
    if noise == "cauchy" and eps is not None:
        beta, factor, family = beta_cauchy(float(eps), m), 6.0, "cauchy"
    elif noise == "laplace" and eps is not None and release.get("delta") is not None:
        beta, factor, family = beta_laplace(float(eps), float(release["delta"]), m), 2.0, "laplace"
    else:
        raise AttackError(UNKNOWN_RELEASE.format(keys=", ".join(sorted(release)) or "none"))

    def scale_of(n1: int, _beta: float = beta, _factor: float = factor, _eps: float = float(eps)) -> float:
        return _factor * smooth_sensitivity("sp", m, n - n1, n1, _beta) / _eps

    return SpModel(H, y, NoiseLaw(family, scale_of=scale_of), bounds)


def _columns(H: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(H.T)


def gibbs_marginals(model: LikelihoodModel, prior: float, rng: np.random.Generator, sweeps: int = 400,
                    burn: int | None = None, start: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Posterior marginals P(a_j = 1 | answers) by Gibbs sampling under the exact likelihood.

    Each step redraws one a_j from its conditional given the others: log-odds = log L(a_j = 1) -
    log L(a_j = 0) + logit(prior). The marginal is the Rao-Blackwellised average of that conditional
    over the sweeps after ``burn`` (default half).

    Parameters
    ----------
    model : SumModel or SpModel
    prior : float
        P(a_j = 1) before the answers (the public share of group 1).
    rng : numpy Generator
    sweeps : int
        Passes over all n individuals.
    burn : int, optional
    start : array, optional
        Initial A (default: a draw from the prior).
    """
    from scipy import special

    started = time.perf_counter()
    cols = _columns(model.H)
    n = cols.shape[0]
    burn = sweeps // 2 if burn is None else burn
    z = np.less(rng.random(n), prior).astype(np.int8) if start is None else np.asarray(start, dtype=np.int8).copy()
    if isinstance(model, SpModel) and not 0 < z.sum() < n:  # both groups must be present
        z[rng.integers(n)] ^= 1
    s = model.H @ z.astype(np.float64)
    n1 = int(z.sum())
    ll = model.loglik(s, n1)
    logit = math.log(prior / (1.0 - prior))
    acc = np.zeros(n)
    kept = 0
    for sweep in range(sweeps):
        record = sweep >= burn
        for j in rng.permutation(n):
            if z[j]:
                s_alt, n1_alt = s - cols[j], n1 - 1
                ll_alt = model.loglik(s_alt, n1_alt)
                odds = ll - ll_alt + logit
            else:
                s_alt, n1_alt = s + cols[j], n1 + 1
                ll_alt = model.loglik(s_alt, n1_alt)
                odds = ll_alt - ll + logit
            p1 = float(special.expit(odds)) if np.isfinite(odds) else (1.0 if odds > 0 else 0.0)
            if record:
                acc[j] += p1
            new = rng.random() < p1
            if new != bool(z[j]):
                z[j] = 1 - z[j]
                s, n1, ll = s_alt, n1_alt, ll_alt
        kept += record
    return acc / max(kept, 1), {"sweeps": sweeps, "burn": burn, "decode_s": time.perf_counter() - started}


def informed_log_odds(model: LikelihoodModel, a_true: np.ndarray) -> np.ndarray:
    """log L(a_j = 1) - log L(a_j = 0) with every other a_i set to the truth: the informed adversary's test."""
    z = np.asarray(a_true, dtype=np.float64)
    cols = _columns(model.H)
    s, n1 = model.H @ z, int(z.sum())
    ll = model.loglik(s, n1)
    out = np.empty(z.size)
    for j in range(z.size):
        if z[j]:
            out[j] = ll - model.loglik(s - cols[j], n1 - 1)
        else:
            out[j] = model.loglik(s + cols[j], n1 + 1) - ll
    return out


def _milp_lad(A: np.ndarray, y: np.ndarray, weights: np.ndarray, linear: np.ndarray, total: int | None,
              time_limit: float) -> tuple[np.ndarray, float, bool]:
    """min sum_i w_i |y_i - (A z)_i| + linear . z over binary z (and sum z = total): HiGHS MILP."""
    from scipy import optimize, sparse

    m, n = A.shape
    # variables: z (n, binary), t (m, >= 0); t_i >= y_i - A_i z and t_i >= A_i z - y_i
    c = np.concatenate([linear, weights])
    eye = sparse.identity(m, format="csr")
    As = sparse.csr_matrix(A)
    rows = sparse.vstack([sparse.hstack([As, eye]), sparse.hstack([-As, eye])], format="csr")
    cons = [optimize.LinearConstraint(rows, np.concatenate([y, -y]), np.inf)]
    if total is not None:
        cons.append(optimize.LinearConstraint(np.concatenate([np.ones(n), np.zeros(m)])[None, :], total, total))
    integrality = np.concatenate([np.ones(n), np.zeros(m)])
    bounds = optimize.Bounds(np.zeros(n + m), np.concatenate([np.ones(n), np.full(m, np.inf)]))
    res = optimize.milp(c, constraints=cons, integrality=integrality, bounds=bounds,
                        options={"time_limit": time_limit, "disp": False})
    if res.x is None:
        return np.zeros(n, dtype=np.int8), math.inf, False
    return np.rint(res.x[:n]).astype(np.int8), float(res.fun), bool(res.status == 0)


def milp_map(model: LikelihoodModel, n1_candidates: np.ndarray | None = None,
             time_limit: float = 20.0) -> tuple[np.ndarray, dict[str, Any]]:
    """The exact maximum-likelihood A under a Laplace likelihood (HiGHS MILP).

    Sums model: one program, -log L = sum_i |y_i - (H a)_i| / b + |y0 - sum a| / b0 (+ constants).
    SP model: the mean and (smooth protocols) the scale depend on N1, so one program per candidate N1
    with sum a = N1; the best adds the scale's normaliser m log(2 b(N1)).
    ``optimal`` is False when a program hit ``time_limit`` (the result is then HiGHS's best found).
    Answers clamped to the metric's range (``out_of_range = "clamp"``) are fitted as observed values
    here, not as censored ones (Gibbs scores them by their tail probability).
    """
    started = time.perf_counter()
    if model.law.family != "laplace":
        raise AttackError(MILP_NEEDS_LAPLACE.format(family=model.law.family))
    m, n = model.H.shape
    if isinstance(model, SumModel):
        A, y = model.H, model.y
        w = np.full(m, 1.0 / model.law.at(0))
        if model.y0 is not None and model.size_law is not None:
            if model.size_law.family != "laplace":
                raise AttackError(MILP_NEEDS_LAPLACE.format(family=model.size_law.family))
            A, y = np.vstack([A, np.ones((1, n))]), np.append(y, model.y0)
            w = np.append(w, 1.0 / model.size_law.at(0))
        z, _, optimal = _milp_lad(A, y, w, np.zeros(n), None, time_limit)
        return z, {"optimal": optimal, "programs": 1, "decode_s": time.perf_counter() - started}
    if n1_candidates is None:
        n1_candidates = np.arange(1, n)
    best: tuple[float, np.ndarray] | None = None
    optimal_all = True
    for n1 in n1_candidates:
        n1 = int(n1)
        n0 = n - n1
        b = model.law.at(n1)
        c = 1.0 / n1 + 1.0 / n0
        y = model.y + model.rowsum / n0  # = c (H a) + noise
        z, fun, optimal = _milp_lad(c * model.H, y, np.full(m, 1.0 / b), np.zeros(n), n1, time_limit)
        optimal_all &= optimal
        score = fun + m * math.log(2.0 * b)  # -log likelihood: LAD term + the scale's normaliser

        if best is None or score < best[0]:
            best = (score, z)
    assert best is not None
    return best[1], {"optimal": optimal_all, "programs": len(n1_candidates), "decode_s": time.perf_counter() - started}
