"""Threshold inversion: read s back from the accept/reject answers of the cov-threshold protocol.

Target: Alg. 1 of Hu, Liu, Wang & Lan (ICDM 2019), :mod:`parley.protocols.mechanisms.covariance_threshold`.
Each answer says, for every hypothesis t sent, whether ``|cov(h_t(x), s)| <= rho``.
With the 1/n covariance of :func:`parley.protocols.metrics.covariance` and the row-centred
predictions ``q_t = (P_t - mean(P_t)) / n``::

    cov_t = sum_j q_tj s_j          (linear in s; no group size needed)

so an accept is two linear constraints ``-rho <= q_t . s <= rho`` and a reject the
disjunction ``q_t . s >= rho  or  q_t . s <= -rho``. The answers are symmetric under
``s -> 1 - s`` (``q_t`` sums to 0), so they fix s only up to swapping the groups;
the group count N1 (``know_counts``, public statistics as in Remark 4 of the
query-leakage paper) breaks the tie unless N1 = n/2 or the predictions span
only a subspace (then s and 1 - s with the same projection up to sign both
fit); otherwise the reconstruction is scored as a partition (the better of the
two labelings, as for the |SP| attack of the query-leakage paper).

Decoders (all with one slack per answer, so noisy or soft answers stay feasible):

- ``milp`` (small n): s binary, one binary per reject choosing its side (big-M),
  minimise the total slack; scipy.optimize.milp (HiGHS).
- ``lp`` (any n): a spectral start, the top eigenvector of
  ``mean_reject q q^T - mean_accept q q^T`` (directions where rejects have large
  and accepts small projections), fixes each reject's side; the LP relaxation
  ``s in [0, 1]^n`` with those sides is solved (linprog, HiGHS), rounded (top N1,
  or at 1/2), and the sides are re-read from the rounding, a few rounds; the
  rounding with the fewest violated answers wins. Both objectives add a tiny
  pull toward the spectral start to choose among equally feasible s.

What the adversary knows: the predictions it sent (curious data center) or saw
on the wire (observer), rho and the policy (both in every reply), which indices
came back, n, and N1 where ``know_counts``. It does not know the noise draws.
A curious data center may add ``probes`` hypotheses of its own: i.i.d. Gaussian
vectors over the training set, scaled to rho so that about half are accepted (what DFKRR's
kernel hypotheses look like to the third party; the protocol cannot tell a probe from a hypothesis).

Information limit: linear hypotheses ``h_t(x) = w_t . x`` give ``q_t`` in the
p-dimensional row space of the centred features, so their answers reveal at most
``X^T (s - mean s)``, the direction of cov(x, s): the adversary can then classify
s only as well as a linear function of x can. Vectors spanning R^n (kernel
hypotheses, probes) can pin down every s_j.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import ACTIVE, PASSIVE, Attack, AttackParams, Reconstruction, register_attack
from parley.protocols.errors import AttackError

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["AcceptAnswer", "ThresholdInversion", "answer_blocks", "centred_rows", "decode_lp", "decode_milp",
           "spectral_start",
           "violations", "NO_ANSWERS"]

NO_ANSWERS = "threshold-inversion needs at least one answered hypothesis query; none was seen"
SIZES_DIFFER = "threshold-inversion: answers cover {sizes} individuals; all must be about the same n"
# Weight of the pull toward the spectral start, relative to one unit of slack (in rho units).
PULL = 1e-4


@dataclass(frozen=True)
class AcceptAnswer:
    """One answered hypothesis-query: the (m, n) predictions sent and the accepted indices."""

    predictions: np.ndarray
    accepted: np.ndarray
    rho: float


def answer_blocks(answers: Sequence[AcceptAnswer]) -> list[np.ndarray]:
    """Row indices of each answer within :func:`centred_rows`' stacked matrix."""
    bounds = np.cumsum([0] + [a.predictions.shape[0] for a in answers])
    return [np.arange(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def centred_rows(answers: Sequence[AcceptAnswer]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, accepted mask, rho per row): ``Q[t] . s = cov_t`` for every hypothesis of every answer."""
    if not answers:
        raise AttackError(NO_ANSWERS)
    sizes = {a.predictions.shape[1] for a in answers}
    if len(sizes) != 1:
        raise AttackError(SIZES_DIFFER.format(sizes=sorted(sizes)))
    n = sizes.pop()
    blocks, masks, rhos = [], [], []
    for answer in answers:
        P = np.asarray(answer.predictions, dtype=np.float64)
        blocks.append((P - P.mean(axis=1, keepdims=True)) / n)
        mask = np.zeros(P.shape[0], dtype=bool)
        mask[np.asarray(answer.accepted, dtype=np.int64)] = True
        masks.append(mask)
        rhos.append(np.full(P.shape[0], answer.rho))
    return np.vstack(blocks), np.concatenate(masks), np.concatenate(rhos)


def spectral_start(Q: np.ndarray, accepted: np.ndarray) -> np.ndarray:
    """Top eigenvector of mean_rej q q^T - mean_acc q q^T, on centred vectors (a guess of s - mean s)."""
    from scipy.sparse.linalg import LinearOperator, eigsh  # scipy is imported where it is used: design.md, "Start-up"

    n = Q.shape[1]
    # Unit rows: every hypothesis counts once, whatever the scale of its predictions.
    Q = Q / np.maximum(np.linalg.norm(Q, axis=1, keepdims=True), 1e-300)
    Qa, Qr = Q[accepted], Q[~accepted]
    wa = 1.0 / max(len(Qa), 1)
    wr = 1.0 / max(len(Qr), 1)

    def apply(v: np.ndarray) -> np.ndarray:
        applied: np.ndarray = wr * (Qr.T @ (Qr @ v)) - wa * (Qa.T @ (Qa @ v))
        return applied

    if n <= 400:
        M = apply(np.eye(n))
        _, vectors = np.linalg.eigh((M + M.T) / 2)
        return vectors[:, -1]
    _, vectors = eigsh(LinearOperator((n, n), matvec=lambda v: apply(np.ravel(v)), dtype=np.float64), k=1, which="LA",
                       v0=np.ones(n) / np.sqrt(n) + 1e-3 * np.arange(n) / n)
    leading: np.ndarray = vectors[:, 0]
    return leading


def violations(Q: np.ndarray, accepted: np.ndarray, rho: np.ndarray, s: np.ndarray) -> int:
    """How many answers ``s`` contradicts."""
    cov = Q @ s
    inside = np.abs(cov) <= rho
    return int((inside != accepted).sum())


def row_space(Q: np.ndarray) -> np.ndarray | None:
    """Orthonormal basis (n, r) of the span of the centred predictions, None if it is all of R^n (minus 1)."""
    if Q.shape[0] == 0:
        return None
    _, sv, Vt = np.linalg.svd(Q, full_matrices=False)
    r = int((sv > sv.max() * 1e-9).sum())
    return Vt[:r].T if r < Q.shape[1] - 1 else None


def _in_row_space(x: np.ndarray, basis: np.ndarray | None) -> np.ndarray:
    """The part of a relaxed s the answers determine: its projection on span(Q), rescaled to [0, 1].

    The answers constrain s only through Q s; the rest of an LP vertex is arbitrary. When
    the predictions span a subspace (linear hypotheses: rank p), rounding the projection
    gives the linear classifier of s the answers support instead of an arbitrary vertex.
    """
    if basis is None:
        return x
    u = basis @ (basis.T @ (x - x.mean()))
    scaled: np.ndarray = (u - u.min()) / (np.ptp(u) or 1.0)
    return scaled


def _round(x: np.ndarray, n1: int | None, tie: np.ndarray) -> np.ndarray:
    """0/1 from a relaxed s: the n1 largest (ties by the spectral start), or x >= 1/2."""
    if n1 is None:
        return (x >= 0.5).astype(np.int8)
    out = np.zeros(x.shape[0], dtype=np.int8)
    out[np.lexsort((tie, x))[::-1][:n1]] = 1
    return out


def _orient(v: np.ndarray, Q: np.ndarray, accepted: np.ndarray, rho: np.ndarray, n1: int | None) -> np.ndarray:
    """The sign of the spectral start whose rounding contradicts fewer answers."""
    best = None
    for cand in (v, -v):
        x = (cand - cand.min()) / (np.ptp(cand) or 1.0)
        bad = violations(Q, accepted, rho, _round(x, n1, cand))
        if best is None or bad < best[0]:
            best = (bad, cand)
    assert best is not None  # the loop ran
    return best[1]


def decode_lp(Q: np.ndarray, accepted: np.ndarray, rho: np.ndarray, n1: int | None, rounds: int = 4,
              time_limit: float = 60.0, blocks: Sequence[np.ndarray] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
    """LP relaxation with reject sides from a spectral start, rounded; the best of a few rounds, both signs."""
    basis = row_space(Q)
    best_s: np.ndarray | None = None
    info: dict[str, Any] = {"violations": np.inf}
    # Starts: the spectral vector of each answer alone, largest first (a low-rank answer, such as
    # linear hypotheses, would pull a joint start into its subspace), then of all rows; both signs,
    # since the start's sign decides every reject's side. Stop at the first that fits every answer.
    starts = []
    if blocks is not None and len(blocks) > 1:
        starts += [spectral_start(Q[b], accepted[b]) for b in sorted(blocks, key=len, reverse=True)]
    starts.append(spectral_start(Q, accepted))
    for v0 in starts:
        oriented = _orient(v0, Q, accepted, rho, n1)
        for v in (oriented, -oriented):
            s, found = _lp_rounds(Q, accepted, rho, n1, rounds, time_limit, basis, v)
            if found["violations"] < info["violations"]:
                best_s, info = s, found
            if info["violations"] == 0:
                break
        if info["violations"] == 0:
            break
    assert best_s is not None  # the first start improves on infinitely many violations
    return best_s, info



def _lp_rounds(Q: np.ndarray, accepted: np.ndarray, rho: np.ndarray, n1: int | None, rounds: int,
               time_limit: float, basis: np.ndarray | None, v: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """LP relaxations with the reject sides of ``v``, re-read from each solution; the best rounding."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    m, n = Q.shape
    x0 = (v - v.min()) / (np.ptp(v) or 1.0)
    best_s = _round(x0, n1, v)
    best = violations(Q, accepted, rho, best_s)
    pull = -PULL * v / (np.abs(v).sum() or 1.0)
    side = np.sign(Q @ (best_s - best_s.mean()))
    side[side == 0] = 1.0
    history = [best]
    for _ in range(rounds):
        # Rows: accepted  q.s - e <= rho, -q.s - e <= rho; rejected  -side q.s - e <= -rho.
        acc, rej = np.flatnonzero(accepted), np.flatnonzero(~accepted)
        A = np.vstack([Q[acc], -Q[acc], -side[rej, None] * Q[rej]])
        rows = np.concatenate([acc, acc, rej])
        b = np.concatenate([rho[acc], rho[acc], -rho[rej]])
        E = sp.csr_matrix((-np.ones(len(rows)), (np.arange(len(rows)), rows)), shape=(len(rows), m))
        A_ub = sp.hstack([sp.csr_matrix(A), E]).tocsr()
        A_eq = b_eq = None
        if n1 is not None:
            A_eq = sp.csr_matrix(np.concatenate([np.ones(n), np.zeros(m)])[None, :])
            b_eq = [n1]
        c = np.concatenate([pull, np.ones(m) / np.maximum(rho, 1e-12)])
        res = linprog(c, A_ub=A_ub, b_ub=b, A_eq=A_eq, b_eq=b_eq,
                      bounds=[(0, 1)] * n + [(0, None)] * m, method="highs",
                      options={"time_limit": time_limit})
        if res.x is None:
            break
        s = _round(_in_row_space(res.x[:n], basis), n1, v)
        bad = violations(Q, accepted, rho, s)
        history.append(bad)
        if bad < best:
            best, best_s = bad, s
        new_side = np.sign(Q @ (res.x[:n] - res.x[:n].mean()))
        new_side[new_side == 0] = 1.0
        if np.array_equal(new_side[rej], side[rej]):
            break
        side = new_side
    return best_s, {"violations": best, "violations_by_round": history}


def decode_milp(Q: np.ndarray, accepted: np.ndarray, rho: np.ndarray, n1: int | None,
                time_limit: float = 60.0, blocks: Sequence[np.ndarray] | None = None
                ) -> tuple[np.ndarray, dict[str, Any]]:
    """The integer program: s binary, a side per reject (big-M), minimum total slack (HiGHS)."""
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    m, n = Q.shape
    acc, rej = np.flatnonzero(accepted), np.flatnonzero(~accepted)
    r = len(rej)
    # HiGHS takes no starting point: the LP decoder's answer stands if the search ends with a worse incumbent.
    fallback, fallback_info = decode_lp(Q, accepted, rho, n1, time_limit=time_limit, blocks=blocks)
    big = np.abs(Q).sum(axis=1) + rho  # |q.s| <= sum |q| for s in [0, 1]^n
    v = _orient(spectral_start(Q, accepted), Q, accepted, rho, n1)
    # Variables: s (n), z (r: 1 = the reject lies below -rho), e (m slacks).
    nvar = n + r + m

    def row(block_s: np.ndarray, z_coef: np.ndarray | None, e_idx: np.ndarray) -> sp.csr_matrix:
        k = block_s.shape[0]
        parts = [sp.csr_matrix(block_s)]
        parts.append(sp.csr_matrix((z_coef, (np.arange(k), np.arange(k))), shape=(k, r)) if z_coef is not None
                     else sp.csr_matrix((k, r)))
        parts.append(sp.csr_matrix((-np.ones(k), (np.arange(k), e_idx)), shape=(k, m)))
        return sp.hstack(parts)

    blocks, upper = [], []
    blocks += [row(Q[acc], None, acc), row(-Q[acc], None, acc)]
    upper += [rho[acc], rho[acc]]
    # q.s >= rho - M z - e   ->  -q.s - M z - e <= -rho
    blocks.append(row(-Q[rej], -big[rej], rej))
    upper.append(-rho[rej])
    # q.s <= -rho + M (1 - z) + e  ->  q.s + M z - e <= M - rho
    blocks.append(row(Q[rej], big[rej], rej))
    upper.append(big[rej] - rho[rej])
    constraints = [LinearConstraint(sp.vstack(blocks).tocsr(), -np.inf, np.concatenate(upper))]
    if n1 is not None:
        constraints.append(LinearConstraint(np.concatenate([np.ones(n), np.zeros(r + m)])[None, :], n1, n1))
    c = np.concatenate([-PULL * v / (np.abs(v).sum() or 1.0), np.zeros(r), np.ones(m) / np.maximum(rho, 1e-12)])
    integrality = np.concatenate([np.ones(n + r), np.zeros(m)])
    bounds = Bounds(np.zeros(nvar), np.concatenate([np.ones(n + r), np.full(m, np.inf)]))
    res = milp(c, constraints=constraints, integrality=integrality, bounds=bounds,
               options={"time_limit": time_limit})
    info = {"milp_status": int(res.status), "lp_violations": fallback_info["violations"]}
    if res.x is None:  # no incumbent within the time limit
        return fallback, {"violations": fallback_info["violations"], "milp_used": False, **info}
    s = np.round(res.x[:n]).astype(np.int8)
    bad = violations(Q, accepted, rho, s)
    if bad > fallback_info["violations"]:
        return fallback, {"violations": fallback_info["violations"], "milp_used": False, **info}
    return s, {"violations": bad, "milp_used": True, **info}


class ThresholdInversionParams(AttackParams):
    decoder: Literal["auto", "milp", "lp"] = Field(
        default="auto", description="integer program, LP relaxation + rounding, or milp up to milp_max_n")
    milp_max_n: int = Field(default=150, ge=1, description="largest n 'auto' gives to the integer program")
    probes: int = Field(default=0, ge=0, le=20000,
                        description="extra N(0, 1) hypotheses a curious data center sends (0 = honest ones only)")
    know_counts: bool = Field(default=True, description="the adversary knows N1 (public statistics)")
    time_limit: float = Field(default=60.0, gt=0.0, description="seconds per solver call")
    rounds: int = Field(default=4, ge=0, le=50, description="side re-estimations of the LP decoder")


@register_attack
class ThresholdInversion(Attack[ThresholdInversionParams]):
    """Reconstruct s of the training set from which hypotheses the third party accepted."""

    name: ClassVar[str] = "threshold-inversion"
    Params: ClassVar[type[AttackParams]] = ThresholdInversionParams
    threat_models: ClassVar[tuple[str, ...]] = ACTIVE + PASSIVE
    flows: ClassVar[tuple[str, ...]] = ("cov-threshold",)
    summary: ClassVar[str] = "accept/reject answers as linear constraints on s, solved by MILP or LP + rounding"

    def probes(self, n: int, rho: float, n1: int | None) -> np.ndarray | None:
        """The extra hypotheses' predictions (probes, n) a curious data center sends, or None.

        Scaled so that about half are accepted: for ``N(0, a^2)`` entries, cov_t is
        ``N(0, a^2 n sbar (1 - sbar) / n^2)`` and ``P(|Z| <= 0.674) = 1/2``, so
        ``a = (rho / 0.674) n / sqrt(n sbar (1 - sbar))``, with ``sbar = N1 / n`` (1/2
        without the counts). An accept set near half of the probes carries the most bits.
        """
        if self.params.probes == 0:
            return None
        share = n1 / n if (n1 is not None and self.params.know_counts and 0 < n1 < n) else 0.5
        scale = (rho / 0.674) * n / np.sqrt(n * share * (1.0 - share))
        return self.rng.normal(0.0, scale, size=(self.params.probes, n))

    def reconstruct(self, answers: Sequence[AcceptAnswer], n1: int | None) -> Reconstruction:
        """Decode every answer seen; ``n1`` is used only if ``know_counts``."""
        started = time.perf_counter()
        Q, accepted, rho = centred_rows(answers)
        n = Q.shape[1]
        n1 = n1 if self.params.know_counts else None
        decoder = self.params.decoder
        if decoder == "auto":
            decoder = "milp" if n <= self.params.milp_max_n else "lp"
        if decoder == "milp":
            s, info = decode_milp(Q, accepted, rho, n1, self.params.time_limit, answer_blocks(answers))
        else:
            s, info = decode_lp(Q, accepted, rho, n1, self.params.rounds, self.params.time_limit,
                                answer_blocks(answers))
        # Predictions confined to a subspace (linear hypotheses) determine s - mean(s) only through
        # its projection, which s and 1 - s share up to sign: the answers then give a partition only.
        low_rank = row_space(Q) is not None
        info = {"decoder": decoder, "hypotheses_seen": int(Q.shape[0]), "accepted_seen": int(accepted.sum()),
                "low_rank": low_rank,
                "decode_s": round(time.perf_counter() - started, 3), **{k: v for k, v in info.items()
                                                                         if not isinstance(v, list)}}
        return Reconstruction(indices=np.arange(n), a_hat=s.astype(np.int8), decided=np.ones(n, dtype=bool),
                              queries=len(answers), info=info,
                              partition_only=n1 is None or 2 * n1 == n or low_rank)
