"""Paired perturbation probes: Alg. 2's models, asked so that answer differences read whole blocks.

parley's design (not the query-leakage paper's), built from the paper's own
probe model. Every probe is *marginally exactly* an Alg. 2 model (Hamman, Chen,
Dutta, FAccT 2023, Sec. 3.2.2): h_i = clip(h0_i + U(-b, b), 0, 1) independently
per individual. The probes are dependent on purpose: a reference model h_ref is
asked once; every later probe equals h_ref except on a block of K individuals,
whose perturbations are drawn afresh. With v_j = 1/N1 if a_j = 1 and -1/N0 if
a_j = 0 (eq. 4; SP = mean over a=1 minus mean over a=0, protocols/metrics.py),
and d_j = h_j - h_ref,j, the difference of two answers involves the block only:

    D = SP(h) - SP(h_ref) = sum_{j in block} d_j v_j = S / N1 - c T,
    S = sum_{j in block} d_j,  c = 1/N1 + 1/N0,  T = sum_{j in block, a_j = 0} d_j.

So T = (S / N1 - D) / c is a *subset sum* of the K known reals d_j, and the
subset is the block's minority members. It is found by meet in the middle: the
2^(K/2) subset sums of each half, one half sorted, every sum of the other half
looked up (:func:`subset_sum_window`); 2 x 2^(K/2) numbers instead of 2^K.

Acceptance (never a guess). Let e bound the error of an answer difference (16
ulps of 1 for float64 answers; for rounded ones one unit of the last decimal,
plus the float64 error of the rounding and the same 16 ulps;
:func:`answer_error`); the observed T is then within tol = e / c of the true
one (doubled for slack, plus the float error of the subset sums). A block is
read only when exactly *one* subset sum lies within the window W = margin x tol
of the observed T, over every group size still possible. Under the error model
the truth is inside the window, so a unique candidate is the truth; the margin
(256 for float64) also keeps a wrong read out when the true error were up to
256 times the assumed one: the truth would still be in the window, and a second
candidate makes the block ambiguous, never wrong. Ambiguous blocks are drawn
and asked again; an answer with no candidate in the window is not exact, and
the attack stops with an error. Rounded answers have a proven error bound, so
there the window is the tolerance itself (margin 1).

Block width (the margin argument). For a wrong subset, its sum is a
continuous random variable (the d_j are); the 2^K subset sums of the block
spread around S/2 with variance ~ K E[d^2] / 4, so their density near the
target is at most about 1 / sqrt(2 pi K v / 4) with v = b^2 / 3 (the variance
of d for unclipped scores is 2 b^2 / 3; half of it covers clipping). The
expected number of wrong candidates in the window is then

    E(K) = |sizes| * 2^K * 2 W * density(K),

and K is the largest width with E(K) <= ``ambiguity`` (1 % by default):
about 23 for float64 at n = 1,000 with 10 % minority, and 11 for the first
block, which still has all n - 1 group sizes to rule out. That first block
therefore also reads N1 (no query is spent on group sizes, unlike Remark 4's
double query). Where even a one-person first block could not rule out every
size (coarser rounding, or very large n), the attack spends Remark 4's double
query on N0, N1 first. At a released precision too coarse for even one
individual per answer with the sizes known, :func:`block_width` returns 0 and
the attack raises :data:`NEEDS_PRECISION` (it never guesses).

Individuals whose fresh draw equals their reference value (both clipped to the
same bound, d_j = 0) carry no information in that answer; they stay pending
and are drawn again later. The walk that fills a block to K moving individuals
decides whether to redraw an individual from the earlier individuals' draws
only, so every probe entry is still an independent Alg. 2 draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parley.parties.attacks.decoders.answer_error import UNIT_ROUNDOFF
from parley.parties.attacks.decoders.answer_error import answer_error as answer_error_bound
from parley.parties.attacks.query_leakage.probes import _INSIDE

__all__ = ["NEEDS_PRECISION", "NO_FIT", "BlockRead", "answer_error", "block_width", "read_block", "redraw_block",
           "subset_sum_window"]

NEEDS_PRECISION = ("the paired design cannot read one individual per answer at {decimals} decimals (answer error "
                   "{err:.3g}): it needs answers to {need} at least")
NO_FIT = ("the answer difference of a block of {k} fits no subset of its moves within {window:.3g} for any of "
          "{sizes} group sizes: the answers are not exact (noisy, or rounded more coarsely than stated)")

#: Largest block: 2 x 2^20 subset sums (16 MB) per answer.
MAX_WIDTH = 40


def answer_error(decimals: int | None, safety_ulps: float) -> float:
    """Bound on |released difference - exact difference| of two SP answers (|SP| <= 1).

    float64: ``safety_ulps`` ulps of 1 (a difference of two dot products of
    length n with values <= 1; measured errors at n = 1,000 are below one ulp).
    ``decimals``: each answer is within half a unit of the last decimal *plus*
    the float64 error of the rounding itself (bound (R) of
    :mod:`parley.parties.attacks.decoders.answer_error`, larger than half a
    unit at 16 and 17 decimals), plus the same allowance.
    """
    one = float(answer_error_bound(1.0, decimals, safety_ulps))
    return 2.0 * one + 2.0 * UNIT_ROUNDOFF


def _tolerance(err: float, c: np.ndarray | float) -> np.ndarray:
    """Error of the observed subset sum T = (S/N1 - D)/c: twice e / c."""
    return 2.0 * err / np.asarray(c, dtype=np.float64)


def _density(k: int, b: float) -> float:
    """Peak density of the 2^k subset sums of a block (normal approximation, v = b^2/3)."""
    return 1.0 / math.sqrt(2.0 * math.pi * k * (b * b / 3.0) / 4.0)


def block_width(sizes: int, err: float, c_min: float, b: float, margin: float, ambiguity: float,
                max_width: int = MAX_WIDTH) -> int:
    """Largest K whose expected wrong candidates in the window stay below ``ambiguity`` (0 if none).

    Parameters
    ----------
    sizes : int
        Group sizes N1 still possible (each is a separate target T).
    err : float
        Answer-difference error (:func:`answer_error`).
    c_min : float
        Smallest c = 1/N1 + 1/N0 over those sizes (the widest tolerance).
    b : float
        Perturbation bound.
    margin : float
        Window in multiples of the tolerance.
    ambiguity : float
        Expected wrong candidates allowed per block (a re-ask when one shows).
    max_width : int
        Cap on K (memory of the meet in the middle).
    """
    window = margin * float(_tolerance(err, c_min))
    best = 0
    for k in range(1, max_width + 1):
        if sizes * 2.0 ** k * 2.0 * window * _density(k, b) <= ambiguity:
            best = k
        else:
            break
    return best


def redraw_block(h0: np.ndarray, ref: np.ndarray, order: np.ndarray, k: int, b: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """A probe equal to ``ref`` except for fresh Alg. 2 draws on individuals taken from ``order``.

    Walks ``order`` and redraws each individual until ``k`` of them have moved
    (d_j != 0). Whether an individual is redrawn depends only on the draws of
    the individuals before it, so each entry of the probe is an independent
    draw of clip(h0 + U(-b, b), 0, 1), as in Alg. 2.

    Returns
    -------
    row : ndarray (n,)
        The probe.
    moved : ndarray of int
        Redrawn individuals whose score changed: the block the answer reads.
    still : ndarray of int
        Redrawn individuals whose draw equals the reference (no information).
    used : int
        How many entries of ``order`` were consumed.
    """
    row = np.array(ref, dtype=np.float64, copy=True)
    moved: list[np.ndarray] = []
    still: list[np.ndarray] = []
    used = 0
    while used < order.size and sum(map(len, moved)) < k:
        need = k - sum(map(len, moved))
        chunk = order[used:used + need + 8]
        fresh = np.clip(h0[chunk] + rng.uniform(-b, b, size=chunk.size) * _INSIDE, 0.0, 1.0)
        moves = fresh != ref[chunk]
        # keep the prefix up to (and including) the need-th mover; later draws are discarded unused
        cut = chunk.size if moves.sum() < need else int(np.flatnonzero(np.cumsum(moves) == need)[0]) + 1
        row[chunk[:cut]] = fresh[:cut]
        moved.append(chunk[:cut][moves[:cut]])
        still.append(chunk[:cut][~moves[:cut]])
        used += cut

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    return row, cat(moved).astype(np.int64), cat(still).astype(np.int64), used


def _all_sums(w: np.ndarray) -> np.ndarray:
    """All 2^len(w) subset sums; bit k of the index says whether w[k] is in the subset."""
    sums = np.zeros(1)
    for value in w:
        sums = np.concatenate([sums, sums + value])
    return sums


def _bits(index: int, width: int) -> np.ndarray:
    return ((index >> np.arange(width)) & 1).astype(bool)


def subset_sum_window(weights: np.ndarray, targets: np.ndarray, window: np.ndarray
                      ) -> tuple[np.ndarray, tuple[int, np.ndarray, float] | None]:
    """Meet in the middle: how many subsets of ``weights`` sum to within ``window`` of each target.

    Parameters
    ----------
    weights : ndarray (K,)
    targets, window : ndarray (C,)
        One target per candidate group size and its half-width.

    Returns
    -------
    counts : ndarray of int (C,)
        Subsets within the window of each target.
    hit : (target index, subset mask, subset sum) or None
        The subset when exactly one was found over all targets.
    """
    weights = np.asarray(weights, dtype=np.float64)
    half = weights.size // 2
    left, right = _all_sums(weights[:half]), _all_sums(weights[half:])
    order = np.argsort(left, kind="stable")
    left_sorted = left[order]
    want = np.asarray(targets, dtype=np.float64)[:, None] - right[None, :]  # left sums that complete each target
    win = np.asarray(window, dtype=np.float64)[:, None]
    lo = np.searchsorted(left_sorted, want - win, side="left")
    hi = np.searchsorted(left_sorted, want + win, side="right")
    per_pair = hi - lo
    counts = per_pair.sum(axis=1)
    if counts.sum() != 1:
        return counts, None
    t, j = (int(v[0]) for v in np.nonzero(per_pair))
    i = int(order[lo[t, j]])
    mask = np.concatenate([_bits(i, half), _bits(j, weights.size - half)])
    return counts, (t, mask, float(left[i] + right[j]))


@dataclass(frozen=True)
class BlockRead:
    """What one answer difference says about its block.

    ``status`` is "read" (one candidate: ``x`` marks the block's a = 0 members,
    ``n1`` the group size), "ambiguous" (several; ``sizes`` keeps the group
    sizes that had any) or "none" (no candidate: the answer is not exact).
    ``fit`` is |observed T - subset sum| in units of the tolerance (<= 1 under
    the error model).
    """

    status: str
    x: np.ndarray | None = None
    n1: int | None = None
    fit: float | None = None
    sizes: np.ndarray | None = None
    window: float = 0.0


def read_block(d: np.ndarray, diff: float, n: int, n1_candidates: np.ndarray, err: float, margin: float
               ) -> BlockRead:
    """Read a block from its moves ``d`` and the answer difference ``diff`` (module docstring algebra).

    For every candidate N1 the target is T = (S/N1 - D)/c; the window is
    ``margin`` x tolerance (plus the float error of summing up to K moves).
    """
    d = np.asarray(d, dtype=np.float64)
    n1 = np.asarray(n1_candidates, dtype=np.float64)
    c = 1.0 / n1 + 1.0 / (n - n1)
    targets = (d.sum() / n1 - diff) / c
    sum_error = 4.0 * d.size * float(np.spacing(1.0)) * float(np.abs(d).sum() + 1.0)
    tol = _tolerance(err, c) + sum_error
    counts, hit = subset_sum_window(d, targets, margin * tol)
    if hit is None:
        if counts.sum() == 0:
            return BlockRead("none", window=float((margin * tol).max()))
        return BlockRead("ambiguous", sizes=np.asarray(n1_candidates)[counts > 0])
    t, mask, value = hit
    return BlockRead("read", x=mask, n1=int(n1_candidates[t]), fit=abs(value - targets[t]) / tol[t])
