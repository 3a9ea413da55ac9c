"""``mpc`` and ``mpc-dp`` among the three parties in-process: the answers, what each party sees, the refusals.

The adversary reads the code: the compliance party's view of the predictions is tested against two
opposite prediction matrices (a two-sample test on its shares, alpha = 0.01, and the balanced accuracy
of its best reading against a binomial band); the querier's opened answer is compared with ``raw``'s
for every metric; a plain metric query, malformed shares and a reused query id are refused.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from parley.parties.attacks.curious_compliance import read_predictions, view_accuracy
from parley.parties.compliance import Compliance
from parley.parties.ledger import ID_REUSED
from parley.parties.party import REFUSAL
from parley.parties.payload_limits import MAX_PAYLOAD_BYTES, PAYLOAD_TOO_LARGE
from parley.parties.secure import (
    HELPER_KEPT_REPLIES,
    HELPER_NOT_ADMITTED,
    HELPER_REPLY_DROPPED,
    HELPER_ROLE,
    HELPER_TOO_LARGE,
    ID_REUSED_HELPER,
    Helper,
    SecureQuerier,
    pair_keys,
)
from parley.parties.wire import Identity, Keyring
from parley.protocols import AuditSet, get_protocol
from parley.protocols.crypto.shamir import (
    BAD_SHARES,
    HELPER_ID,
    PRIME,
    PairKeys,
    decode_field,
    encode_field,
    field_bytes,
    output_share,
    querier_a_share,
)
from parley.protocols.mechanisms.count_dp import COUNT_METRICS, SLICES, noise_scales
from parley.protocols.mechanisms.secure import CLEAR_QUERY
from parley.protocols.metrics import evaluate
from tests.fixed_secrets import party_secret

ALPHA = 0.01


class Trio:
    """The compliance party, the helper and a querier (its SecureQuerier driven by the test) in-process."""

    def __init__(self, protocol: str, a: np.ndarray, y: np.ndarray, seed: int = 0, ledger_path: str | None = None,
                 **params) -> None:
        cls = get_protocol(protocol)
        self.protocol = cls(cls.Params(**params))
        self.ids = {name: Identity.generate(name, role) for name, role in
                    [("compliance", "compliance"), ("data-center", "data-center"), ("mpc-helper", HELPER_ROLE)]}
        self.keyring = Keyring()
        for identity in self.ids.values():
            self.keyring.add(identity.key_entry())
        # seeded pairwise keys (a run draws them from X25519 agreements): every statistical test here is seeded
        key_rng = np.random.default_rng([seed, 99])
        shared = {pair: key_rng.bytes(16) for pair in ((0, 1), (0, 2), (1, 2))}
        keys = {name: PairKeys(me=i, keys={p: k for p, k in shared.items() if i in p})
                for i, name in enumerate(("compliance", "data-center", "mpc-helper"))}
        self.compliance = Compliance(self.ids["compliance"], self.keyring, AuditSet(a=a, y=y),
                                     self.protocol.keyed(keys["compliance"]), ["data-center"],
                                     party_secret(seed), ledger_path=ledger_path)
        self.helper = Helper(self.ids["mpc-helper"], self.keyring, self.protocol.keyed(keys["mpc-helper"]),
                             ["data-center"], a.shape[0], np.random.default_rng(seed + 1))
        self.querier = SecureQuerier(self.protocol.keyed(keys["data-center"]), keys["data-center"], y, "mpc-helper")
        self.sent: list = []

    def seal(self, recipient: str, kind: str, payload: dict):
        return self.ids["data-center"].seal(recipient, kind, self.protocol.name, payload)

    def ask(self, H: np.ndarray, metric: str = "sp", query_id: str | None = None) -> dict:
        """The four envelopes of one query; the opened answer payload (or the refusal's payload)."""
        query_id = query_id or f"q{len(self.sent)}"
        first = self.seal("compliance", "mpc-query",
                          self.querier.share({"metric": metric, "predictions": H, "query_id": query_id}))
        self.sent.append(first)
        partial = self.compliance.receive(first)
        if partial.kind == REFUSAL:
            return partial.payload
        second = self.seal("mpc-helper", "mpc-query", self.querier.from_compliance(partial))
        self.sent.append(second)
        reply = self.helper.receive(second)
        if reply.kind == REFUSAL:
            return reply.payload
        return self.querier.open(reply)


@pytest.fixture(scope="module")
def audit():
    rng = np.random.default_rng(7)
    n = 120
    a = (rng.random(n) < 0.3).astype(np.int8)
    y = (rng.random(n) < 0.4).astype(np.int8)
    return a, y


@pytest.mark.parametrize("metric", COUNT_METRICS)
def test_mpc_opens_the_numbers_raw_releases(audit, metric):
    a, y = audit
    trio = Trio("mpc", a, y)
    rng = np.random.default_rng(1)
    H = np.vstack([(rng.random(a.size) < 0.5).astype(np.float64), rng.random(a.size), np.zeros(a.size)])
    answer = trio.ask(H, metric)
    exact = evaluate(metric, H, a, y)
    # binary predictions are encoded exactly; soft ones on the grid 2^-52 (each mean moves by <= 2^-53)
    np.testing.assert_allclose(answer["values"], exact, rtol=0, atol=1e-13)
    assert answer["values"][0] == pytest.approx(exact[0], abs=2e-16)


def test_edit_queries_are_expanded_by_the_querier_before_sharing(audit):
    a, y = audit
    trio = Trio("mpc", a, y)
    base = np.zeros(a.size)
    trio.querier.share({"metric": "sp", "predictions": base[None, :], "query_id": "kept", "keep": True})
    payload = trio.querier.share({"metric": "sp", "query_id": "edit", "edit_of": "kept",
                                  "indices": np.array([[3]]), "values": np.array([[1.0]])})
    assert payload["m"] == 1 and payload["shares"].shape == (2, a.size, 4)


def test_a_plain_metric_query_is_refused_and_the_party_keeps_serving(audit):
    a, y = audit
    trio = Trio("mpc", a, y)
    clear = trio.seal("compliance", "metric-query", {"metric": "sp", "predictions": np.zeros((1, a.size)),
                                                     "query_id": "clear"})
    refusal = trio.compliance.receive(clear)
    assert refusal.kind == REFUSAL and refusal.payload["detail"] == CLEAR_QUERY.format(name="mpc")
    H = np.zeros((1, a.size))
    H[0, :10] = 1.0
    assert trio.ask(H)["values"][0] == pytest.approx(evaluate("sp", H, a, y)[0], abs=1e-15)


@pytest.mark.parametrize("bad", ["dtype", "shape", "value"])
def test_malformed_shares_are_refused(audit, bad):
    a, y = audit
    trio = Trio("mpc", a, y)
    payload = trio.querier.share({"metric": "sp", "predictions": np.zeros((1, a.size)), "query_id": "bad"})
    shares = payload["shares"]
    if bad == "dtype":
        shares = shares.astype(np.int64)
    elif bad == "shape":
        shares = shares[:, :-1]
    else:
        shares = shares.copy()
        shares[0, 0] = np.uint32(0xFFFFFFFF)  # 2^128 - 1 > p
    refusal = trio.compliance.receive(trio.seal("compliance", "mpc-query", {**payload, "shares": shares}))
    assert refusal.kind == REFUSAL and refusal.payload["reason"] == "invalid-query"
    assert refusal.payload["detail"].startswith(BAD_SHARES.split("{what}")[0].format(name="mpc"))


def test_the_helper_answers_a_query_id_once(audit):
    a, y = audit
    trio = Trio("mpc-dp", a, y, epsilon=1.0)
    payload = trio.querier.share({"metric": "sp", "predictions": np.zeros((1, a.size)), "query_id": "once"})
    partial = trio.compliance.receive(trio.seal("compliance", "mpc-query", payload))
    header = trio.querier.from_compliance(partial)
    first = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", header))
    again = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", header))
    np.testing.assert_array_equal(first.payload["output"], again.payload["output"])  # no fresh noise
    other = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", {**header, "m": 2}))
    assert other.kind == REFUSAL and other.payload["detail"] == ID_REUSED_HELPER.format(query_id="once")


@pytest.mark.parametrize("ledger", [None, "memory", "file"])
def test_a_reused_query_id_is_refused_by_the_compliance_party_with_or_without_a_ledger(audit, tmp_path, ledger):
    """Two mpc replies to one id share the sharing of A and the zero-share: their difference gives the querier A.

    The querier plays that attack (the identity model, then the zero model, under one id): the second request
    is refused with the ledger's reused-id refusal whether or not the party keeps a ledger (an mpc reply is
    free, so the ledger holds no record of it); an identical retry gets the same reply, and the party serves on.
    """
    a, y = audit
    path = {None: None, "memory": ":memory:", "file": str(tmp_path / "ledger.sqlite")}[ledger]
    trio = Trio("mpc", a, y, ledger_path=path)
    assert (trio.compliance.ledger is None) == (ledger is None)
    request = trio.querier.share({"metric": "sp", "predictions": np.eye(a.size), "query_id": "same-id"})
    first = trio.compliance.receive(trio.seal("compliance", "mpc-query", request))
    assert first.kind == "mpc-partial"
    other = trio.compliance.receive(trio.seal("compliance", "mpc-query", trio.querier.share(
        {"metric": "sp", "predictions": np.zeros((a.size, a.size)), "query_id": "same-id"})))
    assert other.kind == REFUSAL and other.payload["reason"] == "invalid-query"
    assert other.payload["detail"] == ID_REUSED.format(query_id="same-id")
    retry = trio.compliance.receive(trio.seal("compliance", "mpc-query", request))  # a new envelope, same request
    assert retry.kind == "mpc-partial" and retry.payload["query_id"] == "same-id"
    for field in ("output", "a_share"):
        np.testing.assert_array_equal(retry.payload[field], first.payload[field])
    H = np.zeros((1, a.size))
    H[0, :10] = 1.0
    assert trio.ask(H, query_id="fresh")["values"][0] == pytest.approx(evaluate("sp", H, a, y)[0], abs=1e-15)


@pytest.mark.parametrize("metric", ["sp", "eodds"])
def test_the_helper_refuses_work_beyond_the_compliance_party_payload_limit(audit, metric):
    """A small request whose header's m would have the helper derive more rows than C could receive as shares.

    The querier sends n padded shares of A (1.9 KB here) with the smallest m whose rows, as shares, exceed the
    payload limit: refused as too large, naming m and the limit, before any work (nothing answered), and the
    helper serves on. The largest m within the limit is what C's payload limit allows it to compute too.
    """
    a, y = audit
    trio = Trio("mpc", a, y)
    slices = len(SLICES[metric])
    m = MAX_PAYLOAD_BYTES // (slices * a.size * 16)  # (m + 1) slices rows of n field elements of 16 bytes
    assert field_bytes(slices * m, a.size) <= MAX_PAYLOAD_BYTES < field_bytes(slices * (m + 1), a.size)
    header = {"metric": metric, "m": m, "query_id": "huge", "a_share": encode_field(np.zeros(a.size, dtype=object))}
    refusal = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", header))
    assert refusal.kind == REFUSAL and refusal.payload["reason"] == PAYLOAD_TOO_LARGE
    rows = slices * (m + 1)
    assert refusal.payload["detail"] == HELPER_TOO_LARGE.format(m=m, metric=metric, rows=rows, n=a.size,
                                                                size=field_bytes(rows, a.size),
                                                                limit=MAX_PAYLOAD_BYTES)
    assert f"m = {m} " in refusal.payload["detail"] and f"{MAX_PAYLOAD_BYTES:,}" in refusal.payload["detail"]
    assert trio.helper.answered == 0
    H = np.zeros((1, a.size))
    H[0, :10] = 1.0
    assert trio.ask(H, metric)["values"][0] == pytest.approx(evaluate(metric, H, a, y)[0], abs=1e-15)
    assert trio.helper.answered == 1


def test_the_compliance_party_sees_shares_independent_of_the_predictions(audit):
    """Two opposite models: the compliance party's shares are alike (KS, alpha = 0.01); its reading is a coin."""
    a, y = audit
    trio = Trio("mpc", a, y)
    views = {}
    for value in (0.0, 1.0):
        payload = trio.querier.share({"metric": "sp", "predictions": np.full((1, a.size), value),
                                      "query_id": f"all-{value:g}"})
        views[value] = np.array([float(v) / PRIME for v in decode_field(payload["shares"][:1], (1, a.size), "mpc",
                                                                         "shares")[0]])
    assert stats.ks_2samp(views[0.0], views[1.0]).pvalue > ALPHA
    # the best reading of one model's predictions, over many honest-looking models: balanced accuracy ~ 1/2
    rng = np.random.default_rng(3)
    correct = total = 0
    for q in range(20):
        truth = (rng.random(a.size) < 0.5).astype(np.int8)
        sent = trio.querier.share({"metric": "sp", "predictions": truth[None, :].astype(float), "query_id": f"r{q}"})
        guess = read_predictions("mpc-query", sent, a.size)
        correct += int((guess == truth).sum())
        total += a.size
    assert stats.binomtest(correct, total, 0.5).pvalue > ALPHA
    # under raw the same reading is exact
    assert view_accuracy(read_predictions("metric-query", {"predictions": truth[None, :].astype(float)}, a.size),
                         truth) == 1.0


def _output_polynomial(trio: Trio, H: np.ndarray, query_id: str) -> tuple[int, int, int]:
    """The querier's whole view of one query's outputs: the polynomial through (1, d_C), (2, d_Q), (3, d_S)."""
    payload = trio.querier.share({"metric": "sp", "predictions": H, "query_id": query_id})
    partial = trio.compliance.receive(trio.seal("compliance", "mpc-query", payload))
    reply = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", trio.querier.from_compliance(partial)))
    own = trio.querier._pending[query_id]["own"]
    d_c = decode_field(partial.payload["output"], own.shape[:1], "mpc", "output")
    d_s = decode_field(reply.payload["output"], own.shape[:1], "mpc", "output")
    d_q = output_share(own, querier_a_share(trio.querier.keys, query_id, H.shape[1]), trio.querier.keys, query_id)
    p1, p2, p3 = int(d_c[0]), int(d_q[0]), int(d_s[0])
    # P(x) = c0 + c1 x + c2 x^2 through the three points (Lagrange), mod p
    inv2 = pow(2, PRIME - 2, PRIME)
    c2 = (p1 - 2 * p2 + p3) * inv2 % PRIME
    c0 = (3 * p1 - 3 * p2 + p3) % PRIME
    c1 = (p2 - p1 - 3 * c2) % PRIME
    return c0, c1, c2


def test_the_querier_opens_K_and_nothing_more_of_the_output_polynomial(audit):
    """Same answer, different A: the coefficients besides K are alike (KS, alpha = 0.01).

    Two audit sets with the same K (every model accepts everybody) but A differing in two people: the
    product polynomial's other coefficients would tell them apart if the zero sharing did not mask them.
    """
    a, y = audit
    b = a.copy()
    ones, zeros = np.flatnonzero(a == 1), np.flatnonzero(a == 0)
    b[ones[0]], b[zeros[0]] = 0, 1
    H = np.ones((1, a.size))
    seen: dict[str, list[float]] = {"a": [], "b": []}
    for name, attr in (("a", a), ("b", b)):
        trio = Trio("mpc", attr, y, seed=5)
        for q in range(200):
            c0, c1, c2 = _output_polynomial(trio, H, f"{name}-{q}")
            assert c0 == int(attr.sum()) << 52  # K of the all-ones model, in units of 2^-52
            seen[name].append(c2 / PRIME)
    assert stats.ks_2samp(seen["a"], seen["b"]).pvalue > ALPHA
    assert stats.kstest(seen["a"], "uniform").pvalue > ALPHA


def _two_laplace_pmf(tau: float, support: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / tau)
    wide = np.arange(-400, 401)
    single = (1 - q) / (1 + q) * q ** np.abs(wide)
    double = np.convolve(single, single)  # on -800..800
    return double[support + 800]


def test_mpc_dp_opens_dp_counts_noise_twice_and_charges_its_epsilon(audit):
    """The opened noise on a size is the sum of two discrete Laplace draws at dp-counts' scale (variance test)."""
    a, y = audit
    trio = Trio("mpc-dp", a, y, epsilon=1.0)
    H = np.zeros((1, a.size))
    noise = []
    for q in range(300):
        answer = trio.ask(H, query_id=f"dp{q}")
        noise.append(int(answer["statistics"]["sizes"][0, 1]) - int(a.sum()))
    tau = float(noise_scales(1, trio.protocol.params)["size"])
    edges = np.arange(-12, 13)  # bins: (-inf, -12], -11, ..., 11, [12, inf)
    observed = np.bincount(np.clip(noise, -12, 12) + 12, minlength=25)

    def expected(pmf_of) -> np.ndarray:
        inner = pmf_of(tau, edges)
        support = np.arange(-800, 801)
        full = pmf_of(tau, support)
        inner[0], inner[-1] = full[support <= -12].sum(), full[support >= 12].sum()
        return inner / inner.sum() * len(noise)

    def one_laplace(t: float, support: np.ndarray) -> np.ndarray:
        q = math.exp(-1.0 / t)
        return (1 - q) / (1 + q) * q ** np.abs(support)

    assert stats.chisquare(observed, expected(_two_laplace_pmf)).pvalue > ALPHA
    assert stats.chisquare(observed, expected(one_laplace)).pvalue < ALPHA  # not a single party's noise
    spent = trio.compliance.stats()["epsilon_spent"]["data-center"]
    assert spent == pytest.approx(300.0)


DEVIATING_HEADING = "### A querier that deviates"
DEVIATING_CLAIM = "`mpc-dp`'s ε holds only against a querier that encodes as the protocol says"


def test_a_querier_that_deviates_from_the_encoding_reads_all_of_A_from_one_mpc_dp_answer_as_the_docs_say():
    """The limit of mpc-dp's guarantee, played and documented: weights 2^(40 + j) instead of predictions.

    The compliance party cannot see what its shares encode; the noise is calibrated to 2^B = 2^20 and stays
    below bit 40, so one answer charged epsilon gives every a_j. docs/protocols/secure-computation.md must say
    so (a range proof would make the attack fail here, and the page would then have to change too).
    """
    from pathlib import Path

    from parley.protocols.crypto.shamir import open_output, share_rows

    rng = np.random.default_rng(4)
    n = 80
    a = rng.integers(0, 2, n).astype(np.int8)
    y = rng.integers(0, 2, n).astype(np.int8)
    trio = Trio("mpc-dp", a, y, epsilon=0.1)
    q, qid = trio.querier, "deviating"
    R = np.zeros((2, n), dtype=object)
    R[0] = [1 << (40 + j) for j in range(n)]  # one "model": person j's weight in its own bit
    R[1] = 1
    share_c, share_q = share_rows(R, q.keys, qid)
    q._pending[qid] = {"metric": "sp", "m": 1, "own": share_q, "totals": [[0]], "sizes": [n], "predictions": None}
    partial = trio.compliance.receive(trio.seal("compliance", "mpc-query", {"metric": "sp", "m": 1, "query_id": qid,
                                                                            "shares": encode_field(share_c)}))
    assert partial.kind == "mpc-partial"  # uniform shares: nothing for the compliance party to refuse
    reply = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", q.from_compliance(partial)))
    d_c = decode_field(partial.payload["output"], (2,), "mpc-dp", "output")
    d_s = decode_field(reply.payload["output"], (2,), "mpc-dp", "output")
    K = open_output(d_c, output_share(share_q, querier_a_share(q.keys, qid, n), q.keys, qid), d_s)[0]
    K += 1 << 39  # round to the nearest multiple of 2^40 (noise of either sign)
    a_hat = np.array([(K >> (40 + j)) & 1 for j in range(n)])
    np.testing.assert_array_equal(a_hat, a)
    assert trio.compliance.stats()["epsilon_spent"]["data-center"] == pytest.approx(0.1)  # one answer's epsilon
    page = (Path(__file__).resolve().parents[3] / "docs" / "protocols" / "secure-computation.md").read_text()
    assert DEVIATING_HEADING in page
    assert DEVIATING_CLAIM in " ".join(page.split())  # the claim, however the page wraps it


def test_field_encoding_round_trips():
    values = np.array([0, 1, PRIME - 1, 1 << 100], dtype=object)
    np.testing.assert_array_equal(decode_field(encode_field(values), (4,), "mpc", "x"), values)


def test_the_in_process_simulation_is_the_parties_computation(audit):
    """``simulate`` (what compare's utility uses) opens raw's numbers under mpc, dp-counts-sized noise under mpc-dp."""
    from parley.protocols import MetricQuery

    a, y = audit
    H = np.vstack([np.zeros(a.size), np.ones(a.size)])
    H[0, ::3] = 1.0
    query = MetricQuery.from_payload({"metric": "eo", "predictions": H, "query_id": "sim"}, a.size)
    mpc = get_protocol("mpc")()
    np.testing.assert_allclose(mpc.simulate(query, AuditSet(a=a, y=y), np.random.default_rng(0))["values"],
                               evaluate("eo", H, a, y), rtol=0, atol=1e-15)
    dp = get_protocol("mpc-dp")(get_protocol("mpc-dp").Params(epsilon=1.0))
    answer = dp.simulate(query, AuditSet(a=a, y=y), np.random.default_rng(0))
    assert answer["noise_shares"] == 2 and answer["statistics"]["sizes"].shape == (1, 2)


def test_pair_keys_give_each_party_only_its_own_pairs():
    keys = pair_keys(("compliance", "data-center", "mpc-helper"))
    assert set(keys["compliance"].keys) == {(0, 1), (0, 2)} and set(keys["mpc-helper"].keys) == {(0, 2), (1, 2)}
    assert keys["compliance"].keys[(0, 2)] == keys["mpc-helper"].keys[(0, 2)]
    assert len({keys["data-center"].keys[(0, 1)], keys["data-center"].keys[(1, 2)]}) == 2


def test_a_metric_the_secure_protocol_does_not_compute_is_refused_by_the_querier_before_any_share(audit):
    """prp has no secure circuit: the attack sees the refusal the compliance party would sign, nothing is sent,
    and the adversary ends with the typed reason (it once crashed its party host with a KeyError)."""
    from parley.parties.adversary import Adversary
    from parley.parties.attacks.base import AttackerView, get_attack
    from parley.protocols.base import METRIC_NOT_ANSWERED

    a, y = audit
    trio = Trio("mpc", a, y)
    cls = get_attack("prp-flip")
    base = (np.random.default_rng(3).random(a.size) < 0.5).astype(np.float64)
    view = AttackerView(n=a.size, base_scores=base, base_predictions=base, y=y)
    adversary = Adversary(trio.ids["data-center"], trio.keyring, cls(cls.Params(), view, np.random.default_rng(0)),
                          "compliance", "mpc", codec=trio.querier)
    assert adversary.start() is None
    detail = METRIC_NOT_ANSWERED.format(name="mpc", allowed=", ".join(trio.protocol.metrics), metric="prp")
    assert adversary.refusals == [{"reason": "invalid-query", "detail": detail}]
    assert adversary.failure == f"the attack stopped: its query was refused (invalid-query): {detail}"
    assert trio.querier.queries == 0


def _count_helper_prf(monkeypatch) -> list[int]:
    """Every PRF the helper keys from now on (one entry per call): the helper's work, counted, not timed."""
    calls: list[int] = []
    prf = PairKeys.prf

    def counted(self: PairKeys, other: int):
        if self.me == HELPER_ID:
            calls.append(other)
        return prf(self, other)

    monkeypatch.setattr(PairKeys, "prf", counted)
    return calls


def test_the_helper_computes_only_for_query_ids_the_compliance_party_admitted(monkeypatch):
    """The finding, played: a querier asks the helper directly for a fresh id the compliance party never saw.

    16 KB of padded shares (n = 1,000) with the largest m within the payload limit, signed by the querier's
    real identity: the helper once spent seconds of PRF work and about 0.9 GB on it and kept the reply. Now it
    is refused (not admitted) with no PRF output drawn, and so is a genuine admission moved to another id,
    another m or another share of A; the helper then answers the admitted query, exactly.
    """
    rng = np.random.default_rng(11)
    n = 1_000
    a = (rng.random(n) < 0.3).astype(np.int8)
    y = rng.integers(0, 2, n).astype(np.int8)
    trio = Trio("mpc", a, y)
    calls = _count_helper_prf(monkeypatch)
    m = MAX_PAYLOAD_BYTES // field_bytes(1, n) - 1  # (m + 1) rows of n shares: just within the limit
    share = encode_field(np.asarray(rng.integers(0, 2**62, n), dtype=object))
    assert share.nbytes == 16_000
    forged = {"metric": "sp", "m": m, "query_id": "never-admitted", "a_share": share}
    refusal = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", forged))
    assert refusal.kind == REFUSAL and calls == [] and trio.helper.answered == 0
    refusals = [refusal]
    # a genuine admission, for the query "real" C answered, moved elsewhere
    H = np.zeros((1, n))
    H[0, :10] = 1.0
    partial = trio.compliance.receive(trio.seal("compliance", "mpc-query", trio.querier.share(
        {"metric": "sp", "predictions": H, "query_id": "real"})))
    header = trio.querier.from_compliance(partial)
    assert type(header["admission"]) is str
    moved = [{**header, "query_id": "fresh"}, {**header, "m": m}, {**header, "a_share": share},
             {**header, "admission": None}]
    refusals += [trio.helper.receive(trio.seal("mpc-helper", "mpc-query", p)) for p in moved]
    expected = [(forged["query_id"], m), ("fresh", 1), ("real", m), ("real", 1), ("real", 1)]
    for refusal, (query_id, m_sent) in zip(refusals, expected, strict=True):
        assert refusal.kind == REFUSAL and refusal.payload["reason"] == "invalid-query"
        assert refusal.payload["detail"] == HELPER_NOT_ADMITTED.format(query_id=query_id, metric="sp", m=m_sent)
        assert trio.ids["mpc-helper"].key_entry().public_key == trio.keyring.entry(refusal.sender).public_key
    assert calls == [] and trio.helper.answered == 0 and trio.helper.not_admitted == 5
    assert trio.helper._replies == {}
    reply = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", header))
    assert reply.kind == "mpc-partial" and calls and trio.helper.answered == 1
    assert trio.querier.open(reply)["values"][0] == pytest.approx(evaluate("sp", H, a, y)[0], abs=1e-15)


def test_the_helper_keeps_a_bounded_number_of_replies_and_never_redraws_a_dropped_one(audit, monkeypatch):
    """Kept replies: the last ``kept_replies``, the oldest dropped. A retry of a kept id gets the same noise;
    a retry of a dropped id is refused as too old, never computed again (fresh noise for the same id would
    let the querier average the helper's noise away)."""
    a, y = audit
    trio = Trio("mpc-dp", a, y, epsilon=1.0)
    assert trio.helper.kept_replies == HELPER_KEPT_REPLIES  # the default
    trio.helper = Helper(trio.ids["mpc-helper"], trio.keyring, trio.helper.secure, ["data-center"], a.size,
                         np.random.default_rng(1), kept_replies=2)
    headers, outputs = {}, {}
    for qid in ("q0", "q1", "q2"):
        payload = trio.querier.share({"metric": "sp", "predictions": np.zeros((1, a.size)), "query_id": qid})
        headers[qid] = trio.querier.from_compliance(trio.compliance.receive(trio.seal("compliance", "mpc-query",
                                                                                      payload)))
        reply = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", headers[qid]))
        assert reply.kind == "mpc-partial"
        outputs[qid] = reply.payload["output"]
    assert [key[1] for key in trio.helper._replies] == ["q1", "q2"] and trio.helper.answered == 3
    calls = _count_helper_prf(monkeypatch)
    for qid in ("q2", "q1"):  # kept: the same reply, no work
        again = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", headers[qid]))
        np.testing.assert_array_equal(again.payload["output"], outputs[qid])
    dropped = trio.helper.receive(trio.seal("mpc-helper", "mpc-query", headers["q0"]))
    assert dropped.kind == REFUSAL and dropped.payload["reason"] == "invalid-query"
    assert dropped.payload["detail"] == HELPER_REPLY_DROPPED.format(query_id="q0", kept=2)
    assert calls == [] and trio.helper.answered == 3 and len(trio.helper._replies) == 2



#: The measured figure docs/protocols/secure-computation.md states (``tests/benchmarks/bench_mpc_deviating.py``).
DEVIATING_FIGURE = "one SP query of 10 models, charged ε = 1, reads 1,000 of 1,000 people's A exactly"


def test_one_deviating_mpc_dp_query_reads_everybody_as_measured():
    """What a querier that chooses its rows freely reads from one mpc-dp answer, as the docs measure it.

    The benchmark's own query (real compliance party with its ledger, real helper, signed envelopes; fixed
    party secrets, so the noise repeats exactly): at n = 1,000 one SP query of 10 models reads every A at
    epsilon = 1 and at 0.1, against noise at dp-counts' scale (its bits above the 2^20 unit, below each row's
    first bit), charged epsilon once; the page states the figures.
    """
    from pathlib import Path

    from parley.protocols.mechanisms.count_dp import PREDICTION_BITS
    from tests.benchmarks.bench_mpc_deviating import measure

    one, tenth = measure(n=1_000, epsilons=(1.0, 0.1), seed=0)
    for row, bits, noise, largest in ((one, (95, 115), (31, 26, 3), 27_563), (tenth, (92, 112), (34, 29, 4), 27_096)):
        assert row["m"] == 10 and row["read"] == 1_000 and row["helper_answered"] == 1
        assert row["epsilon_charged"] == pytest.approx(row["epsilon"])
        assert (row["sum_row_bits"], row["size_row_bits"]) == bits
        assert (row["sum_row_first_bit"], row["sum_row_noise_bits"], row["size_row_noise_bits"]) == noise
        assert PREDICTION_BITS < row["sum_row_noise_bits"] < row["sum_row_first_bit"]
        assert 0 < row["size_row_noise_bits"] < row["size_row_first_bit"]
        assert row["largest_n"] == largest
    page = " ".join((Path(__file__).resolve().parents[3] / "docs" / "protocols" / "secure-computation.md")
                    .read_text().split())
    assert DEVIATING_FIGURE in page.replace("**", "")
    assert "bench_mpc_deviating.py" in page
    for figure in ("95 people in each model's row", "which starts at bit 31 while the noise Y_C + Y_S reached 26 bits",
                   "115 in the size row", "hold 92 and 112", "up to n = 27,563 at ε = 1 (27,096 at ε = 0.1)"):
        assert figure in page
