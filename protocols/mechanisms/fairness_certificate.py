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
  places when set (a rounded certificate stays a true upper bound). This is the
  paper's attack setting: the value is released exactly and spends no budget,
  the kind of group-level release the paper shows differential privacy cannot
  protect (Sec. V-A).
* ``release = "tolerance"``: a signed *decision*, ``certified`` true or false,
  for the declared tolerance.

Why the decision is a priced release, not a refusal
---------------------------------------------------
Whether a model meets the tolerance is a function of A. An earlier version
refused an over-tolerance model with a text stating its exact unfairness, and
refused for free: flipping one person's decision per request read every
training-set A (200 of 200 people in 201 refusals). Even a refusal without the
value is a free, repeatable 1-bit oracle on A. So the decision is treated as
what it is, a 1-bit release, and priced like an answer: it is a signed reply
(never a refusal), charged ``PureDP(epsilon)`` in the ledger before it leaves,
and a retry of the same query id gets the same decision back without a second
debit or fresh noise (the ledger replays it). Nothing a refusal of this protocol
says is computed from A: every refusal (malformed predictions, several models, no
training set) depends on the request and the configuration only. Making the
decision independent of A was the other option; it would certify nothing.

The test is a noisy threshold (the Laplace mechanism's one-query AboveThreshold,
Dwork & Roth 2014, Thm. 3.6 and Sec. 3.6): with ``k = min_group``,

    U_k = max over slices S and groups g of |s_g - N_g r_S| / max(N_g, k),
    certified  iff  U_k + Lap(1 / (k epsilon)) <= tolerance - ln(1 / (2 beta)) / (k epsilon),

where on slice S, ``N_g`` members of group g accept ``s_g`` times and ``r_S`` is
the slice's acceptance rate (a function of the predictions and the labels, not
of A). Moving one person between groups changes each ``|s_g - N_g r_S|`` by at
most ``|h_j - r_S| <= 1`` while ``max(N_g, k)`` stays >= k, so U_k has
sensitivity 1/k and the decision is epsilon-DP for neighbours differing in one
person's A (post-processing of the Laplace mechanism). Where every group of
every slice has at least k members, U_k is the unfairness itself; a smaller
group's gap is shrunk by N_g / k (the statistic stays bounded where a group is
tiny, the price of a data-independent scale; say so when certifying such data).
The margin makes a false certificate rare: when U_k > tolerance,
P(certified) <= P(Lap(b) <= -b ln(1/(2 beta))) = beta (``false_certificate``).
The noise is numpy's Laplace sampler; only the decision leaves the party, never
the noisy value, so its low-order bits (Mironov 2012) are not released.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_serializer

from parley.protocols.base import NO_REQUESTS, Holdings, ProtocolParams, RequestProtocol, register_protocol
from parley.protocols.budget import PureDP
from parley.protocols.errors import QueryError
from parley.protocols.group_gaps import GAP_METRICS, metric_slices, unfairness
from parley.protocols.queries import require_fields, validate_predictions

__all__ = ["CERTIFICATE_FIELDS", "FairnessCertificate", "FairnessCertificateParams", "NO_TRAIN", "ONE_MODEL",
           "bounded_unfairness", "threshold_margin"]

CERTIFICATE_FIELDS = ("predictions", "query_id")
ONE_MODEL = "a certificate covers one model's predictions on the training set; got {m} models"
SLICE_NAMES = {None: "all", 0: "y=0", 1: "y=1"}
#: Parameters of the tolerance decision only.
TOLERANCE_ONLY = ("epsilon", "min_group", "false_certificate")
NO_TRAIN = ("this compliance party holds no training set: the fairness-certificate protocol needs "
            "holds = ('audit', 'train')")


class FairnessCertificateParams(ProtocolParams):
    """Parameters of the fairness certificate: the metric, and a value or a priced tolerance decision."""

    metric: Literal["sp", "pe", "eo", "eodds"] = Field(default="sp", description="the certified fairness metric")
    release: Literal["value", "tolerance"] = Field(
        default="value", description="publish the exact unfairness, or a priced decision that it is within tolerance")
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False,
                             description="the bound tested when release = 'tolerance'")
    decimals: int | None = Field(default=None, ge=0, le=15,
                                 description="round a released value up to this many decimals; none = full float64")
    epsilon: float = Field(default=1.0, gt=0.0, allow_inf_nan=False,
                           description="release = 'tolerance': privacy cost of one decision (pure DP, in the ledger)")
    min_group: int = Field(default=100, ge=1,
                           description="release = 'tolerance': k, the group size below which a gap is shrunk by N_g/k "
                                       "(the test's sensitivity is 1/k)")
    false_certificate: float = Field(default=0.05, gt=0.0, le=0.5, allow_inf_nan=False,
                                     description="release = 'tolerance': the largest chance of certifying a model "
                                                 "above the tolerance (groups of at least min_group)")

    @model_serializer(mode="wrap")
    def _omit_decision_fields_of_a_value(self, handler: Any) -> dict[str, Any]:
        """Leave the decision's fields out of a value certificate's dump.

        They change nothing there, and specs (and study cell ids) of value certificates stay as they
        were before the decision existed.
        """
        data: dict[str, Any] = handler(self)
        if data.get("release", "value") == "value":
            for name in TOLERANCE_ONLY:
                data.pop(name, None)
        return data


def bounded_unfairness(metric: str, predictions: np.ndarray, a: np.ndarray, y: np.ndarray | None,
                       min_group: int) -> float:
    """U_k: the largest ``|s_g - N_g r_S| / max(N_g, k)`` over ``metric``'s slices and both groups.

    Equal to :func:`parley.protocols.group_gaps.unfairness` when every group of every
    slice has at least ``min_group`` members; its sensitivity to one person's A is 1/k.
    """
    yhat = (np.asarray(predictions, dtype=np.float64) >= 0.5).astype(np.float64)
    a = np.asarray(a)
    worst = 0.0
    for mask in metric_slices(metric, y, yhat.size):
        h, g = yhat[mask], a[mask]
        if h.size == 0:
            continue
        rate = h.mean()  # r_S: predictions and labels only
        for group in (0, 1):
            members = g == group
            size = int(members.sum())
            worst = max(worst, abs(float(h[members].sum()) - size * rate) / max(size, min_group))
    return worst


def threshold_margin(epsilon: float, min_group: int, false_certificate: float) -> float:
    """b ln(1/(2 beta)) with b = 1/(k epsilon): P(Lap(b) <= -margin) = beta."""
    return math.log(1.0 / (2.0 * false_certificate)) / (min_group * epsilon)


@register_protocol
class FairnessCertificate(RequestProtocol[FairnessCertificateParams]):
    """Signs the target model's fairness on the training set: its value, or a priced within-tolerance decision."""

    name = "fairness-certificate"
    Params = FairnessCertificateParams
    metrics = ()
    flow = "fairness-certificate"
    requests = {"certificate-request": "fairness-certificate"}
    holds = ("audit", "train")
    per_individual_kinds = ()  # a metric and one value (or a decision): nothing per individual

    def charges(self) -> bool:
        """Only the tolerance decision is priced; a value certificate is released free (the paper's setting)."""
        return self.params.release == "tolerance"

    def request_cost(self, kind: str, payload: Mapping[str, Any], holdings: Holdings) -> PureDP | None:
        """epsilon per tolerance decision (whatever it decides); None for a value certificate."""
        return PureDP(epsilon=self.params.epsilon) if self.params.release == "tolerance" else None

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        if kind not in self.requests:
            raise QueryError(NO_REQUESTS.format(name=self.name, kind=kind))
        if "train" not in holdings:
            raise QueryError(NO_TRAIN)
        require_fields(payload, CERTIFICATE_FIELDS)
        train = holdings["train"]
        predictions = validate_predictions(payload["predictions"], train.n)
        if predictions.shape[0] != 1:
            raise QueryError(ONE_MODEL.format(m=predictions.shape[0]))
        predictions = predictions[0]
        params = self.params
        certificate: dict[str, Any] = {"metric": params.metric, "definition": "max group gap to slice rate",
                                       "slices": [SLICE_NAMES[s] for s in GAP_METRICS[params.metric]], "n": train.n}
        if params.release == "value":
            value = unfairness(params.metric, predictions, train.a, train.y)
            if params.decimals is not None:
                scale = 10.0 ** params.decimals
                # Up, so the certificate stays an upper bound; a product within float error of a grid point is on it.
                scaled = value * scale
                nearest = round(scaled)
                value = (nearest if abs(scaled - nearest) <= 4 * math.ulp(scaled) else math.ceil(scaled)) / scale
            return {**certificate, "value": float(value), "decimals": params.decimals}
        # The noisy threshold of the module docstring: only the decision leaves, charged epsilon by the party.
        bounded = bounded_unfairness(params.metric, predictions, train.a, train.y, params.min_group)
        noisy = bounded + rng.laplace(0.0, 1.0 / (params.min_group * params.epsilon))
        margin = threshold_margin(params.epsilon, params.min_group, params.false_certificate)
        certified = bool(noisy <= params.tolerance - margin)
        return {**certificate, "tolerance": float(params.tolerance), "certified": certified,
                "epsilon": float(params.epsilon), "min_group": int(params.min_group),
                "false_certificate": float(params.false_certificate)}
