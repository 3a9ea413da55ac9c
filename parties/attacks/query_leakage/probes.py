"""Probe designers: the models a curious data center submits (query-leakage paper, Sec. 3).

Every design keeps the probes realistic relative to the base model h0 (its
scores on the audit set): flip-one changes one prediction (Alg. 1), bounded
perturbations move every score by at most b (Alg. 2), precision blocks move a
block of scores by at most b (parley's design, :mod:`parley.parties.attacks.query_leakage.reveal`).
Random binary models are the textbook compressed-sensing matrix and are not
realistic; they are offered for comparison.
"""

from __future__ import annotations

import numpy as np

#: Designed moves use b * (1 - 1e-9) so that float64 rounding never takes |h - h0| above b.
_INSIDE = 1.0 - 1e-9

__all__ = ["flip_one", "uniform_perturbations", "random_binary", "precision_block", "precision_block_values",
           "max_deviation"]


def flip_one(h0: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Alg. 1: row i equals h0 with the prediction of individual ``indices[i]`` flipped (1 - h0)."""
    H = np.repeat(np.asarray(h0, dtype=np.float64)[None, :], len(indices), axis=0)
    rows = np.arange(len(indices))
    H[rows, indices] = 1.0 - H[rows, indices]
    return H


def uniform_perturbations(h0: np.ndarray, m: int, b: float, rng: np.random.Generator,
                          subset: np.ndarray | None = None) -> np.ndarray:
    """Alg. 2: h_i = clip(h0 + U(-b, b), 0, 1), on every individual or only on ``subset``."""
    h0 = np.asarray(h0, dtype=np.float64)
    H = np.repeat(h0[None, :], m, axis=0)
    cols = np.arange(h0.size) if subset is None else np.asarray(subset)
    H[:, cols] = np.clip(h0[cols][None, :] + rng.uniform(-b, b, size=(m, cols.size)) * _INSIDE, 0.0, 1.0)
    return H


def random_binary(n: int, m: int, rng: np.random.Generator, p: float = 0.5) -> np.ndarray:
    """Random {0, 1} models (Bernoulli(p) entries): RIP-friendly, unrealistic."""
    return (rng.random((m, n)) < p).astype(np.float64)


def precision_block(h0: np.ndarray, block: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """One probe moving ``block[k]`` by ``±b 2^-k`` (the sign that stays inside [0, 1]).

    Returns the probe row and the signs used. The realised moves ``row - h0``
    (exact in float64, known to the attacker) are what the decoder uses.
    """
    h0 = np.asarray(h0, dtype=np.float64)
    values, signs = precision_block_values(h0, block, b)
    row = h0.copy()
    row[block] = values
    return row, signs


def precision_block_values(h0: np.ndarray, block: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """The scores of :func:`precision_block`'s probe at ``block`` only (its edit form), and the signs used."""
    start = h0[block]
    signs = np.where(start + b <= 1.0, 1.0, -1.0)
    return start + signs * (b * _INSIDE) * np.exp2(-np.arange(block.size)), signs


def max_deviation(H: np.ndarray, h0: np.ndarray) -> float:
    """Largest |h_i(x_j) - h0(x_j)| over a probe set (the realism budget actually used)."""
    return float(np.abs(np.asarray(H) - np.asarray(h0)[None, :]).max()) if len(H) else 0.0
