"""Shamir sharing, PRSS and GF(p) arithmetic of ``mpc`` and ``mpc-dp``: the shares, the output shares, the opening.

What it computes
----------------
Shamir sharing of degree t = 1 over GF(p), p = 2^127 - 1 (:data:`PRIME`), at the evaluation points 1, 2, 3 of
the compliance party C, the querier Q and the helper S (:data:`COMPLIANCE_ID`, :data:`QUERIER_ID`,
:data:`HELPER_ID`, plus one), with MPyC's :mod:`mpyc.thresha` and :mod:`mpyc.finfields`:

* the querier's rows R: each prediction h in [0, 1] as the integer round(h 2^B) (B the protocol's ``bits``),
  folded with the metric's label slices, and the group totals and slice sizes Q keeps (:func:`querier_rows`);
  their sharing f_R(x) = R + x c with S's share f_R(3) = PRF_QS(query id), never sent (:func:`share_rows`);
* C's fresh sharing of A with Q's share PRF_CQ(query id) and S's share one-time-padded with PRF_CS(query id)
  (:func:`compliance_sharing`, :func:`querier_a_share`, :func:`helper_a_share`);
* party i's output share d_i = [R]_i . [a]_i + z_i (+ Y / lambda_i), z a pseudorandom sharing of zero of
  degree 2t (PRSS, Cramer, Damgard & Ishai, TCC 2005; MPyC's ``np_pseudorandom_share_0``) from the three
  pairwise 16-byte keys (:class:`PairKeys`; MPyC's PRF, SHAKE-128) (:func:`output_share`);
* the opening: the three output shares interpolated at 0 with the Lagrange coefficients (3, -3, 1)
  (:data:`LAGRANGE_AT_ZERO`, :func:`open_output`), and each model's metric from the exact integer statistics
  (:func:`exact_metric`);
* field elements on the wire as 4 little-endian uint32 limbs (:data:`LIMBS`; :func:`encode_field`,
  :func:`decode_field`, :func:`field_bytes`), and C's admission of one query for S, HMAC-SHA256 under the C-S
  key (:func:`admission_tag`).

Every PRF input is a unique common input, the SHA-256 of the query id and the value's name. The protocol that
runs these functions, its exchanges and what each party sees: :mod:`parley.protocols.mechanisms.secure`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from parley.protocols.errors import QueryError
from parley.protocols.mechanisms.count_dp import SLICES
from parley.protocols.metrics import METRICS

__all__ = ["BAD_SHARES", "COMPLIANCE_ID", "HELPER_ID", "LAGRANGE_AT_ZERO", "LIMBS", "PRIME", "QUERIER_ID", "PairKeys",
           "admission_tag", "compliance_sharing", "decode_field", "encode_field", "exact_metric", "field_bytes",
           "helper_a_share", "open_output", "output_share", "querier_a_share", "querier_rows", "share_rows"]

#: The field of the shares: GF(p) with the Mersenne prime p = 2^127 - 1 (sums of 2^20 predictions at 2^-52 fit).
PRIME = (1 << 127) - 1
#: Party indices (Shamir evaluation points are index + 1).
COMPLIANCE_ID, QUERIER_ID, HELPER_ID = 0, 1, 2
#: Lagrange coefficients at 0 of the points 1, 2, 3: K = 3 d_C - 3 d_Q + d_S.
LAGRANGE_AT_ZERO = (3, -3, 1)
#: Field elements travel as 4 little-endian 32-bit limbs (uint32, last axis).
LIMBS = 4

#: Refusal of an array that is not field elements of the expected shape (:func:`decode_field`).
BAD_SHARES = ("protocol {name!r}: {what} must be a uint32 array of shape {shape} holding field elements below "
              "2^127 - 1 (got {got})")
#: Domain of the compliance party's admission tags (:func:`admission_tag`), apart from every PRF input.
_ADMISSION_DOMAIN = b"parley-mpc-admission-v1\n"


@lru_cache(maxsize=1)
def _mpyc() -> tuple[Any, Any]:
    """MPyC's ``finfields`` and ``thresha``, imported without its side effects on the process.

    Importing ``mpyc`` parses ``sys.argv`` as MPyC's own command line (parley's options would be
    refused as ambiguous) and configures the root logger; both are undone here: the import sees
    an empty command line with ``--no-log``, and the root logger's handlers and level are restored.
    """
    import logging
    import sys

    root = logging.getLogger()
    handlers, level, argv = list(root.handlers), root.level, sys.argv
    sys.argv = [argv[0] if argv else "parley", "--no-log"]
    try:
        from mpyc import finfields, thresha
    finally:
        sys.argv = argv
        root.handlers[:] = handlers
        root.setLevel(level)
    return finfields, thresha


@lru_cache(maxsize=1)
def _field() -> Any:
    return _mpyc()[0].GF(PRIME)


@dataclass(frozen=True)
class PairKeys:
    """The 16-byte keys party ``me`` shares with each other party, by the pair (i, j), i < j."""

    me: int
    keys: Mapping[tuple[int, int], bytes]

    def prf(self, other: int) -> Any:
        """MPyC's PRF (SHAKE-128) keyed with the key shared with ``other``, values in GF(p)."""
        pair = (min(self.me, other), max(self.me, other))
        return _mpyc()[1].PRF(self.keys[pair], PRIME)

    def prss(self) -> dict[tuple[int, ...], Any]:
        """The PRFs of every 2-subset holding ``me`` (MPyC's PRSS with m = 3, t = 1)."""
        prf = _mpyc()[1].PRF
        return {pair: prf(key, PRIME) for pair, key in self.keys.items() if self.me in pair}


def _uci(query_id: str, what: str) -> bytes:
    """A unique common input: the query id (unique per querier, refused if reused) and the value's name."""
    return hashlib.sha256(f"parley-mpc/{query_id}/{what}".encode()).digest()


def admission_tag(keys: PairKeys, metric: str, m: int, query_id: str, a_share: np.ndarray) -> str:
    """The compliance party's admission of one query for the helper: HMAC-SHA256 under the C-S key, hex.

    It binds the header (metric, m, query id) and the padded share of A (its uint32 limbs) that C hands
    out. Only C and S hold the key: the querier, which carries the tag from C's reply to S, can neither
    make one for an id C never admitted nor move one to another header or share. Checking it costs S a
    hash of its request, no PRF output.
    """
    limbs = np.ascontiguousarray(a_share, dtype="<u4")
    header = json.dumps([query_id, metric, m, list(limbs.shape)]).encode()
    message = _ADMISSION_DOMAIN + hashlib.sha256(header).digest() + hashlib.sha256(limbs.tobytes()).digest()
    key = keys.keys[(COMPLIANCE_ID, HELPER_ID)]
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def encode_field(values: np.ndarray) -> np.ndarray:
    """Field elements (object array of ints in [0, p)) -> uint32 limbs, last axis of length 4."""
    v = np.asarray(values, dtype=object)
    mask = 0xFFFFFFFF
    return np.stack([((v >> (32 * k)) & mask).astype(np.uint32) for k in range(LIMBS)], axis=-1)


def decode_field(limbs: Any, shape: tuple[int, ...], name: str, what: str) -> np.ndarray:
    """uint32 limbs -> field elements (object ints); QueryError if the array is not shares of that shape."""
    want = (*shape, LIMBS)
    ok = isinstance(limbs, np.ndarray) and limbs.dtype == np.uint32 and limbs.shape == want
    got = f"array of dtype {limbs.dtype} and shape {limbs.shape}" if isinstance(limbs, np.ndarray) \
        else type(limbs).__name__
    if not ok:
        raise QueryError(BAD_SHARES.format(name=name, what=what, shape=want, got=got))
    value = np.zeros(shape, dtype=object)
    for k in range(LIMBS):
        value = value + (limbs[..., k].astype(object) << (32 * k))
    if value.size and not bool((value < PRIME).all()):
        raise QueryError(BAD_SHARES.format(name=name, what=what, shape=want, got="a value >= p"))
    return value


def field_bytes(rows: int, n: int) -> int:
    """Bytes of a (rows, n) array of field elements on the wire (:func:`encode_field`: 4 uint32 limbs each)."""
    return rows * n * LIMBS * 4


def _inv(x: int) -> int:
    return pow(x % PRIME, PRIME - 2, PRIME)


def _share_at(secret: np.ndarray, known: np.ndarray, known_at: int, at: int) -> np.ndarray:
    """The degree-1 Shamir share at point ``at`` of f with f(0) = secret and f(known_at) = known."""
    slope = ((known - secret) * _inv(known_at)) % PRIME
    share: np.ndarray = (secret + at * slope) % PRIME
    return share


def querier_rows(predictions: np.ndarray, y: np.ndarray, metric: str,
                 bits: int) -> tuple[np.ndarray, list[list[int]], list[int]]:
    """The querier's rows R (object ints), the group totals T (per slice, per model) and the slice sizes n_I.

    Row s (m + 1) + i is r_i 1_I for model i of slice s; row s (m + 1) + m is 1_I
    (:mod:`parley.protocols.mechanisms.secure`).
    """
    h = np.asarray(predictions, dtype=np.float64)
    if not (np.all(h >= 0.0) and np.all(h <= 1.0)):
        raise QueryError("secure computation: predictions must lie in [0, 1]")
    r = np.rint(np.ldexp(h, bits)).astype(np.int64).astype(object)
    rows, totals, sizes = [], [], []
    for label in SLICES[metric]:
        mask = np.ones(y.shape, dtype=bool) if label is None else (np.asarray(y) == label)
        rows.append(np.where(mask[None, :], r, 0))
        rows.append(mask.astype(np.int64).astype(object)[None, :])
        totals.append([int(v) for v in np.where(mask[None, :], r, 0).sum(axis=1)])
        sizes.append(int(mask.sum()))
    return np.concatenate(rows, axis=0), totals, sizes


def share_rows(R: np.ndarray, keys: PairKeys, query_id: str) -> tuple[np.ndarray, np.ndarray]:
    """The querier's sharing of R: (C's share, Q's own share); S's share is PRF_QS(query id), never sent."""
    helper = keys.prf(HELPER_ID)(_uci(query_id, "rows"), R.shape)
    return _share_at(R, helper, 3, 1), _share_at(R, helper, 3, 2)


def _zero_share(keys: PairKeys, query_id: str, count: int) -> np.ndarray:
    share = _mpyc()[1].np_pseudorandom_share_0(_field(), 3, keys.me, keys.prss(), _uci(query_id, "zero"), count)
    return np.asarray(share.value, dtype=object)


def output_share(rows_share: np.ndarray, a_share: np.ndarray, keys: PairKeys, query_id: str,
                 noise: Sequence[int] | None = None) -> np.ndarray:
    """d_i = [R]_i [a]_i + z_i (+ Y / lambda_i): party i's share of K (and N) on the degree-2 polynomial."""
    d: np.ndarray = (rows_share.dot(a_share) + _zero_share(keys, query_id, rows_share.shape[0])) % PRIME
    if noise is not None:
        inv = _inv(LAGRANGE_AT_ZERO[keys.me])
        d = (d + np.array([(int(v) % PRIME) * inv for v in noise], dtype=object)) % PRIME
    return d


def compliance_sharing(a: np.ndarray, keys: PairKeys, query_id: str) -> tuple[np.ndarray, np.ndarray]:
    """C's fresh sharing of A: (C's share, S's share padded with PRF_CS); Q's share is PRF_CQ(query id)."""
    a_obj = np.asarray(a, dtype=np.int64).astype(object)
    querier = keys.prf(QUERIER_ID)(_uci(query_id, "a"), a_obj.shape)
    pad = keys.prf(HELPER_ID)(_uci(query_id, "pad"), a_obj.shape)
    return _share_at(a_obj, querier, 2, 1), (_share_at(a_obj, querier, 2, 3) + pad) % PRIME


def helper_a_share(padded: np.ndarray, keys: PairKeys, query_id: str) -> np.ndarray:
    """S removes C's pad from its share of A."""
    share: np.ndarray = (padded - keys.prf(COMPLIANCE_ID)(_uci(query_id, "pad"), padded.shape)) % PRIME
    return share


def querier_a_share(keys: PairKeys, query_id: str, n: int) -> np.ndarray:
    """Q's share of A: PRF_CQ(query id), never sent."""
    share: np.ndarray = keys.prf(COMPLIANCE_ID)(_uci(query_id, "a"), (n,))
    return share


def open_output(d_c: np.ndarray, d_q: np.ndarray, d_s: np.ndarray) -> list[int]:
    """Interpolate the three output shares at 0 (MPyC's recombination) -> signed integers."""
    thresha = _mpyc()[1]
    field = _field()
    points = [(x, np.asarray(d, dtype=object)) for x, d in ((1, d_c), (2, d_q), (3, d_s))]
    value = np.asarray(thresha.np_recombine(field, points).value, dtype=object)
    return [int(v) - PRIME if int(v) > PRIME // 2 else int(v) for v in value]


def exact_metric(metric: str, K: Sequence[Sequence[int]], N: Sequence[int], T: Sequence[Sequence[int]],
                 sizes: Sequence[int], bits: int) -> np.ndarray:
    """The metric of every model from the exact integer statistics, each value the float nearest the rational.

    Group means K / (N 2^B) and (T - K) / ((n_I - N) 2^B) are exact fractions; an empty group (which ``raw``
    refuses) counts as mean 0.
    """
    unit = 1 << bits
    gaps = []
    for s, n_slice in enumerate(sizes):
        n1 = N[s]
        row = []
        for k, t in zip(K[s], T[s], strict=True):
            if metric == "cov":
                row.append(Fraction(k, n_slice * unit) - Fraction(t * n1, n_slice * n_slice * unit))
                continue
            mean1 = Fraction(k, n1 * unit) if n1 > 0 else Fraction(0)
            mean0 = Fraction(t - k, (n_slice - n1) * unit) if n_slice > n1 else Fraction(0)
            row.append(mean1 - mean0)
        gaps.append(row)
    if metric == "eodds":
        values = [max(abs(u), abs(v)) for u, v in zip(gaps[0], gaps[1], strict=True)]
    elif metric in ("abs_sp", "abs_eo"):
        values = [abs(u) for u in gaps[0]]
    else:
        values = gaps[0]
    low, high = METRICS[metric].range
    return np.clip(np.array([float(v) for v in values], dtype=np.float64), low, high)
