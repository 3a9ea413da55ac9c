"""The curious compliance party: what it learns about the data center's models from the queries it receives.

The compliance party holds A honestly but would like the models' predictions (a competitor's model,
or leverage over the data center). Under ``raw`` and every DP protocol a metric query carries the
predictions in the clear: the compliance party reads them. Under ``he`` it receives CKKS ciphertexts under
the data center's key (pseudorandom under RLWE without the secret key). Under ``mpc`` and ``mpc-dp`` it receives
one Shamir share of each encoded prediction, (2 r + u)/3 in GF(p) with u pseudorandom under a key it
does not hold (:mod:`parley.protocols.mechanisms.secure`): uniform whatever r is, so no reading of it
beats a coin. :func:`read_predictions` is the compliance party's best reading of each kind of message
(for a share it thresholds the field element: any rule is as good), and :func:`view_accuracy` scores it
against the true predictions with balanced accuracy (chance = 0.5, whatever the acceptance rate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from parley.parties.confidential import is_sealed
from parley.parties.wire import Envelope

__all__ = ["read_predictions", "view_accuracy", "compliance_view_accuracy"]


def read_predictions(kind: str, payload: Any, n: int) -> np.ndarray | None:
    """The compliance party's reading of the first model's binary predictions in one message (None: no query).

    ``metric-query``: the predictions themselves (thresholded at 0.5); ``mpc-query``: its share of the
    first row, thresholded at p/2.
    """
    if not isinstance(payload, Mapping) or is_sealed(payload):
        return None
    if kind == "metric-query" and isinstance(payload.get("predictions"), np.ndarray):
        guess: np.ndarray = (np.atleast_2d(payload["predictions"])[0] >= 0.5).astype(np.int8)
        return guess
    if kind == "mpc-query" and isinstance(payload.get("shares"), np.ndarray):
        from parley.protocols.crypto.shamir import PRIME, decode_field

        shares = payload["shares"]
        if shares.ndim != 3 or shares.shape[1] != n:
            return None
        first = decode_field(shares[:1], (1, n), "mpc", "shares")[0]
        return np.array([int(v) < PRIME // 2 for v in first], dtype=np.int8)
    if kind == "he-query" and isinstance(payload.get("ciphertexts"), list) and payload["ciphertexts"]:
        # An RLWE ciphertext is pseudorandom without the secret key: read the last n bytes of the first one
        # (coefficients of its second component), each thresholded at 128. Any rule is as good.
        blob = payload["ciphertexts"][0]
        if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.size < n:
            return None
        return (blob[-n:] >= 128).astype(np.int8)
    return None


def view_accuracy(guess: np.ndarray, truth: np.ndarray) -> float:
    """Balanced accuracy of ``guess`` against binary ``truth`` (0.5 = chance; a class absent counts as 0.5)."""
    guess, truth = np.asarray(guess), np.asarray(truth)
    rates = []
    for label in (0, 1):
        mask = truth == label
        rates.append(float((guess[mask] == label).mean()) if mask.any() else 0.5)
    return float(np.mean(rates))


def compliance_view_accuracy(envelopes: Iterable[Envelope], compliance: str, querier: str, truth: np.ndarray
                             ) -> float | None:
    """Balanced accuracy of the compliance party's reading of the first query ``querier`` sent it (None: none)."""
    for envelope in envelopes:
        if envelope.recipient != compliance or envelope.sender != querier:
            continue
        guess = read_predictions(envelope.kind, envelope.payload, int(truth.shape[0]))
        if guess is not None:
            return view_accuracy(guess, truth)
    return None
