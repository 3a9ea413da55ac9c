"""``smooth-cauchy`` and ``smooth-laplace``: Attribute-Conceal (Hamman, Chen & Dutta, FAccT 2023, Sec. 4.2).

Noise calibrated to the beta-smooth sensitivity S of the *actual* audit set
(Def. 4.3; Nissim, Raskhodnikova & Smith, STOC 2007), which the compliance party
computes from its group sizes N0, N1. Both protocols answer SP and |SP|
(App. D.4); S comes from :mod:`parley.protocols.dp.sensitivity`, which gives the exact smooth
sensitivity (the paper's closed form with min/max of the group sizes, the s = 1
case made smooth, and the |SP| form corrected; see that module).

``smooth-cauchy`` (Thm. 7, Algorithm 3), epsilon-DP. The theorem: "Let Z be an
m-dimensional random noise with entries independently sampled from a Cauchy
distribution P(z) = prod_{i=1}^m 1/(1 + z_i^2). For statistical parity gap query
(SP), the mechanism M(S) = SP(S) + 6 Delta^smooth_{SP,beta}(S)/epsilon Z is
epsilon-differentially private, [...] and beta = epsilon/(6m)." So each Z_i is a
*standard* Cauchy variable, density 1/(pi (1 + z^2)): NRS's admissible family
h(z) ∝ 1/(1 + |z|^gamma) with gamma = 2 (the proof cites NRS's lemmas "with
gamma = 2"), which is (epsilon/(2(gamma+1)), .)-admissible, hence the factor 6 =
2 (gamma + 1). Algorithm 3 samples Z_i "from a standard Cauchy distribution"
likewise.

``smooth-laplace`` (Thm. 8), (epsilon, delta)-DP for epsilon, delta in (0, 1):
Z with density 2^{-m} e^{-||z||_1} (i.i.d. standard Laplace), noise 2 S/epsilon Z,
beta = epsilon/(4(m + ln(2/delta))). The theorem is stated for epsilon < 1 (NRS's
Laplace admissibility lemma needs it), so the parameters enforce it.

Floating point
--------------
``exact + scale * Z`` in double precision leaks ``exact`` (and the scale, hence
N0) through its low-order bits (docs/reliability.md, "Floating-point events").
The default ``sampler="lattice"`` releases g (round(f(S)/g) + Y) with Y_i exact
discrete Cauchy or discrete Laplace integers of scale factor S_g/(epsilon g)
(:func:`parley.protocols.dp.lattice.smooth_lattice`, whose docstring proves
epsilon-DP for the Cauchy family and (epsilon, delta)-DP for the Laplace family
with the theorems' beta and factors). The lattice spacing g is a power of two,
2^-12 to 2^-13 of :func:`lattice_bound` = min(1, factor/epsilon)/(n + 1), a public
lower bound on S/m and on the per-answer noise scale factor S/(m epsilon)
(S >= m/(n + 1) for SP and |SP| at every audit set of size n, since
LS >= m/s >= 2m/n, or m/2 when s = 1, times n/(n + 1) for |SP|), so g reveals
nothing about N0. ``sampler="float-unsafe"`` keeps the textbook float release
(numpy's ``standard_cauchy`` / ``laplace``) as an explicit opt-in, with
:data:`~parley.protocols.dp.lattice.FLOAT_UNSAFE_WARNING` in each answer.

What an answer records
----------------------
Algorithm 3 returns only the noisy values. S (and hence the noise scale) is a
function of N0, the group sizes the mechanism protects, and is not itself released
privately, so the notes carry only epsilon, delta, the noise family and the
out-of-range policy with its clamp count (Remark 6; a post-processing of the
release), the sampler and the public lattice spacing ``granularity`` -- never
S, N0, N1 or the scale.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
from pydantic import Field

from parley.protocols.base import AuditSet, ExactValueProtocol, MetricQuery, register_protocol
from parley.protocols.budget import ApproxDP, Budget, PureDP
from parley.protocols.dp.lattice import FLOAT_UNSAFE_WARNING, smooth_lattice
from parley.protocols.dp.sensitivity import SMOOTH_METRICS, smooth_sensitivity
from parley.protocols.errors import QueryError
from parley.protocols.mechanisms.laplace import OutOfRange, SamplerParams, apply_out_of_range
from parley.protocols.metrics import group_sizes

__all__ = [
    "SmoothCauchyParams",
    "SmoothCauchyProtocol",
    "SmoothLaplaceParams",
    "SmoothLaplaceProtocol",
    "SmoothSampler",
    "lattice_bound",
    "beta_cauchy",
    "beta_laplace",
    "BAD_EPSILON",
    "BAD_DELTA",
]

BAD_EPSILON = "epsilon must be a finite number > 0, got {value!r}"
BAD_DELTA = "delta must lie in (0, 1), got {value!r}"

#: Exact discrete noise on a public lattice (default), or the textbook float release (unsafe, explicit opt-in).
SmoothSampler = Literal["lattice", "float-unsafe"]
_SAMPLER_HELP = ("noise sampler: 'lattice' (exact discrete noise on a power-of-two lattice, protocols/dp/lattice.py) "
                 "or 'float-unsafe' (exact + scale * Z in double precision, whose low-order bits leak the answer)")


def lattice_bound(factor: float, epsilon: float, n: int) -> float:
    """min(1, factor/epsilon) / (n + 1): a public lower bound on S/m and on factor S/(m epsilon) (module docstring).

    Every audit set of size n has S >= m/(n + 1), so the lattice spacing set from
    this bound is fixed by public quantities and the rounding it causes adds at
    most 2^-12 S to the sensitivity.
    """
    return min(1.0, factor / epsilon) / (n + 1)


class _SmoothSamplerParams(SamplerParams):
    sampler: SmoothSampler = Field(default="lattice", description=_SAMPLER_HELP)


def beta_cauchy(epsilon: float, m: int) -> float:
    """Smoothing parameter of Thm. 7: beta = epsilon / (6 m)."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise QueryError(BAD_EPSILON.format(value=epsilon))
    return epsilon / (6.0 * m)


def beta_laplace(epsilon: float, delta: float, m: int) -> float:
    """Smoothing parameter of Thm. 8: beta = epsilon / (4 (m + ln(2/delta)))."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise QueryError(BAD_EPSILON.format(value=epsilon))
    if not 0.0 < delta < 1.0:
        raise QueryError(BAD_DELTA.format(value=delta))
    return epsilon / (4.0 * (m + math.log(2.0 / delta)))


class SmoothCauchyParams(_SmoothSamplerParams):
    """Parameters of smooth-cauchy: epsilon per query (pure DP) and out-of-range values."""

    protocol_name = "smooth-cauchy"
    epsilon: float = Field(gt=0.0, allow_inf_nan=False, description="privacy loss per query (pure DP, Thm. 7)")
    out_of_range: OutOfRange = Field(default="raw", description="Remark 6: 'raw' noisy values or 'clamp' to the range")


class SmoothLaplaceParams(_SmoothSamplerParams):
    """Parameters of smooth-laplace: epsilon and delta per query and out-of-range values."""

    protocol_name = "smooth-laplace"
    epsilon: float = Field(gt=0.0, lt=1.0, description="privacy loss per query; Thm. 8 needs epsilon in (0, 1)")
    delta: float = Field(gt=0.0, lt=1.0, description="failure probability per query; Thm. 8 needs delta in (0, 1)")
    out_of_range: OutOfRange = Field(default="raw", description="Remark 6: 'raw' noisy values or 'clamp' to the range")


#: The parameters of one of the two smooth-sensitivity protocols.
P = TypeVar("P", SmoothCauchyParams, SmoothLaplaceParams)


class _SmoothProtocol(ExactValueProtocol[P]):
    """Shared release: exact + (factor * S / epsilon) * Z, Z i.i.d. from ``noise``."""

    metrics = SMOOTH_METRICS
    #: Noise multiplier of the theorem (6 for Thm. 7, 2 for Thm. 8).
    factor: ClassVar[float]
    #: Name of the standard noise distribution recorded in answers (and the lattice noise family).
    noise: ClassVar[Literal["laplace", "cauchy"]]

    @abstractmethod
    def beta(self, m: int) -> float:
        """The smoothing parameter of the theorem for a query of m models."""

    @abstractmethod
    def _draw(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """m i.i.d. draws of the theorem's standard noise."""

    def _notes(self) -> dict[str, Any]:
        return {"epsilon": self.params.epsilon}

    def noise_scale(self, query: MetricQuery, audit: AuditSet) -> float:
        """factor * S / epsilon, with S the beta-smooth sensitivity at the actual audit set (not released)."""
        n0, n1 = group_sizes(audit.a)
        s = smooth_sensitivity(query.metric, query.m, n0, n1, self.beta(query.m))
        return self.factor * s / self.params.epsilon

    def release(
        self, exact: np.ndarray, query: MetricQuery, audit: AuditSet, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n0, n1 = group_sizes(audit.a)
        smooth = smooth_sensitivity(query.metric, query.m, n0, n1, self.beta(query.m))
        notes: dict[str, Any] = {"sampler": self.params.sampler}
        if self.params.sampler == "lattice":
            public = lattice_bound(self.factor, self.params.epsilon, audit.n)
            noisy, notes["granularity"] = smooth_lattice(exact, smooth, self.factor, self.params.epsilon, public,
                                                         audit.n, self.noise, rng)
        else:
            scale = self.factor * smooth / self.params.epsilon
            noisy = np.asarray(exact, dtype=np.float64) + scale * self._draw(rng, query.m)
            notes["warning"] = FLOAT_UNSAFE_WARNING
        values, clamped = apply_out_of_range(noisy, query.metric, self.params.out_of_range)
        return values, {**self._notes(), "noise": self.noise,
                        "out_of_range": self.params.out_of_range, "clamped": clamped, **notes}


@register_protocol
class SmoothCauchyProtocol(_SmoothProtocol[SmoothCauchyParams]):
    """Attribute-Conceal (Thm. 7, Algorithm 3): standard Cauchy noise times 6 S/epsilon, beta = epsilon/(6m)."""

    name = "smooth-cauchy"
    Params = SmoothCauchyParams
    factor = 6.0
    noise = "cauchy"

    def beta(self, m: int) -> float:
        return beta_cauchy(self.params.epsilon, m)

    def _draw(self, rng: np.random.Generator, m: int) -> np.ndarray:
        return rng.standard_cauchy(size=m)  # density 1/(pi (1 + z^2)) per coordinate

    def cost(self, query: MetricQuery) -> Budget:
        return PureDP(epsilon=self.params.epsilon)


@register_protocol
class SmoothLaplaceProtocol(_SmoothProtocol[SmoothLaplaceParams]):
    """Thm. 8: standard Laplace noise times 2 S/epsilon, beta = epsilon/(4(m + ln(2/delta))); (epsilon, delta)-DP."""

    name = "smooth-laplace"
    Params = SmoothLaplaceParams
    factor = 2.0
    noise = "laplace"

    def beta(self, m: int) -> float:
        return beta_laplace(self.params.epsilon, self.params.delta, m)

    def _draw(self, rng: np.random.Generator, m: int) -> np.ndarray:
        return rng.laplace(0.0, 1.0, size=m)  # density e^{-|z|}/2 per coordinate

    def _notes(self) -> dict[str, Any]:
        return {"epsilon": self.params.epsilon, "delta": self.params.delta}

    def cost(self, query: MetricQuery) -> Budget:
        return ApproxDP(epsilon=self.params.epsilon, delta=self.params.delta)
