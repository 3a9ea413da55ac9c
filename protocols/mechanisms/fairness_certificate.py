"""``fairness-certificate``: the compliance party certifies a model's fairness on its training set.

The setting of Ferry et al. (SaTML 2023), Sec. III-A: a fair model is deployed
with public fairness information, e.g. "satisfies statistical parity within
0.05" (a legal requirement such as the four-fifths rule, Sec. I), or the exact
unfairness value (Sec. III-B notes a value is even more useful to an attacker
than a bound). Here the compliance party, which holds A of the training set
(``holds = ("audit", "train")``), computes the unfairness of the predictions the
data center sends (:func:`parley.protocols.group_gaps.unfairness`: the largest gap
between a group's positive rate and the slice's, Table I) and signs:

* ``release = "value"``: the metric and its value, rounded *up* to ``decimals``
  places when set (a rounded certificate stays a true upper bound);
* ``release = "tolerance"``: the metric and the declared tolerance, only when the
  model meets it; a model that does not is refused (``QueryError``), so a
  certificate never states something false.

A certificate spends no privacy budget: it is exactly the kind of group-level
release the paper shows differential privacy cannot protect (Sec. V-A).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field

from parley.protocols.base import Holdings, Protocol, ProtocolParams, register_protocol
from parley.protocols.errors import QueryError
from parley.protocols.group_gaps import GAP_METRICS, unfairness
from parley.protocols.queries import require_fields, validate_predictions

__all__ = ["CERTIFICATE_FIELDS", "FairnessCertificate", "FairnessCertificateParams", "NOT_CERTIFIED", "NO_TRAIN",
           "ONE_MODEL"]

CERTIFICATE_FIELDS = ("predictions", "query_id")
NOT_CERTIFIED = ("the model's {metric} unfairness on the training set is {value:.6f}, "
                 "above the tolerance {tolerance:g}: no certificate")
ONE_MODEL = "a certificate covers one model's predictions on the training set; got {m} models"
SLICE_NAMES = {None: "all", 0: "y=0", 1: "y=1"}
NO_TRAIN = ("this compliance party holds no training set: "
            "the fairness-certificate protocol needs holds = ('audit', 'train')")


class FairnessCertificateParams(ProtocolParams):
    metric: Literal["sp", "pe", "eo", "eodds"] = Field(default="sp", description="the certified fairness metric")
    release: Literal["value", "tolerance"] = Field(
        default="value", description="publish the exact unfairness, or only that it is within tolerance")
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False,
                             description="the bound certified when release = 'tolerance'")
    decimals: int | None = Field(default=None, ge=0, le=15,
                                 description="round a released value up to this many decimals; none = full float64")


@register_protocol
class FairnessCertificate(Protocol):
    """Signs the target model's fairness on the training set: metric with value or tolerance."""

    name = "fairness-certificate"
    Params = FairnessCertificateParams
    params: FairnessCertificateParams
    metrics = ()
    flow = "fairness-certificate"
    requests = {"certificate-request": "fairness-certificate"}
    holds = ("audit", "train")
    per_individual_kinds = ()  # a metric and one value (or a tolerance): nothing per individual

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        if kind not in self.requests:
            return super().respond(kind, payload, holdings, rng)
        if "train" not in holdings:
            raise QueryError(NO_TRAIN)
        require_fields(payload, CERTIFICATE_FIELDS)
        train = holdings["train"]
        predictions = validate_predictions(payload["predictions"], train.n)
        if predictions.shape[0] != 1:
            raise QueryError(ONE_MODEL.format(m=predictions.shape[0]))
        predictions = predictions[0]
        params = self.params
        value = unfairness(params.metric, predictions, train.a, train.y)
        certificate: dict[str, Any] = {"metric": params.metric, "definition": "max group gap to slice rate",
                                       "slices": [SLICE_NAMES[s] for s in GAP_METRICS[params.metric]], "n": train.n}
        if params.release == "value":
            if params.decimals is not None:
                scale = 10.0 ** params.decimals
                # Up, so the certificate stays an upper bound; a product within float error of a grid point is on it.
                scaled = value * scale
                nearest = round(scaled)
                value = (nearest if abs(scaled - nearest) <= 4 * math.ulp(scaled) else math.ceil(scaled)) / scale
            return {**certificate, "value": float(value), "decimals": params.decimals}
        if value > params.tolerance:
            raise QueryError(NOT_CERTIFIED.format(metric=params.metric, value=value, tolerance=params.tolerance))
        return {**certificate, "tolerance": float(params.tolerance)}
