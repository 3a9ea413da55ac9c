"""``he``: the metric answers computed by the compliance party on the querier's CKKS ciphertexts.

Why
---
``mpc`` hides the predictions from the compliance party only with a third computing party
(the helper) and only while no two parties collude. ``he`` needs two parties: the querier
(the data center, or the adversary in its name) holds the CKKS secret key, encrypts its
predictions, and the compliance party C computes each model's metric on the ciphertexts with
A in plaintext (Cheon, Kim, Kim & Song, ASIACRYPT 2017; Microsoft SEAL through TenSEAL's
``sealapi``). C sees ciphertexts only; the querier sees what it decrypts. As with ``mpc``,
the answer itself is what ``raw`` releases (here approximately), so it hides nothing of A that
the answer reveals (docs/protocols/secure-computation.md).

The arithmetic
--------------
:mod:`parley.protocols.crypto.ckks` computes it and documents its parameters: N = 8192, coefficient moduli of
53, 53, 52 and 60 bits (128-bit security), the packing of the predictions into slot blocks, C's weights (each
metric ``he`` answers is one inner product with them), and C's answer ciphertexts, the inner products masked to
each block's first slot and flooded with Gaussian noise of standard deviation sqrt(12 tau) 2^(s/2) t
(s and tau: :class:`HeParams`). This module holds the protocol: the queries C accepts, the public contexts it
keeps and the decryptions it counts.

Public contexts
---------------
The querier's first query carries its public context (public key and Galois keys: 15 MB at
n <= 1,024, 18 MB beyond); C keeps it under the SHA-256 of its bytes, and later queries name it
by that ``context_id`` (a digest C computed, never the querier's claim) and carry ciphertexts only.

The answer is approximate: each value carries the flood, real part N(0, N sigma^2 / 2), standard
deviation 5.3e-5 with the defaults (s = 30, tau = 64: sigma = 8.3e-7 of the scale, N = 8192), and C
neither rounds nor decodes anything (it cannot read the ciphertext). The flood's guarantee is for tau
decryptions, and each answer ciphertext C releases is one (its own flood; m copies of one model in one
query would otherwise be m independent floods of the same answer to average): C counts them and refuses,
before any work, a query whose answer would take the count beyond tau. A retried query id gets the kept
reply, counted once. Exact-answer reveal attacks see their answers perturbed by that noise
(docs/protocols/secure-computation.md, "he").

Semi-honest querier. Nothing the querier sends can be checked against its secret key: ciphertexts with a chosen
error or values outside [0, 1], and a public key or Galois keys made for another secret or crafted outright, are
loaded if SEAL's parameter and range checks pass (the parameters are C's own: a key or ciphertext for another N or
modulus chain is refused). The guarantee is for a querier that generates its keys and encrypts as
:class:`~parley.protocols.crypto.ckks.QuerierKeys` does. A querier that deviates reads far more than one person a
decryption: values of 2^50 make the mask's rounding error (about 2^-45 in each masked-out slot) carry every window
sum above the flood, all 1,000 people of a 1,000-person audit set from one decryption
(docs/protocols/secure-computation.md, "A querier that deviates, under he";
tests/benchmarks/bench_he_deviating.py). The flood's randomness comes from C's noise stream
(:func:`~parley.protocols.crypto.ckks.seeded_context`), which the parties layer keys with C's own secret, drawn
from OS entropy and never from the run's public seed (:mod:`parley.parties.run_secrets`); the querier's keys come
from its own secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from parley.protocols.base import (
    AuditSet,
    Holdings,
    MetricQuery,
    ProtocolParams,
    RequestProtocol,
    register_protocol,
)
from parley.protocols.crypto.ckks import (
    OUTPUT_SCALE_BITS,
    _Keys,
    _simulation_keys,
    check_rotations,
    compute_answers,
    context_id,
    flood_sigma,
    from_bytes,
    layout,
    to_bytes,
    weights,
)
from parley.protocols.errors import QueryError
from parley.protocols.metrics import METRICS
from parley.protocols.queries import validate_query_id

__all__ = ["BAD_HEADER", "CLEAR_QUERY", "HE_METRICS", "HeParams", "HeProtocol", "TOO_MANY_QUERIES",
           "UNKNOWN_CONTEXT"]

#: Metrics that are one inner product with C's weights (abs_sp, abs_eo and eodds are not linear: refused).
HE_METRICS = ("sp", "eo", "pe", "cov")
#: Models one query may carry (one query's ciphertexts must fit the envelope's payload limit anyway).
MAX_MODELS = 4096
#: Public contexts a compliance party keeps (about 15 MB each), the most recently used; an older one is dropped
#: and a query naming it is refused with UNKNOWN_CONTEXT (the querier sends its keys again).
MAX_CONTEXTS = 4

CLEAR_QUERY = ("protocol {name!r} takes no predictions in the clear: the querier sends CKKS ciphertexts "
               "('he-query'), never a 'metric-query'")
BAD_HEADER = "protocol {name!r}: an he-query needs {fields} (got keys: {keys})"
BAD_M = "protocol {name!r}: m must be an int between 1 and {limit} (got {got!r})"
BAD_COUNT = "protocol {name!r}: a query of m = {m} models over n = {n} people takes {want} ciphertexts (got {got})"
UNKNOWN_CONTEXT = ("protocol {name!r}: context_id {got!r} names no public context this compliance party received "
                   "(send public_key and galois_keys)")
TOO_MANY_QUERIES = ("protocol {name!r}: this query's answer takes {want} ciphertexts and this compliance party has "
                    "released {used} of its {limit} decryptions; the noise flooding's {bits}-bit guarantee holds "
                    "for at most that many decrypted ciphertexts")


class HeParams(ProtocolParams):
    """Parameters of ``he``: the noise flooding's statistical security and the decryptions it covers."""

    statistical_security: int = Field(default=30, ge=8, le=48,
                                      description="s: an adversary's advantage from the decryption error <= 2^-s")
    decryptions: int = Field(default=64, ge=1, le=4096,
                             description="tau: decrypted ciphertexts the flooding covers (each answer ciphertext "
                                         "counts; a query that would exceed them is refused)")


@register_protocol
class HeProtocol(RequestProtocol[HeParams]):
    """CKKS on the querier's predictions; C returns masked, noise-flooded inner products (two parties)."""

    name = "he"
    Params = HeParams
    metrics = HE_METRICS
    requests: ClassVar[Mapping[str, str]] = {"he-query": "he-answer"}
    #: Its querier sends ciphertexts (``parley.parties.homomorphic``) and opens (decrypts) the answers, never on the
    #: wire (as ``mpc``'s: the exchange and ``parley compare`` read the querier's own record, and :meth:`simulate`
    #: runs both parties in-process).
    encoding = "he"

    def __init__(self, params: HeParams | None = None) -> None:
        super().__init__(params)
        #: Answer ciphertexts released by this instance, each one decryption for the flood's tau (one querier per
        #: run: the data center, or the adversary in its name).
        self._decrypted = 0
        #: Public contexts received, by the SHA-256 C computed of their bytes
        #: (:func:`~parley.protocols.crypto.ckks.context_id`).
        self._contexts: dict[str, _Keys] = {}

    def charges(self) -> bool:
        """No privacy cost: the answer is the metric (up to the flood, which protects the error, not A's answer)."""
        return False

    def answer(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """Refused: a plain metric query would hand the predictions to the compliance party in the clear."""
        raise QueryError(CLEAR_QUERY.format(name=self.name))

    def check_metric(self, metric: Any) -> str:
        """``metric`` if ``he`` computes it, else the :data:`~parley.protocols.base.METRIC_NOT_ANSWERED` refusal."""
        if metric not in self.metrics:
            from parley.protocols.base import METRIC_NOT_ANSWERED

            raise QueryError(METRIC_NOT_ANSWERED.format(name=self.name, allowed=", ".join(self.metrics),
                                                        metric=metric))
        return str(metric)

    def header(self, payload: Mapping[str, Any]) -> tuple[str, int, str]:
        """(metric, m, query id) of an ``he-query``, validated before any ciphertext is loaded."""
        missing = [f for f in ("metric", "m", "query_id", "ciphertexts") if f not in payload]
        has_keys = "public_key" in payload and "galois_keys" in payload
        if missing or not (has_keys or "context_id" in payload):
            raise QueryError(BAD_HEADER.format(name=self.name, keys=", ".join(sorted(map(str, payload))),
                                               fields="metric, m, query_id, ciphertexts, and public_key and "
                                                      "galois_keys or the context_id of an earlier query's"))
        metric = self.check_metric(payload["metric"])
        m = payload["m"]
        if type(m) is not int or not 1 <= m <= MAX_MODELS:
            raise QueryError(BAD_M.format(name=self.name, limit=MAX_MODELS, got=m))
        return metric, m, validate_query_id(payload["query_id"])

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        """C's answer to an ``he-query``: one flooded ciphertext per group of packed models."""
        metric, m, query_id = self.header(payload)
        audit = holdings["audit"]
        lay = layout(audit.n, m)
        blobs = payload["ciphertexts"]
        if not isinstance(blobs, (list, tuple)) or len(blobs) != lay.sent:
            got = len(blobs) if isinstance(blobs, (list, tuple)) else type(blobs).__name__
            raise QueryError(BAD_COUNT.format(name=self.name, m=m, n=audit.n, want=lay.sent, got=got))
        # tau counts decrypted ciphertexts (Li, Micciancio, Schultz & Sorrell's decryption queries), not queries:
        # a query of m models returns lay.ciphertexts of them, each with its own flood (m copies of one model
        # would otherwise give m independent floods of one answer in one query)
        if self._decrypted + lay.ciphertexts > self.params.decryptions:
            raise QueryError(TOO_MANY_QUERIES.format(name=self.name, want=lay.ciphertexts, used=self._decrypted,
                                                     limit=self.params.decryptions,
                                                     bits=self.params.statistical_security))
        cid, keys = self._context(payload, lay.block)
        cts = [from_bytes("Ciphertext", blob, self.name, f"ciphertexts[{i}]") for i, blob in enumerate(blobs)]
        answers = compute_answers(cts, weights(metric, audit.a, audit.y), lay, keys, self.params, rng)
        self._decrypted += len(answers)
        # kept only once a query with it was answered (a refused query leaves nothing behind), at most
        # MAX_CONTEXTS of them: the memory a querier can make C hold is bounded
        self._contexts.pop(cid, None)
        self._contexts[cid] = keys
        while len(self._contexts) > MAX_CONTEXTS:
            self._contexts.pop(next(iter(self._contexts)))
        return {"metric": metric, "m": m, "query_id": query_id, "answers": [to_bytes(ct) for ct in answers],
                "flood_sigma": flood_sigma(self.params), "scale_bits": OUTPUT_SCALE_BITS}

    def _context(self, payload: Mapping[str, Any], block: int) -> tuple[str, _Keys]:
        """The querier's public context and its id.

        Loaded from the payload (its id the digest C computes of its bytes), or the one kept under the
        payload's ``context_id``. A context id C does not hold is refused, and so are Galois keys without
        a rotation the block needs.
        """
        if "public_key" in payload and "galois_keys" in payload:
            pk, gk = payload["public_key"], payload["galois_keys"]
            galois = from_bytes("GaloisKeys", gk, self.name, "galois_keys")
            check_rotations(galois, block, self.name)
            return context_id(pk, gk), _Keys(from_bytes("PublicKey", pk, self.name, "public_key"), galois)
        cid = payload["context_id"]
        known = self._contexts.get(cid) if type(cid) is str else None
        if known is None:
            raise QueryError(UNKNOWN_CONTEXT.format(name=self.name, got=str(cid)[:80]))
        check_rotations(known.galois, block, self.name)
        return cid, known

    def simulate(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """Both parties' computation of one answer in this process (one key pair per process).

        What ``parley compare`` uses to measure the utility of many releases. Never a path for a real query.
        """
        self.check_metric(query.metric)
        keys = _simulation_keys()
        H = np.asarray(query.predictions, dtype=np.float64)
        lay = layout(audit.n, query.m)
        cts = compute_answers(keys.encrypt(H), weights(query.metric, audit.a, audit.y), lay,
                              _Keys(keys.public_key, keys.galois_keys), self.params, rng)
        values = self.clip(query.metric, keys.answers(cts, audit.n, query.m))
        return {"metric": query.metric, "query_id": query.query_id, "values": values,
                "flood_sigma": flood_sigma(self.params)}

    def clip(self, metric: str, values: np.ndarray) -> np.ndarray:
        """The metric's range (a decrypted value is approximate and may stray outside it)."""
        low, high = METRICS[metric].range
        clipped: np.ndarray = np.clip(values, low, high)
        return clipped
