"""rho-fair hypothesis selection: the third party says which random hypotheses are fair (Alg. 1).

Hu, Liu, Wang & Lan, "A Distributed Fair Machine Learning Framework with
Private Demographic Data Protection" (ICDM 2019), Algorithm 1: the data center
sends the predictions ``Yhat_t = (h_t(x_1), ..., h_t(x_n))`` of m random
hypotheses on its training set (step 3); the third party, which holds s of the
same individuals, estimates ``cov(h_t(x), s)`` and returns the index t of every
hypothesis with ``|cov(h_t(x), s)| <= rho`` (step 4). The data center then
learns in the span of the returned hypotheses (step 5; the learners live in
:mod:`parley.parties.learners.fair_span`).

The covariance is :func:`parley.protocols.metrics.covariance`, the 1/n population
covariance of the sample (the paper prints no estimator; see that module's
"Covariance normalisation"). The predictions here are real-valued scores of
linear or kernel hypotheses, not decisions in [0, 1], so the compliance party
checks only that they are finite.

Acceptance policies
-------------------
``policy = "hard"`` is step 4 as printed. ``policy = "soft"`` is our reading of
the soft threshold policy of Sec. V-C: the paper returns "t of any h_t with
probability N(h_*(x), sigma_2^2 I)", a Gaussian centred on a hypothesis h_*
with zero covariance, and prints no acceptance rule. For a linear family the
distance of h_t from the zero-covariance hyperplane is ``|cov_t| / ||cov(x, s)||``,
so a Gaussian in that distance is a Gaussian in the covariance; we accept t
with probability ``exp(-cov_t^2 / (2 rho^2))`` (1 at cov = 0, e^{-1/2} at the
hard threshold), an independent coin per hypothesis. ``noise`` adds
``N(0, noise^2)`` to every covariance before either policy (a defense against
the threshold-inversion attack, :mod:`parley.parties.attacks.threshold_inversion`);
it is not calibrated to any differential-privacy guarantee.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, cast

import numpy as np
from pydantic import Field

from parley.protocols.base import NO_REQUESTS, Holdings, ProtocolParams, RequestProtocol, register_protocol
from parley.protocols.errors import QueryError
from parley.protocols.metrics import covariance
from parley.protocols.queries import MAX_QUERY_VALUES

__all__ = ["CovarianceThreshold", "CovarianceThresholdParams", "accept", "acceptance_probability",
           "HYPOTHESES_NOT_ARRAY", "HYPOTHESES_SHAPE", "HYPOTHESES_N", "HYPOTHESES_NOT_FINITE",
           "HYPOTHESES_TOO_LARGE", "HYPOTHESES_MISSING", "NO_TRAINING_SET"]

REQUEST = "hypothesis-query"
REPLY = "accept-set"

HYPOTHESES_MISSING = "a hypothesis-query carries 'predictions' (m, n_train) of the m hypotheses; none given"
HYPOTHESES_NOT_ARRAY = "hypothesis predictions must be a numeric numpy array, got {type}"
HYPOTHESES_SHAPE = "hypothesis predictions must have shape (m, n_train) with m >= 1, got shape {shape}"
HYPOTHESES_N = "hypothesis predictions have {got} columns but the training set has n={n} individuals"
HYPOTHESES_NOT_FINITE = "hypothesis predictions contain {count} NaN or infinite values (first at hypothesis {row})"
HYPOTHESES_TOO_LARGE = "hypothesis predictions hold {size} values, above the limit of {limit} per query"
NO_TRAINING_SET = "the cov-threshold protocol answers about the training set, but this party holds no A for it"


class CovarianceThresholdParams(ProtocolParams):
    """rho, the acceptance policy and the optional Gaussian noise on the covariance."""

    rho: float = Field(default=0.1, gt=0.0, allow_inf_nan=False,
                       description="fairness threshold: accept h_t if |cov(h_t(x), s)| <= rho (Alg. 1 step 4)")
    policy: Literal["hard", "soft"] = Field(
        default="hard", description="hard threshold (Alg. 1) or the soft Gaussian policy (Sec. V-C)")
    noise: float = Field(default=0.0, ge=0.0, allow_inf_nan=False,
                         description="std of Gaussian noise added to each covariance before the policy (0 = none)")


def acceptance_probability(cov: np.ndarray, rho: float, policy: str) -> np.ndarray:
    """P(accept h_t) given its (possibly noised) covariance: 1{|cov| <= rho}, or exp(-cov^2 / 2 rho^2)."""
    cov = np.asarray(cov, dtype=np.float64)
    if policy == "hard":
        hard: np.ndarray = (np.abs(cov) <= rho).astype(np.float64)
        return hard
    return np.exp(-0.5 * (cov / rho) ** 2)


def accept(cov: np.ndarray, params: CovarianceThresholdParams, rng: np.random.Generator) -> np.ndarray:
    """Indices t (ascending, int64) of the hypotheses returned to the data center."""
    cov = np.asarray(cov, dtype=np.float64)
    if params.noise > 0.0:
        cov = cov + rng.normal(0.0, params.noise, size=cov.shape)
    p = acceptance_probability(cov, params.rho, params.policy)
    keep = p > 0.5 if params.policy == "hard" else rng.random(cov.shape) < p
    return np.flatnonzero(keep).astype(np.int64)


def _validate(predictions: Any, n: int) -> np.ndarray:
    if not isinstance(predictions, np.ndarray) or predictions.dtype.kind not in "biuf":
        raise QueryError(HYPOTHESES_NOT_ARRAY.format(
            type=type(predictions).__name__ if not isinstance(predictions, np.ndarray) else predictions.dtype))
    if predictions.ndim != 2 or predictions.shape[0] == 0:
        raise QueryError(HYPOTHESES_SHAPE.format(shape=predictions.shape))
    if predictions.shape[1] != n:
        raise QueryError(HYPOTHESES_N.format(got=predictions.shape[1], n=n))
    if predictions.size > MAX_QUERY_VALUES:
        raise QueryError(HYPOTHESES_TOO_LARGE.format(size=predictions.size, limit=MAX_QUERY_VALUES))
    H = np.asarray(predictions, dtype=np.float64)
    finite = np.isfinite(H)
    if not finite.all():
        raise QueryError(HYPOTHESES_NOT_FINITE.format(count=int((~finite).sum()),
                                                      row=int(np.argwhere(~finite)[0, 0])))
    return H


@register_protocol
class CovarianceThreshold(RequestProtocol[CovarianceThresholdParams]):
    """Alg. 1 step 4: return the indices of the rho-fair hypotheses among those sent.

    Request ``hypothesis-query`` with ``predictions`` (m, n_train) float; reply
    ``accept-set`` with ``accepted`` (int64 indices into the m rows), ``m``,
    ``rho`` and ``policy``. Nothing is released about s but the accept set.
    """

    name: ClassVar[str] = "cov-threshold"
    Params: ClassVar[type[ProtocolParams]] = CovarianceThresholdParams
    metrics: ClassVar[tuple[str, ...]] = ()
    flow: ClassVar[str] = "cov-threshold"
    requests: ClassVar[Mapping[str, str]] = {REQUEST: REPLY}
    holds: ClassVar[tuple[str, ...]] = ("audit", "train")
    per_individual_kinds: ClassVar[tuple[str, ...]] = ()  # the accept set indexes hypotheses, not individuals

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        if kind != REQUEST:
            raise QueryError(NO_REQUESTS.format(name=self.name, kind=kind))
        if "train" not in holdings:
            raise QueryError(NO_TRAINING_SET)
        if "predictions" not in payload:
            raise QueryError(HYPOTHESES_MISSING)
        train = holdings["train"]
        H = _validate(payload["predictions"], train.n)
        accepted = accept(cast(np.ndarray, covariance(H, train.a)), self.params, rng)  # H is 2-D: one per row
        return {"accepted": accepted, "m": int(H.shape[0]), "rho": float(self.params.rho),
                "policy": self.params.policy}
