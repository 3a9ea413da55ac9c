"""``laplace``: metric answers plus Laplace noise calibrated to the global sensitivity.

The naive differentially private baseline of Hamman, Chen & Dutta (FAccT 2023),
Sec. 4.1: for a query of m models the compliance party releases

    M(S) = f(S) + (Z_1, ..., Z_m),   Z_i i.i.d. Lap(Delta_f / epsilon),

which is epsilon-DP for neighbours that differ in one individual's protected
attribute (Def. 4.1) when Delta_f is the l1 global sensitivity of the m answers
(Def. 4.2; Dwork, McSherry, Nissim, Smith 2006). One query is one release and
costs epsilon (pure DP); a run's ledger composes the costs.

Delta_f comes from :func:`parley.protocols.dp.sensitivity.global_sensitivity`: Thm. 5 for SP
(m/2 + m/(n-1)); for |SP| n/(n+1) times that, m n/(2(n-1)), because Thm. 6's m/2 is
below the true sensitivity; for EO/PE Thm. 5 on the label slice (the slice size
replaces n; the paper's m/2 + m/(n-1) for EO is too small); EOdds and cov derived
there. PRP is refused (its refusals leak; see that module). The sensitivity uses
only public quantities (m, n, label counts), so the noise scale is recorded in
each answer.

Out-of-range answers (Remark 6): ``out_of_range="raw"`` releases the noisy values
as they are (still epsilon-DP and unbiased); ``"clamp"`` maps them to the metric's
range (:data:`parley.protocols.metrics.METRICS`), a post-processing that keeps the
guarantee; the answer records how many values were clamped.

Floating point (Mironov 2012). The default ``sampler="lattice"`` releases
g (round(f(S)/g) + Y) with Y exact discrete Laplace on a power-of-two lattice
fixed by Delta/epsilon, the rounding counted in the sensitivity
(:func:`parley.protocols.dp.lattice.laplace_lattice`, which proves pure
epsilon-DP); ``"snapping"`` is Mironov's snapping mechanism
(:mod:`parley.protocols.dp.snapping`). ``"float-unsafe"`` is numpy's textbook
sampler, whose low-order bits reveal the input; it is an explicit opt-in, and
each answer then carries :data:`~parley.protocols.dp.lattice.FLOAT_UNSAFE_WARNING`
(docs/reliability.md, "Floating-point events").
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_serializer, model_validator

from parley.protocols.base import AuditSet, ExactValueProtocol, MetricQuery, ProtocolParams, register_protocol
from parley.protocols.budget import PureDP
from parley.protocols.dp.lattice import FLOAT_UNSAFE_WARNING, laplace_lattice, warn_float_unsafe
from parley.protocols.dp.sensitivity import GLOBAL_METRICS, global_sensitivity
from parley.protocols.dp.snapping import snapping_laplace, textbook_laplace
from parley.protocols.metrics import METRICS

__all__ = ["LaplaceParams", "LaplaceProtocol", "OutOfRange", "Sampler", "apply_out_of_range", "label_counts"]

#: Remark 6: release noisy values as they are, or map them to the metric's range.
OutOfRange = Literal["raw", "clamp"]
#: Noise sampler: exact discrete Laplace on a lattice (default), Mironov's snapping mechanism (both
#: floating-point safe), or numpy's textbook float sampler (unsafe, explicit opt-in).
Sampler = Literal["lattice", "snapping", "float-unsafe"]


def apply_out_of_range(noisy: np.ndarray, metric: str, mode: str) -> tuple[np.ndarray, int]:
    """Apply the out-of-range policy of Remark 6; returns (values, number clamped).

    Clamping is post-processing of the noisy release, so it keeps the mechanism's
    privacy guarantee; the count is a function of the same release.
    """
    if mode == "raw":
        return noisy, 0
    low, high = METRICS[metric].range
    outside = int(np.count_nonzero((noisy < low) | (noisy > high)))
    return np.clip(noisy, low, high), outside


def label_counts(audit: AuditSet) -> tuple[int, int]:
    """(n_pos, n_neg) = (#{y=1}, #{y=0}) of the audit set: public, fixed across neighbours."""
    n_pos = int(np.count_nonzero(np.asarray(audit.y) == 1))
    return n_pos, audit.n - n_pos


class SamplerParams(ProtocolParams):
    """Parameters of a protocol that adds noise: the sampler, the exact lattice one by default.

    Choosing ``"float-unsafe"`` warns (:func:`parley.protocols.dp.lattice.warn_float_unsafe`);
    the default is left out of the serialised spec, so specs and study cell ids keep their form.
    """

    #: The protocol these parameters belong to, named in the float-unsafe warning.
    protocol_name: ClassVar[str]
    sampler: str = "lattice"

    @model_serializer(mode="wrap")
    def _omit_default_sampler(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("sampler") == "lattice":
            data.pop("sampler")
        return data

    @model_validator(mode="after")
    def _warn_float_unsafe(self) -> SamplerParams:
        if self.sampler == "float-unsafe":
            warn_float_unsafe(self.protocol_name)
        return self


class LaplaceParams(SamplerParams):
    """Parameters of the Laplace protocol: epsilon per query, out-of-range values and the noise sampler."""

    protocol_name = "laplace"
    epsilon: float = Field(gt=0.0, allow_inf_nan=False, description="privacy loss per query (pure DP)")
    out_of_range: OutOfRange = Field(default="raw", description="Remark 6: 'raw' noisy values or 'clamp' to the range")
    sampler: Sampler = Field(default="lattice", description="noise sampler: 'lattice' (exact discrete Laplace on a "
                             "power-of-two lattice, protocols/dp/lattice.py), 'snapping' (Mironov 2012, "
                             "protocols/dp/snapping.py), or 'float-unsafe' (numpy's textbook sampler, whose low-order "
                             "bits leak the exact answer)")


@register_protocol
class LaplaceProtocol(ExactValueProtocol[LaplaceParams]):
    """Global-sensitivity Laplace mechanism (Thm. 5, 6; EO, PE, EOdds, cov by the same argument)."""

    name = "laplace"
    Params = LaplaceParams
    metrics = GLOBAL_METRICS

    def sensitivity(self, query: MetricQuery, audit: AuditSet) -> float:
        """l1 global sensitivity of the query's m answers on an audit set of this size and labels."""
        n_pos = n_neg = None
        if METRICS[query.metric].needs_labels:
            n_pos, n_neg = label_counts(audit)
        return global_sensitivity(query.metric, query.m, audit.n, n_pos=n_pos, n_neg=n_neg)

    def cost(self, query: MetricQuery) -> PureDP:
        """epsilon per query: the whole m-vector is one release with its l1 sensitivity."""
        return PureDP(epsilon=self.params.epsilon)

    def release(
        self, exact: np.ndarray, query: MetricQuery, audit: AuditSet, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[str, Any]]:
        epsilon = self.params.epsilon
        sensitivity = self.sensitivity(query, audit)
        scale = sensitivity / epsilon
        sampler = self.params.sampler
        notes: dict[str, Any] = {"sampler": sampler}
        if sampler == "lattice":  # exact discrete Laplace on gZ; the rounding makes the scale slightly larger
            noisy, lattice = laplace_lattice(exact, sensitivity, epsilon, audit.n, rng)
            scale = lattice["scale"]
            notes["granularity"] = lattice["granularity"]
        elif sampler == "snapping":  # floating-point safe; the grid makes the scale slightly larger
            low, high = METRICS[query.metric].range
            noisy, snap = snapping_laplace(exact, sensitivity, epsilon, max(abs(low), abs(high)), rng)
            scale = snap["snap_lambda"] * sensitivity
            notes.update(snap)
        else:
            noisy = textbook_laplace(exact, scale, rng)
            notes["warning"] = FLOAT_UNSAFE_WARNING
        values, clamped = apply_out_of_range(noisy, query.metric, self.params.out_of_range)
        return values, {"epsilon": epsilon, "noise": "laplace", "scale": float(scale),
                        "out_of_range": self.params.out_of_range, "clamped": clamped, **notes}
