"""``mpc`` and ``mpc-dp``: the metric answers computed on secret shares; only the answer is opened.

Why
---
Organisations that separate model developers from the holder of protected
attributes compute fairness metrics under secure computation instead of
handing predictions over. With ``raw`` the compliance party sees every model's
predictions in the clear; here it sees secret shares only, and the querier
sees A only through the answer. What secure computation does *not* change is
the answer: ``mpc`` opens exactly the numbers ``raw`` releases, so every reveal
attack that decodes A from exact answers works as well (docs/protocols/secure-computation.md).

Parties and sharing
-------------------
Three parties: the compliance party C (holds A), the querier Q (the data center, or the
adversary in its name; holds the predictions) and a helper S (a computing party that holds
nothing). Shamir sharing of degree t = 1 over GF(p), p = 2^127 - 1, evaluation points
C = 1, Q = 2, S = 3 (MPyC's :mod:`mpyc.thresha` and :mod:`mpyc.finfields`). Secure
computation among two parties cannot hide both inputs without computational assumptions
(MPyC with m = 2 runs with t = 0: every share *is* the secret), hence the third party;
the guarantee holds while no two parties collude (honest majority, semi-honest).

Encoding. A prediction h in [0, 1] is the integer r = round(h 2^B) (fixed point, B =
``bits``: 52 for ``mpc``, :data:`~parley.protocols.mechanisms.count_dp.PREDICTION_BITS` = 20
for ``mpc-dp``); it moves each group mean by at most 2^-(B+1), and binary predictions are exact.
A label slice I of the metric (every individual for SP and cov, y = 1 for EO, y = 0 for PE; y
is public to C and Q) is folded into the rows: row i of slice s is r_i 1_I, and one more
row is 1_I, so every statistic is an inner product with A:

    K_si = sum_j a_j r_ij 1_I(j),    N_s = sum_j a_j 1_I(j).

The querier knows T_si = sum_{j in I} r_ij and n_I itself; SP, EO, PE, cov follow from (K, N, T, n_I)
as in :mod:`parley.protocols.mechanisms.count_dp`.

One query: two exchanges, four signed envelopes
-----------------------------------------------
1. Q -> C ``mpc-query``: C's shares of the rows, [R]_C = f_R(1), where f_R(x) = R + x c is
   fixed by f_R(3) = PRF_QS(query id): S's share is pseudorandom under the key Q and S
   share, so it is never sent.
2. C -> Q ``mpc-partial``: C shares A afresh with f_a(2) = PRF_CQ(query id) (Q's share, never
   sent) and replies its output share d_C = [R]_C . [a]_C + z_C, and S's share f_a(3)
   one-time-padded with PRF_CS(query id): Q cannot read it, S removes the pad.
3. Q -> S ``mpc-query``: the query's header (metric, m, query id), the padded share of A and C's
   admission of both, a MAC under the C-S key (:func:`~parley.protocols.crypto.shamir.admission_tag`) that Q
   forwards from step 2.
4. S -> Q ``mpc-partial``: d_S = [R]_S . [a]_S + z_S, only if the admission verifies.
5. Q computes d_Q = [R]_Q . [a]_Q + z_Q and interpolates (1, d_C), (2, d_Q), (3, d_S) at 0: K and N.

The products [R]_i [a]_i lie on a polynomial of degree 2 = 2t whose value at 0 is K; z is a
pseudorandom sharing of zero of degree 2t (PRSS, Cramer, Damgard & Ishai, TCC 2005; MPyC's
``np_pseudorandom_share_0``) built from the three pairwise keys. What each party sees:

* C: [R]_C = (2R + PRF_QS)/3, uniform without Q and S's key: nothing about the predictions.
  C never receives d_S nor the answer.
* S: PRF outputs and the padded share of A, uniform without C's keys: nothing.
* Q: d_C, d_S and its own values fix the product polynomial; its coefficients other than
  K are masked by the component of z drawn from the C-S key, the only one Q lacks (it
  vanishes at Q's point 2 and at 0), so Q learns K and N and one uniform field element.

The arithmetic (the sharings, PRSS, the output shares and their opening, the field elements' encoding) is
:mod:`parley.protocols.crypto.shamir`; this module holds the protocols: the queries each party accepts and
the noise each adds.

``mpc-dp``: noise inside the computation
----------------------------------------
C and S each draw, independently, the noise of ``dp-counts``'s release with centre c_i = 0 and the
public worst-case sensitivity S_i = 2^B (discrete Laplace, or discrete Gaussian, on every group-1
sum and size: :func:`count_dp.noise_scales`, :meth:`MpcDpProtocol.noise`): ``dp-counts`` centres its
sums at the slice mean and scales their noise to the largest deviation from it, both functions of
the predictions, which C and S never see, so the secure release stays uncentred. Each adds Y /
lambda_i to its output share (lambda = (3, -3, 1): the Lagrange coefficients at 0 of points 1, 2,
3), so Q opens K + Y_C + Y_S. Privacy for A against a Q that encodes as above (or any party that
does not hold Y_C): K +
Y_C is that uncentred count release, epsilon-DP (or rho-zCDP) by ``dp-counts``'s proof with c_i = 0,
S_i = 2^B, and adding the independent Y_S is post-processing; C's ledger charges that cost.
Against C: C never receives the answer; should Q publish it, C can remove Y_C but not Y_S, so C
sees the models' group sums only through that noise. The price: a variance twice that of the
uncentred release, which is itself 1.5 to 2.2 times ``dp-counts``'s one-model SP error (the "plain
release" of ``tests/benchmarks/bench_count_dp.py``; ``dp-counts`` answers one model with the pair (K, Z),
which ``mpc-dp`` does not compute). With Q and S colluding, Y_C still protects A; C and S
colluding hold the predictions (t = 1), as in ``mpc``.

The guarantee is for semi-honest parties, the querier included, and parley's adversary is the
querier (the data center). C cannot check that the shares it receives encode predictions in
[0, 1]: they are uniform whatever they encode. ``mpc-dp``'s epsilon holds only against a querier
that encodes as the protocol says. One that shares arbitrary field elements as weights, e.g.
2^(40 + j) for person j, opens K = sum_j a_j 2^(40 + j) with noise calibrated to 2^B = 2^20, far
below bit 40: one query, charged epsilon, reveals all of A. The remedy is a range proof inside the
computation (the querier shares the bits of each value, the parties check b (1 - b) = 0); not built
(docs/protocols/secure-computation.md, "A querier that deviates").
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field
from typing_extensions import TypeVar

from parley.protocols.accounting import RHO_KEY
from parley.protocols.base import (
    AuditSet,
    Holdings,
    MetricQuery,
    ProtocolParams,
    RequestProtocol,
    register_protocol,
)
from parley.protocols.budget import ApproxDP, Budget, PureDP
from parley.protocols.crypto.shamir import (
    COMPLIANCE_ID,
    HELPER_ID,
    LIMBS,
    QUERIER_ID,
    PairKeys,
    _uci,
    admission_tag,
    compliance_sharing,
    decode_field,
    encode_field,
    exact_metric,
    helper_a_share,
    open_output,
    output_share,
    querier_a_share,
    querier_rows,
    share_rows,
)
from parley.protocols.errors import InternalError, QueryError
from parley.protocols.mechanisms.count_dp import (
    COUNT_METRICS,
    PREDICTION_BITS,
    SLICES,
    CountNoiseParams,
    _draw,
    metrics_from_statistics,
    noise_scales,
)
from parley.protocols.queries import validate_query_id

__all__ = ["MpcDpProtocol", "MpcParams", "MpcProtocol", "SecureProtocol", "CLEAR_QUERY", "NO_KEYS"]

CLEAR_QUERY = ("protocol {name!r} takes no predictions in the clear: the querier sends secret shares "
               "('mpc-query'), never a 'metric-query'")
BAD_HEADER = "protocol {name!r}: an mpc-query needs {fields} (got keys: {keys})"
BAD_M = "protocol {name!r}: m must be an int between 1 and {limit} (got {got!r})"
NO_KEYS = "protocol {name!r} holds no pairwise keys for party {party} (a bug in the world that built it)"
#: Models one query may carry (the same cap a plain metric query has on its predictions matrix).
MAX_MODELS = 100_000
#: What one person's flip moves an uncentred group-1 sum by at most, in lattice units: a prediction r_ij <= 2^B.
SUM_SENSITIVITY = 1 << PREDICTION_BITS


class MpcParams(ProtocolParams):
    """Parameters of ``mpc``: the fixed-point precision of the predictions."""

    bits: int = Field(default=52, ge=1, le=60, description="predictions are encoded as round(h 2^bits)")


#: The parameters of a secure-computation protocol (a bare ``SecureProtocol`` has ``ProtocolParams``).
P = TypeVar("P", bound=ProtocolParams, default=ProtocolParams, covariant=True)


class SecureProtocol(RequestProtocol[P]):
    """What ``mpc`` and ``mpc-dp`` share: the compliance party's part of one query.

    The instance the compliance party holds carries its pairwise keys (:meth:`keyed`); the
    scenario's instance carries none and cannot answer.
    """

    metrics = COUNT_METRICS
    requests: ClassVar[Mapping[str, str]] = {"mpc-query": "mpc-partial"}
    #: The ``mpc-partial`` reply holds one padded share of A per individual: uniform in GF(p), a share, not A.
    per_individual_kinds = ("mpc-partial",)
    #: Its queriers send shares and a helper joins the run (``parley.parties.secure``).
    encoding = "mpc"
    keys: PairKeys | None = None

    @property
    def bits(self) -> int:
        raise NotImplementedError

    def keyed(self, keys: PairKeys) -> SecureProtocol[P]:
        """A copy of this protocol holding one party's pairwise keys."""
        copy = type(self)(self.params)
        copy.keys = keys
        return copy

    def answer(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """Refused: a plain metric query would hand the predictions to the compliance party in the clear."""
        raise QueryError(CLEAR_QUERY.format(name=self.name))

    def check_metric(self, metric: Any) -> str:
        """``metric`` if this protocol computes it, else a refusal.

        The refusal is :data:`~parley.protocols.base.METRIC_NOT_ANSWERED`; the querier checks before it
        shares, the other parties when a share arrives.
        """
        if metric not in self.metrics:
            from parley.protocols.base import METRIC_NOT_ANSWERED

            raise QueryError(METRIC_NOT_ANSWERED.format(name=self.name, allowed=", ".join(self.metrics),
                                                        metric=metric))
        return str(metric)

    def header(self, payload: Mapping[str, Any]) -> tuple[str, int, str]:
        """(metric, m, query id) of an ``mpc-query`` payload, validated."""
        missing = [f for f in ("metric", "m", "query_id") if f not in payload]
        if missing:
            raise QueryError(BAD_HEADER.format(name=self.name, fields="metric, m and query_id",
                                               keys=", ".join(sorted(payload))))
        metric = self.check_metric(payload["metric"])
        m = payload["m"]
        if type(m) is not int or not 1 <= m <= MAX_MODELS:
            raise QueryError(BAD_M.format(name=self.name, limit=MAX_MODELS, got=m))
        return metric, m, validate_query_id(payload["query_id"])

    def noise(self, m: int, slices: int, rng: np.random.Generator) -> list[int] | None:
        """The party's noise on each output row (None: no noise)."""
        return None

    def notes(self, m: int) -> dict[str, Any]:
        """What C's reply records about the release (the ledger's accountant reads ``zcdp_rho``)."""
        return {}

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        """C's part: its output share d_C and the padded share of A for S (steps 1-2 of the module docstring)."""
        if self.keys is None:
            raise InternalError(NO_KEYS.format(name=self.name, party="compliance"))
        metric, m, query_id = self.header(payload)
        audit = holdings["audit"]
        rows = len(SLICES[metric]) * (m + 1)
        shares = decode_field(payload.get("shares"), (rows, audit.n), self.name, "shares")
        a_c, a_s = compliance_sharing(audit.a, self.keys, query_id)
        d_c = output_share(shares, a_c, self.keys, query_id, self.noise(m, len(SLICES[metric]), rng))
        a_share = encode_field(a_s)
        return {"metric": metric, "m": m, "output": encode_field(d_c), "a_share": a_share,
                "admission": admission_tag(self.keys, metric, m, query_id, a_share), **self.notes(m)}

    def admitted(self, payload: Mapping[str, Any], n: int) -> bool:
        """Does the helper's ``mpc-query`` carry the compliance party's admission of its header and share of A?

        Checked by the helper before any PRF output is drawn
        (:func:`~parley.protocols.crypto.shamir.admission_tag`): a hash of the request.
        """
        if self.keys is None:
            raise InternalError(NO_KEYS.format(name=self.name, party="helper"))
        metric, m, query_id = self.header(payload)
        tag, a_share = payload.get("admission"), payload.get("a_share")
        if type(tag) is not str or not (isinstance(a_share, np.ndarray) and a_share.dtype == np.uint32
                                        and a_share.shape == (n, LIMBS)):
            return False
        return hmac.compare_digest(tag.encode(), admission_tag(self.keys, metric, m, query_id, a_share).encode())

    def helper_respond(self, payload: Mapping[str, Any], n: int, rng: np.random.Generator) -> dict[str, Any]:
        """S's part: its output share d_S (steps 3-4).

        Its work, (m + 1) n PRF outputs per slice, is set by the header's m; the helper party calls it only
        for a header the compliance party admitted (:meth:`admitted`) and within the payload limit of the
        compliance party's shares (:class:`parley.parties.secure.Helper`).
        """
        if self.keys is None:
            raise InternalError(NO_KEYS.format(name=self.name, party="helper"))
        metric, m, query_id = self.header(payload)
        rows = len(SLICES[metric]) * (m + 1)
        a_s = helper_a_share(decode_field(payload.get("a_share"), (n,), self.name, "a_share"), self.keys, query_id)
        r_s = self.keys.prf(QUERIER_ID)(_uci(query_id, "rows"), (rows, n))
        d_s = output_share(r_s, a_s, self.keys, query_id, self.noise(m, len(SLICES[metric]), rng))
        return {"query_id": query_id, "metric": metric, "m": m, "output": encode_field(d_s)}

    def simulate(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """The three parties' computation of one answer in this process, with fresh keys drawn from ``rng``.

        The same functions the parties run, without envelopes: what ``parley compare`` uses to measure the
        utility of many releases. Never a path for a real query (the compliance party refuses predictions).
        """
        self.check_metric(query.metric)
        shared = {pair: rng.bytes(16) for pair in ((0, 1), (0, 2), (1, 2))}
        c, q, h = (PairKeys(me=i, keys=shared) for i in (COMPLIANCE_ID, QUERIER_ID, HELPER_ID))
        helper_rng = np.random.default_rng(rng.integers(2**63))
        slices = len(SLICES[query.metric])
        R, totals, sizes = querier_rows(query.predictions, audit.y, query.metric, self.bits)
        share_c, share_q = share_rows(R, q, query.query_id)
        a_c, padded = compliance_sharing(audit.a, c, query.query_id)
        d_c = output_share(share_c, a_c, c, query.query_id, self.noise(query.m, slices, rng))
        r_s = h.prf(QUERIER_ID)(_uci(query.query_id, "rows"), R.shape)
        d_s = output_share(r_s, helper_a_share(padded, h, query.query_id), h, query.query_id,
                           self.noise(query.m, slices, helper_rng))
        d_q = output_share(share_q, querier_a_share(q, query.query_id, audit.n), q, query.query_id)
        opened = open_output(d_c, d_q, d_s)
        m = query.m
        K = [opened[s * (m + 1): s * (m + 1) + m] for s in range(slices)]
        N = [opened[s * (m + 1) + m] for s in range(slices)]
        return {"metric": query.metric, "query_id": query.query_id, **self.opened(query.metric, K, N, totals, sizes)}

    def opened(self, metric: str, K: list[list[int]], N: list[int], T: list[list[int]],
               sizes: list[int]) -> dict[str, Any]:
        """The querier's answer from the opened statistics: ``values`` and the release's public notes."""
        return {"values": exact_metric(metric, K, N, T, sizes, self.bits), "resolution": 2.0 ** -self.bits}


@register_protocol
class MpcProtocol(SecureProtocol[MpcParams]):
    """Secure computation of the exact metric (the numbers ``raw`` releases); no party sees another's input."""

    name = "mpc"
    Params = MpcParams

    @property
    def bits(self) -> int:
        return self.params.bits

    def charges(self) -> bool:
        """No privacy cost: the answer is exact."""
        return False


@register_protocol
class MpcDpProtocol(SecureProtocol[CountNoiseParams]):
    """Secure computation of an uncentred ``dp-counts`` release; the compliance party and the helper each add noise."""

    name = "mpc-dp"
    Params = CountNoiseParams

    @property
    def bits(self) -> int:
        return PREDICTION_BITS

    def charges(self) -> bool:
        return True

    def request_cost(self, kind: str, payload: Mapping[str, Any], holdings: Holdings) -> Budget:
        """The cost of one ``dp-counts`` release, whatever m."""
        self.header(payload)
        if self.params.noise == "laplace":
            return PureDP(epsilon=self.params.epsilon)
        return ApproxDP(epsilon=self.params.epsilon, delta=self.params.delta)

    def noise(self, m: int, slices: int, rng: np.random.Generator) -> list[int]:
        """One party's noise: per slice, a draw for each model's (uncentred) group-1 sum, then one for the size.

        The sums are not centred (the parties computing the noise never see the predictions, so neither the
        slice mean nor the largest deviation from it): a flip moves K_i by r_ij <= 2^B, the public worst case,
        so each sum's draw is ``dp-counts``'s per-unit scale times the sensitivity 2^B, the size's times 1:
        the privacy loss is sum_i r_ij / (tau_s 2^B) + 1 / tau_n <= m / tau_s + 1 / tau_n = epsilon (Gaussian:
        sum_i r_ij^2 / (2 sigma_s^2 2^2B) + 1 / (2 sigma_n^2) <= rho), exactly as ``dp-counts``'s proof with
        c_i = 0 and S_i = 2^B.
        """
        from parley.protocols.dp.lattice import RandomBits

        scales = noise_scales(m, self.params)
        bits = RandomBits(rng)
        values: list[int] = []
        for _ in range(slices):
            values += [_draw(self.params.noise, scales["sum"], SUM_SENSITIVITY, bits) for _ in range(m)]
            values.append(_draw(self.params.noise, scales["size"], 1, bits))
        return values

    def notes(self, m: int) -> dict[str, Any]:
        notes: dict[str, Any] = {"epsilon": self.params.epsilon}
        if self.params.noise == "gaussian":
            notes["delta"] = self.params.delta
            notes[RHO_KEY] = float(noise_scales(m, self.params)["rho"])
        return notes

    def opened(self, metric: str, K: list[list[int]], N: list[int], T: list[list[int]],
               sizes: list[int]) -> dict[str, Any]:
        """What ``dp-counts`` releases, from the noisy statistics K + Y_C + Y_S and N + Y'_C + Y'_S."""
        m = len(K[0])
        scales = noise_scales(m, self.params)
        unit = float(1 << PREDICTION_BITS)
        k_units = np.array([[float(v) for v in row] for row in K]) / unit  # exact: |v| < 2^53
        t_units = np.array([[float(v) for v in row] for row in T]) / unit
        notes: dict[str, Any] = {
            "values": metrics_from_statistics(metric, k_units, N, t_units, sizes),
            "epsilon": self.params.epsilon, "noise": f"discrete-{self.params.noise}",
            # per slice: (group 0, group 1) noisy sums of each model and noisy sizes, as dp-counts records them
            "statistics": {
                "slices": ["all" if label is None else f"y={label}" for label in SLICES[metric]],
                "sums": np.stack([np.stack([t_units[s] - k_units[s], k_units[s]], axis=1) for s in range(len(K))]),
                "sizes": np.array([[sizes[s] - N[s], N[s]] for s in range(len(K))], dtype=np.int64),
            },
            "resolution": 1.0 / unit, "out_of_range": "clamp",
            # the noise is the sum of two independent draws (compliance party's and helper's), each at this scale
            "noise_shares": 2,
        }
        # the released sums are uncentred (centre 0) with sensitivity 2^B: in real units, one unit per scale
        notes["centre"] = np.zeros((len(K), m))
        per_model = np.ones((len(K), m))
        if self.params.noise == "laplace":
            notes["scale"] = {"sum": float(scales["sum"]) * per_model, "size": float(scales["size"])}
        else:
            notes["delta"] = self.params.delta
            notes[RHO_KEY] = float(scales["rho"])
            notes["sigma"] = {"sum": float(scales["sum"]) ** 0.5 * per_model, "size": float(scales["size"]) ** 0.5}
        return notes
