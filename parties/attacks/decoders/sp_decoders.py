"""Decoders for the Attribute-Reveal attacks: recover A from probe models H and their SP answers.

Query-leakage paper (Hamman, Chen, Dutta, FAccT 2023), Sec. 3. A curious data
center submits m probe models H (m x n, scores in [0, 1]) and receives the
statistical-parity answers

    SP = H v,    v_j = +1/N1 if a_j = 1 (advantaged),  -1/N0 if a_j = 0      (eq. 4)

Every decoder here turns (H, SP) back into a binary vector ``a_hat`` and says
whether it can *vouch* for it (``certified``) rather than guessing silently.

The decoders
------------
* :func:`decode_linear` -- Theorem 1 / Alg. 1: solve (4) by least squares;
  exact when rank(H) = n.
* :func:`decode_l1` -- Theorem 2 / Alg. 2 as printed (sign fixed, see below):
  basis pursuit min ||s||_1 s.t. H s = eta, one LP (HiGHS).
* :func:`decode_box_count` -- everything the attacker knows about s: it takes
  only the two values {0, c}, exactly N0 of them are c. Relaxed to a
  feasibility LP over the box 0 <= z <= 1 with sum z = N0.
* :func:`decode_amp` -- approximate message passing with the Bayes-optimal
  denoiser of the two-point prior; matrix-vector products only, so it is the
  fast exact decoder for Alg. 2's random probes.
* :func:`decode_robust` -- noisy answers: least-absolute-deviation LP decoding
  over the same box/count set (Dinur-Nissim style).
* :func:`decode_fastest` -- AMP, then the box/count LP, else an
  :class:`~parley.protocols.errors.AttackError` saying more queries are needed.

Reduction to a sparse problem and the sign of eta
-------------------------------------------------
Write v = r - s with r = (1/N1) 1 and s_j = 0 if a_j = 1, s_j = c = 1/N1 + 1/N0
if a_j = 0 (Sec. 3.2.2). Then SP = H r - H s, so

    eta := H r - SP = H s.                                                  (7)

The paper prints eta = SP - H r (Sec. 3.2.2 and Alg. 2, line "Compute eta"),
which is H s with the wrong sign: basis pursuit on it looks for -s and the
threshold s_j > c/2 then detects no one. parley uses eta = H r - SP; the unit
tests show the printed sign failing on a hand example.

All LP decoders work with z = s / c in {0, 1}^n and y = eta / c, so y = H z:
the same programs up to a positive scale, with variables of order one (HiGHS
tolerances are absolute).

Certification
-------------
``certified`` is True only when the binary reconstruction reproduces *every*
answer to within ``tol`` (max_i |(H v_hat)_i - SP_i| <= tol), its group sizes
match the known N0 (where N0 is given), every coordinate is decided, and, for
:func:`decode_linear`, rank(H) = n and every sign is proven by an error
interval (:func:`linear_radius`; the answers' error model is
:mod:`parley.parties.attacks.decoders.answer_error`), so the solution is unique.
For rounded answers, whose fits share error bars, :func:`prove_unique_binary`
proves with one LP that no other binary vector fits. For the other
decoders an exact fit is what they can vouch for: an LP vertex or an AMP fixed
point that is binary and fits does not by itself prove that no *other* binary
vector fits. For probes with continuous random entries (Alg. 2) a second binary
fit has probability zero, and :func:`decode_box_count` can prove uniqueness
outright (``prove_unique=True``: one more LP, see there). With far too few
queries no decoder finds a binary exact fit, and all say ``certified=False``.

Decoders never read the truth: they see only H, the answers, and the group
sizes the attacker learned from the answers themselves (Remark 4).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parley.protocols.errors import AttackError

__all__ = [
    "Decoded",
    "decode_linear",
    "linear_radius",
    "prove_unique_binary",
    "decode_l1",
    "decode_box_count",
    "decode_amp",
    "decode_robust",
    "decode_fastest",
    "default_tol",
]

BAD_H = "H must be a 2-D array of shape (m, n) with m >= 1 and n >= 2, got shape {shape}"
BAD_SP = "sp must be a 1-D array of m={m} answers (one per row of H), got shape {shape}"
NOT_FINITE = "{name} holds {count} non-finite values (NaN or inf); decoders need finite numbers"
BAD_N0 = "n0 must be an integer with 0 < n0 < n={n}, got {got!r}"
BAD_N1 = "n1 must equal n - n0 = {want} (n={n}, n0={n0}), got {got!r}"
N1_WITHOUT_N0 = "n1={n1} given without n0; pass both group sizes or neither"
BAD_TOL = "tol must be a positive finite number, got {got!r}"
BAD_ITERATIONS = "iterations must be a positive integer, got {got!r}"
BAD_DAMPING = "damping must lie in (0, 1], got {got!r}"
BAD_TIME_LIMIT = "time_limit must be a positive number of seconds or None, got {got!r}"
TOO_FEW_QUERIES = (
    "cannot decide: m={m} answers do not certify a reconstruction of n={n} protected attributes "
    "(amp residual {amp:.3g}, box-count LP residual {box:.3g}, tol {tol:.3g}); more queries are needed "
    "(or pass allow_uncertified=True for a best guess)"
)

# Relative tolerance on the answers: exact float64 answers SP = H v carry an
# absolute error of a few ulps of sum_j |H_ij v_j| <= 2, so 1e-9 leaves six
# orders of magnitude of slack while one wrong individual moves some answer by
# c * H_ij, typically >= 1e-3.
_REL_TOL = 1e-9
# A row of an orthonormal null-space basis this small is a numerical zero: the
# coordinate is pinned down by the equations (Theorem 1 restricted to it).
_NULL_ROW_TOL = 1e-8
# Uniqueness LP (decode_box_count): the farthest feasible point must lie this
# close (in l1, on z in [0, 1]^n) to the binary solution.
_UNIQUE_TOL = 1e-6
#: u = 2^-53, float64 unit roundoff.
_UNIT = float(np.finfo(np.float64).eps) / 2.0


@dataclass(frozen=True)
class Decoded:
    """A decoder's reconstruction of the protected attribute.

    Attributes
    ----------
    a_hat : ndarray of int8, shape (n,)
        Reconstructed attribute, 1 = advantaged, 0 = disadvantaged.
    decided : ndarray of bool, shape (n,)
        False where the decoder has no evidence about a_j (its column of H is
        all zeros, or a_j is a free variable of the linear system); a_hat holds
        a guess there.
    certified : bool
        True iff the binary reconstruction reproduces every answer within
        ``tol``, matches the known group sizes, decides every coordinate, and
        is unique as far as the decoder can vouch (see the module docstring).
    residual : float
        max_i |(H v_hat)_i - SP_i| for the binary reconstruction (inf when
        v_hat is undefined, e.g. a_hat puts everyone in one group).
    decoder : str
        Which decoder produced it.
    seconds : float
        Wall time of the solve (validation included).
    info : dict
        Solver details: status, iterations, LP objective, tolerance used.
    """

    a_hat: np.ndarray
    decided: np.ndarray
    certified: bool
    residual: float
    decoder: str
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)
    #: The LP's fractional point (share of "disadvantaged" per individual) before rounding, where there is one.
    z: np.ndarray | None = None


# --------------------------------------------------------------------------- validation and shared pieces


def _check_arrays(H: Any, sp: Any) -> tuple[np.ndarray, np.ndarray]:
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.shape[0] < 1 or H.shape[1] < 2:
        raise AttackError(BAD_H.format(shape=H.shape))
    sp = np.asarray(sp, dtype=np.float64)
    if sp.shape != (H.shape[0],):
        raise AttackError(BAD_SP.format(m=H.shape[0], shape=sp.shape))
    for name, arr in (("H", H), ("sp", sp)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        if bad:
            raise AttackError(NOT_FINITE.format(name=name, count=bad))
    return H, sp


def _check_sizes(n: int, n0: Any, n1: Any) -> tuple[int, int]:
    if isinstance(n0, bool) or not isinstance(n0, (int, np.integer)) or not 0 < n0 < n:
        raise AttackError(BAD_N0.format(n=n, got=n0))
    n0 = int(n0)
    if n1 is not None and (isinstance(n1, bool) or not isinstance(n1, (int, np.integer)) or n1 != n - n0):
        raise AttackError(BAD_N1.format(want=n - n0, n=n, n0=n0, got=n1))
    return n0, n - n0


def _validate(H: Any, sp: Any, n0: Any, n1: Any) -> tuple[np.ndarray, np.ndarray, int, int]:
    H, sp = _check_arrays(H, sp)
    n0, n1 = _check_sizes(H.shape[1], n0, n1)
    return H, sp, n0, n1


def default_tol(sp: np.ndarray) -> float:
    """Answer tolerance for exact float64 answers: ``1e-9 * max(1, max|sp|)``."""
    return _REL_TOL * max(1.0, float(np.max(np.abs(sp))) if np.size(sp) else 1.0)


def _tol(sp: np.ndarray, tol: Any) -> float:
    if tol is None:
        return default_tol(sp)
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating, np.integer)) \
            or not np.isfinite(tol) or tol <= 0:
        raise AttackError(BAD_TOL.format(got=tol))
    return float(tol)


def _residual(H: np.ndarray, sp: np.ndarray, a_hat: np.ndarray, n0: int, n1: int) -> float:
    """max_i |(H v_hat)_i - SP_i| with v_hat built from a_hat and the sizes (eq. 4)."""
    if n0 <= 0 or n1 <= 0:
        return float("inf")
    v_hat = np.where(a_hat == 1, 1.0 / n1, -1.0 / n0)
    return float(np.max(np.abs(H @ v_hat - sp)))


def _eta(H: np.ndarray, sp: np.ndarray, n0: int, n1: int) -> tuple[np.ndarray, float]:
    """y = eta / c with eta = H r - SP (eq. 7, sign corrected), and c = 1/N1 + 1/N0.

    v = r - s, r = (1/N1) 1  =>  SP = H r - H s  =>  H s = H r - SP. With
    s = c z, z_j = 1 - a_j in {0, 1}: H z = (H r - SP) / c.
    """
    c = 1.0 / n1 + 1.0 / n0
    eta = H.sum(axis=1) / n1 - sp
    return eta / c, c


def _evidence(H: np.ndarray) -> np.ndarray:
    """Columns with any non-zero entry: a_j enters the answers at all."""
    seen: np.ndarray = np.any(H != 0.0, axis=0)
    return seen


def _finish(name: str, H: np.ndarray, sp: np.ndarray, z: np.ndarray | None, decided: np.ndarray, n0: int,
            n1: int, tol: float, start: float, info: dict[str, Any], *, unique: bool = True) -> Decoded:
    """Round z (fraction of 'disadvantaged') at 1/2, score the binary fit, and certify."""
    if z is None:  # the solver returned no point (time limit, failure)
        a_hat = np.ones(H.shape[1], dtype=np.int8)
        decided = np.zeros(H.shape[1], dtype=bool)
    else:
        a_hat = np.where(z > 0.5, 0, 1).astype(np.int8)
    residual = _residual(H, sp, a_hat, n0, n1)
    count_ok = int(np.sum(a_hat == 0)) == n0
    info = {"tol": tol, "count_matches": count_ok, **info}
    certified = bool(z is not None and residual <= tol and count_ok and decided.all() and unique)
    return Decoded(a_hat=a_hat, decided=decided, certified=certified, residual=residual, decoder=name,
                   seconds=time.perf_counter() - start, info=info, z=z)


def _lp_info(res: Any) -> dict[str, Any]:
    return {"status": int(res.status), "message": str(res.message),
            "iterations": int(getattr(res, "nit", -1)),
            "objective": None if res.fun is None else float(res.fun)}


def _highs_options(time_limit: Any) -> dict[str, Any]:
    if time_limit is None:
        return {}
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0:
        raise AttackError(BAD_TIME_LIMIT.format(got=time_limit))
    return {"time_limit": float(time_limit)}


# --------------------------------------------------------------------------- Theorem 1


def linear_radius(H: np.ndarray, err: np.ndarray | float, X: np.ndarray | None = None,
                  residual: np.ndarray | None = None) -> np.ndarray:
    """Per-coordinate bound r_j on |v_j(computed) - v_j(true)| for a system SP = H v of full column rank.

    With X an approximate (left) inverse of H, rho = SP_true - H v_comp and
    theta = ||I - X H||_inf < 1 (computed, plus the float error of computing it):

        v_true - v_comp = L rho for the left inverse L = (X H)^-1 X,   ||L - X||_inf <= theta / (1 - theta) ||X||_inf,

    so |v_true - v_comp|_j <= (|X| |rho|)_j + theta / (1 - theta) ||X||_inf ||rho||_inf, and
    |rho_i| <= err_i + |residual_i| + (float error of the residual, gamma_(n+1) (|H| |v| + |SP|)_i).
    ``residual`` None: the bound before any answer (|residual| = 0, v = 0), used to foresee what a
    precision allows. Returns inf everywhere when theta >= 1/2 (X is no usable inverse).
    """
    n = H.shape[1]
    if X is None:
        X = np.linalg.inv(H) if H.shape[0] == n else np.linalg.pinv(H)
    absX = np.abs(X)
    u = _UNIT
    gamma = (n + 2) * u / (1 - (n + 2) * u)
    m = H.shape[0]
    theta = float(np.abs(np.eye(n) - X @ H).sum(axis=1).max()) + gamma * float((absX @ np.abs(H)).sum(axis=1).max())
    if not theta < 0.5:
        return np.full(n, np.inf)
    rho = np.broadcast_to(np.asarray(err, dtype=np.float64), (m,)).copy()
    if residual is not None:
        rho += np.abs(residual)
    r = absX @ rho + theta / (1.0 - theta) * float(absX.sum(axis=1).max()) * float(rho.max())
    bound: np.ndarray = r * (1.0 + 4.0 * n * u)
    return bound


def decode_linear(H: Any, sp: Any, n0: int | None = None, n1: int | None = None, tol: float | None = None, *,
                  answer_error: Any = None) -> Decoded:
    """Theorem 1 / Alg. 1: solve SP = H v and read a_j = [v_j > 0] where the error bounds exclude the other sign.

    Parameters
    ----------
    H : array of shape (m, n)
        Probe models' outputs on the audit set, one model per row.
    sp : array of shape (m,)
        Their statistical-parity answers.
    n0, n1 : int, optional
        Group sizes if known (Remark 4). If omitted they are read off a_hat.
    tol : float, optional
        Answer tolerance of the final fit check; default: the largest answer
        error plus :func:`default_tol` (the float error of the check itself).
    answer_error : float or array of shape (m,), optional
        Bound on |released - exact| per answer
        (:func:`parley.parties.attacks.decoders.answer_error.answer_error`);
        default :func:`default_tol` (exact float64 answers).

    Returns
    -------
    Decoded
        v_j of the true A is +1/N1 or -1/N0, never 0. With rank(H) = n, the
        computed v_j is within r_j of it (:func:`linear_radius`), so
        individual j is *decided* only when the interval v_j ± r_j excludes 0:
        then its sign is proven, and a_hat_j is right under the error model.
        Elsewhere a_hat_j is a guess and ``decided`` is False. ``certified``
        iff rank(H) = n, every individual is decided (so the reconstruction is
        the only one consistent with the answers), its groups reproduce every
        answer within ``tol`` and the count matches N0 where given. With
        rank(H) < n, coordinate j can be decided only if every null-space
        vector of H vanishes at j (v_j is then the same for all solutions); its
        interval uses the pseudo-inverse, and ``certified`` is False.

    Notes
    -----
    Alg. 1's flip-one probes (h_i = h0 with entry i flipped) have full rank
    n unless the binary base model accepts exactly one individual:
    H = 1 h0^T + diag(1 - 2 h0) is singular iff 1 - sum_j h0_j = 0.
    """
    start = time.perf_counter()
    H, sp = _check_arrays(H, sp)
    m, n = H.shape
    if n0 is None:
        if n1 is not None:
            raise AttackError(N1_WITHOUT_N0.format(n1=n1))
        sizes = None
    else:
        sizes = _check_sizes(n, n0, n1)
    err = np.broadcast_to(np.asarray(default_tol(sp) if answer_error is None else answer_error, dtype=np.float64),
                          (m,))
    if not np.all(np.isfinite(err)) or np.any(err < 0):
        raise AttackError(BAD_TOL.format(got=answer_error))
    tol = _tol(sp, tol) if tol is not None else float(err.max()) + default_tol(sp)

    radius = None
    if m == n:
        # Square: LU inverse, one step of refinement, and the bound of linear_radius, which is finite
        # exactly when X H is within 1/2 of I (then H is provably invertible: rank n).
        try:
            X = np.linalg.inv(H)
        except np.linalg.LinAlgError:
            X = None
        if X is not None and np.all(np.isfinite(X)):
            v = X @ sp
            v = v + X @ (sp - H @ v)
            residual = sp - H @ v
            res_err = (n + 2) * _UNIT * (np.abs(H) @ np.abs(v) + np.abs(sp))
            radius = linear_radius(H, err + res_err, X, residual=residual)
            condition = float(np.abs(H).sum(axis=0).max() * np.abs(X).sum(axis=0).max())  # in the 1-norm
            if not np.all(np.isfinite(radius)):
                radius = None
    if radius is not None:
        rank = n
        pinned = np.ones(n, dtype=bool)
    else:
        # Minimum-norm least-squares solution; when the system is consistent it
        # agrees with every solution on the coordinates the equations pin down.
        v, _, rank, sing = np.linalg.lstsq(H, sp, rcond=None)
        rank = int(rank)
        condition = float(sing[0] / sing[-1]) if rank == n and sing.size and sing[-1] > 0 else float("inf")
        residual = sp - H @ v
        # float error of that residual (Higham: gamma_(n+1) (|H| |v| + |sp|))
        res_err = (n + 2) * _UNIT * (np.abs(H) @ np.abs(v) + np.abs(sp))
        if rank == n:  # m > n: the pseudo-inverse is a left inverse
            radius = linear_radius(H, err + res_err, np.linalg.pinv(H), residual=residual)
            pinned = np.ones(n, dtype=bool)
        else:
            # Null space of H = span of the right singular vectors beyond the rank;
            # v_j is determined iff e_j is orthogonal to it, i.e. its row j is zero.
            _, _, vt = np.linalg.svd(H, full_matrices=True)
            null_basis = vt[rank:]
            pinned = np.linalg.norm(null_basis, axis=0) <= _NULL_ROW_TOL
            # For a pinned j, v_comp_j - v_true_j = (pinv(H) (sp - sp_true))_j; doubled for the
            # pseudo-inverse's own error (no certificate is given without full rank).
            radius = 2.0 * (np.abs(np.linalg.pinv(H)) @ (err + res_err))
    decided = pinned & _evidence(H) & (np.abs(v) > radius)
    a_hat = (v > 0).astype(np.int8)
    n0_hat, n1_hat = sizes if sizes is not None else (int(np.sum(a_hat == 0)), int(np.sum(a_hat == 1)))
    residual_fit = _residual(H, sp, a_hat, n0_hat, n1_hat)
    count_ok = int(np.sum(a_hat == 0)) == n0_hat
    certified = bool(rank == n and residual_fit <= tol and count_ok and decided.all())
    info = {"rank": rank, "tol": tol, "count_matches": count_ok, "undetermined": int(n - decided.sum()),
            "max_radius": float(np.max(radius)) if radius.size else 0.0,
            "condition": condition}
    if sizes is None:
        info.update(N0=n0_hat, N1=n1_hat)
    return Decoded(a_hat=a_hat, decided=decided, certified=certified, residual=residual_fit, decoder="linear",
                   seconds=time.perf_counter() - start, info=info)


# --------------------------------------------------------------------------- Theorem 2 / Alg. 2


def _lp_setup(H: Any, sp: Any, n0: int, n1: int, tol: float | None, time_limit: float | None
              ) -> tuple[np.ndarray, np.ndarray, int, int, float, dict[str, Any], np.ndarray, float]:
    """What every LP decoder starts from: checked inputs, tolerance, HiGHS options, y = eta / c and c."""
    H, sp, n0, n1 = _validate(H, sp, n0, n1)
    y, c = _eta(H, sp, n0, n1)
    return H, sp, n0, n1, _tol(sp, tol), _highs_options(time_limit), y, c


def decode_l1(H: Any, sp: Any, n0: int, n1: int, tol: float | None = None, *, time_limit: float | None = None
              ) -> Decoded:
    """Alg. 2 (Theorem 2): basis pursuit min ||s||_1 s.t. H s = eta, detect a_j = 0 iff s_j > c/2.

    The paper's decoder as printed, with the sign of eta corrected
    (eta = H r - SP, see the module docstring). s is free; the LP splits it as
    s = u - w with u, w >= 0 and minimises sum(u + w) (HiGHS via
    :func:`scipy.optimize.linprog`). It is solved in the scaled variable
    z = s / c, so the threshold s_j > c/2 reads z_j > 1/2.

    Parameters
    ----------
    H, sp : arrays of shape (m, n) and (m,)
        Probes and their SP answers.
    n0, n1 : int
        Group sizes (Remark 4); n1 must equal n - n0. They fix r and c.
    tol : float, optional
        Answer tolerance; default :func:`default_tol`.
    time_limit : float, optional
        Seconds HiGHS may spend; when it runs out, ``info["status"]`` is 1
        and the result is uncertified.

    Returns
    -------
    Decoded
        ``certified`` iff the rounded binary vector reproduces every answer
        within ``tol`` with exactly n0 disadvantaged. An LP solution that
        rounds to an exact fit is not a proof that no other binary vector fits
        (see the module docstring).
    """
    from scipy.optimize import linprog  # scipy is imported where it is used: design.md, "Start-up"

    start = time.perf_counter()
    H, sp, n0, n1, tol, options, y, c = _lp_setup(H, sp, n0, n1, tol, time_limit)
    m, n = H.shape
    # z = u - w, u, w >= 0:  min 1^T u + 1^T w  s.t.  H u - H w = y.  At an
    # optimum u_j w_j = 0, so sum(u + w) = ||z||_1.
    res = linprog(np.ones(2 * n), A_eq=np.hstack([H, -H]), b_eq=y, bounds=(0, None), method="highs",
                  options=options)
    z = None if res.x is None else res.x[:n] - res.x[n:]
    info = _lp_info(res)
    return _finish("l1", H, sp, z, _evidence(H), n0, n1, tol, start, info)


def decode_box_count(H: Any, sp: Any, n0: int, n1: int, tol: float | None = None, *, prove_unique: bool = False,
                     time_limit: float | None = None) -> Decoded:
    """Feasibility LP with everything the attacker knows: s = c z, 0 <= z <= 1, sum z = N0, H s = eta.

    s_j takes only the values 0 and c (Sec. 3.2.2) and exactly N0 of them are
    c; the LP relaxes z_j in {0, 1} to the box [0, 1]. A basic (vertex)
    solution from HiGHS is rounded at 1/2.

    Parameters
    ----------
    H, sp : arrays of shape (m, n) and (m,)
        Probes and their SP answers.
    n0, n1 : int
        Group sizes (Remark 4); n1 must equal n - n0.
    tol : float, optional
        Answer tolerance; default :func:`default_tol`.
    prove_unique : bool
        Also prove the rounded z_hat is the *only* point of the feasible
        polytope, hence the only binary solution: maximise the distance
        sum_{z_hat_j = 0} z_j + sum_{z_hat_j = 1} (1 - z_j) = ||z - z_hat||_1,
        which is linear on the box, over the polytope. Its maximum is 0 iff
        the polytope is {z_hat} (up to the LP's tolerance, here 1e-6). When
        requested, ``certified`` also requires this proof
        (``info["unique"]``).
    time_limit : float, optional
        Seconds HiGHS may spend per LP.

    Returns
    -------
    Decoded
        ``certified`` iff the rounded binary vector reproduces every answer
        within ``tol`` (it then has exactly N0 disadvantaged by construction
        of the check), and, with ``prove_unique``, the polytope is a single
        point. Without the proof an integral vertex that fits is accepted:
        it does not rule out a second binary fit elsewhere in the polytope.
    """
    from scipy.optimize import linprog

    start = time.perf_counter()
    H, sp, n0, n1, tol, options, y, c = _lp_setup(H, sp, n0, n1, tol, time_limit)
    m, n = H.shape
    A_eq = np.vstack([H, np.ones((1, n))])
    b_eq = np.append(y, float(n0))
    # A feasibility problem. Its objective is sum_j z_j, which the count row fixes to N0 on the whole
    # feasible set, so any feasible vertex is optimal, exactly as with a zero objective; but HiGHS's
    # dual simplex starts far closer from it (n = 1,000, m = 400: 524 iterations instead of 2,889,
    # tests/benchmarks/bench_decode.py).
    res = linprog(np.ones(n), A_eq=A_eq, b_eq=b_eq, bounds=(0.0, 1.0), method="highs", options=options)
    info = _lp_info(res)
    z = res.x
    unique = True
    if prove_unique and z is not None:
        z_hat = (z > 0.5).astype(np.float64)
        # ||z - z_hat||_1 = sum_j z_j (1 - 2 z_hat_j) + sum_j z_hat_j on the box; maximise it.
        far = linprog(-(1.0 - 2.0 * z_hat), A_eq=A_eq, b_eq=b_eq, bounds=(0.0, 1.0), method="highs",
                      options=options)
        spread = None if far.fun is None or far.status != 0 else float(-far.fun + z_hat.sum())
        unique = spread is not None and spread <= _UNIQUE_TOL
        info.update(unique=unique, farthest_l1=spread)
    return _finish("box-count", H, sp, z, _evidence(H), n0, n1, tol, start, info, unique=unique)


def prove_unique_binary(H: Any, sp: Any, n0: int, n1: int, a_hat: np.ndarray, answer_error: Any, *,
                        time_limit: float | None = None) -> tuple[bool, float | None]:
    """Prove that ``a_hat`` is the only binary A with N0 zeros whose answers lie within ``answer_error`` of ``sp``.

    Every such A gives z = 1 - a in {0, 1}^n with sum z = N0 and
    |c H z - eta|_i <= answer_error_i (eq. 7), so it lies in the polytope
    P = {z in [0, 1]^n : sum z = N0, |H z - y| <= answer_error / c}. Another
    binary point of P differs from z_hat in at least two coordinates (the
    count is fixed), so ||z - z_hat||_1 >= 2. One LP maximises the linear
    function ||z - z_hat||_1 over P (on the box it equals
    sum_j z_j (1 - 2 z_hat_j) + sum_j z_hat_j); if the maximum is below 1,
    half of the distance any other binary solution would need, z_hat is the
    only one. The margin of 1 absorbs HiGHS's tolerances (1e-7).

    Returns
    -------
    (unique, farthest)
        ``farthest`` is the LP maximum (None if the LP failed; then not unique).
    """
    from scipy.optimize import linprog

    H, sp, n0, n1 = _validate(H, sp, n0, n1)
    m, n = H.shape
    y, c = _eta(H, sp, n0, n1)
    err = np.broadcast_to(np.asarray(answer_error, dtype=np.float64), (m,))
    # slack for the float error of forming y (a sum over n terms) and of the constraint rows
    half = err / c + (n + 2) * _UNIT * (np.abs(H).sum(axis=1) / n1 + np.abs(sp)) / c
    z_hat = (np.asarray(a_hat) == 0).astype(np.float64)
    A_ub = np.vstack([H, -H])
    b_ub = np.concatenate([y + half, -(y - half)])
    res = linprog(-(1.0 - 2.0 * z_hat), A_ub=A_ub, b_ub=b_ub, A_eq=np.ones((1, n)), b_eq=[float(n0)],
                  bounds=(0.0, 1.0), method="highs", options=_highs_options(time_limit))
    if res.status != 0 or res.fun is None:
        return False, None
    farthest = float(-res.fun + z_hat.sum())
    return farthest < 1.0, farthest


# --------------------------------------------------------------------------- AMP


def decode_amp(H: Any, sp: Any, n0: int, n1: int, iterations: int = 300, tol: float | None = None, *,
               damping: float = 1.0, check_every: int = 5) -> Decoded:
    """Approximate message passing for y = H z with z_j in {0, 1}, P(z_j = 1) = N0/n.

    The Bayes-optimal AMP of Donoho, Maleki and Montanari (2009; Krzakala et
    al. 2012 for the Bayesian denoiser) applied to the compressed-sensing form
    (7) of Theorem 2, with the exact two-point prior s_j in {0, c}: it needs
    only products with H and H^T, so it is far faster than the LPs.

    Preprocessing. Alg. 2's probes are H = 1 h0^T + E: the base model's scores
    plus bounded i.i.d. perturbations (clipped to [0, 1]). The rank-one part
    breaks AMP's assumption of zero-mean entries, so it is removed exactly:
    with mu = column means of H, averaging the rows of y = H z gives
    mean(y) = mu^T z, hence

        y - mean(y) 1 = (H - 1 mu^T) z.

    Each centred column j is then scaled to entries of variance 1/m,
    A_ij = (H_ij - mu_j) / (sigma_j sqrt(m)) (A is applied, never formed), so y_c = A x with
    x_j = a_j z_j and amplitude a_j = sigma_j sqrt(m) (clipping makes sigma_j
    depend on j; the prior of x_j is two-point {0, a_j}). Columns with
    sigma_j = 0 carry no information in the centred system: they are left
    undecided.

    Iteration (t = 0, 1, ...), with rho = N0 / n and delta = m / n:

        tau^2   = ||r||^2 / m                      effective noise of the pseudo-data
        u       = x + A^T r                        pseudo-data, ~ x + tau g
        p_j     = P(z_j = 1 | u_j) = sigmoid(logit(rho) + (a_j u_j - a_j^2 / 2) / tau^2)
        x_new   = a p                              posterior mean (Bayes-optimal denoiser)
        r_new   = y_c - A x_new + r * sum_j d x_new_j / d u_j / m     Onsager correction
                  with d x_new_j / d u_j = a_j^2 p_j (1 - p_j) / tau^2

    ``damping`` < 1 mixes each new estimate with the previous one.

    Rounding and certification. Every ``check_every`` iterations the N0
    largest posteriors are set to 0 (disadvantaged; the count is known), and
    the binary reconstruction is checked on the ORIGINAL system: if it
    reproduces every answer within ``tol``, AMP stops and the result is
    certified. An exact fit is what AMP can vouch for; it does not prove no
    other binary vector fits (see the module docstring).

    Parameters
    ----------
    H, sp : arrays of shape (m, n) and (m,)
        Probes and their SP answers.
    n0, n1 : int
        Group sizes (Remark 4); n1 must equal n - n0.
    iterations : int
        Maximum number of AMP iterations.
    tol : float, optional
        Answer tolerance; default :func:`default_tol`.
    damping : float in (0, 1]
        Weight of the new estimate (1 = undamped).
    check_every : int
        Iterations between residual checks on the original system.

    Returns
    -------
    Decoded
        ``info`` holds the iterations run, whether the fit was found and the
        final tau^2.
    """
    from scipy.special import expit, logit

    start = time.perf_counter()
    H, sp, n0, n1 = _validate(H, sp, n0, n1)
    tol = _tol(sp, tol)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise AttackError(BAD_ITERATIONS.format(got=iterations))
    if isinstance(check_every, bool) or not isinstance(check_every, (int, np.integer)) or check_every < 1:
        raise AttackError(BAD_ITERATIONS.format(got=check_every))
    if not 0.0 < damping <= 1.0:
        raise AttackError(BAD_DAMPING.format(got=damping))
    m, n = H.shape
    y, _ = _eta(H, sp, n0, n1)

    # Remove the rank-one mean: y - mean(y) = (H - 1 mu^T) z exactly.
    mu = H.mean(axis=0)
    y_c = y - y.mean()
    # column variances of the centred matrix, E[H^2] - mu^2, without an (m, n) temporary
    sigma = np.sqrt(np.maximum(np.einsum("ij,ij->j", H, H) / m - mu ** 2, 0.0))
    live = sigma > 1e-9 * max(1.0, float(np.max(np.abs(mu))))
    scale = np.where(live, 1.0 / (np.where(live, sigma, 1.0) * np.sqrt(m)), 0.0)
    amp = np.where(live, sigma * np.sqrt(m), 0.0)   # a_j: x_j = a_j z_j, prior on x_j two-point {0, a_j}

    # A = (H - 1 mu^T) diag(scale) (entries of variance ~1/m) is never formed:
    # A x = H (scale x) - (mu . scale x) 1  and  A^T r = scale (H^T r - mu sum(r)).
    def A_dot(x: np.ndarray) -> np.ndarray:
        w = scale * x
        A_x: np.ndarray = H @ w - float(mu @ w)
        return A_x

    def At_dot(r: np.ndarray) -> np.ndarray:
        At_r: np.ndarray = scale * (H.T @ r - mu * float(r.sum()))
        return At_r

    rho = n0 / n
    prior_logit = float(logit(rho))

    def rounded(p: np.ndarray) -> np.ndarray:
        # the N0 most likely disadvantaged individuals (count known, Remark 4)
        z = np.zeros(n)
        z[np.argpartition(-p, n0 - 1)[:n0]] = 1.0
        return z

    p = np.full(n, rho)
    x = amp * p                               # start at the prior mean
    r = y_c - A_dot(x)
    fit = False
    tau2 = float(r @ r) / m
    it = 0
    z = rounded(p)
    for it in range(1, iterations + 1):
        tau2 = max(float(r @ r) / m, 1e-300)
        u = x + At_dot(r)
        p_new = expit(prior_logit + (amp * u - 0.5 * amp ** 2) / tau2)
        p_new[~live] = rho
        x_new = amp * p_new
        # Onsager term: mean derivative of the denoiser, scaled by n/m (here: summed over n, / m)
        onsager = float(np.sum(amp ** 2 * p_new * (1.0 - p_new))) / tau2 / m
        if damping < 1.0:
            x_new = damping * x_new + (1.0 - damping) * x
            p_new = damping * p_new + (1.0 - damping) * p
        r = y_c - A_dot(x_new) + onsager * r
        x, p = x_new, p_new
        if it % check_every == 0 or it == iterations:
            z = rounded(p)
            if _residual(H, sp, np.where(z > 0.5, 0, 1).astype(np.int8), n0, n1) <= tol:
                fit = True
                break
    info = {"iterations": it, "fit_found": fit, "tau2": tau2,
            "dead_columns": int((~live).sum())}
    return _finish("amp", H, sp, z, live & _evidence(H), n0, n1, tol, start, info)


# --------------------------------------------------------------------------- noisy answers


def decode_robust(H: Any, sp: Any, n0: int, n1: int, tol: float | None = None, *,
                  time_limit: float | None = None) -> Decoded:
    """LP decoding from noisy answers: min ||H (r - c z) - SP||_1 over 0 <= z <= 1, sum z = N0.

    Dinur-Nissim style least-absolute-deviation decoding applied to the
    compressed-sensing form (7) of Theorem 2: H (r - c z) - SP = eta - c H z,
    so with y = eta / c the LP is

        min  sum_i t_i   s.t.  -t <= y - H z <= t,  0 <= z <= 1,  sum z = N0,

    (objective scaled by 1/c), solved by HiGHS; z is rounded at 1/2. The l1
    loss tolerates a few large errors and spreads small ones, unlike least
    squares.

    Parameters
    ----------
    H, sp : arrays of shape (m, n) and (m,)
        Probes and their (possibly noisy) SP answers.
    n0, n1 : int
        Group sizes; n1 must equal n - n0.
    tol : float, optional
        Answer tolerance; default :func:`default_tol`.
    time_limit : float, optional
        Seconds HiGHS may spend.

    Returns
    -------
    Decoded
        ``certified`` only if the rounded vector fits the answers within
        ``tol``; under noise it will not, and then a_hat is the best guess
        (``decided`` stays True wherever a column carries evidence).
        ``info["l1_misfit"]`` is the optimal ||H v - SP||_1 in SP units.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    start = time.perf_counter()
    H, sp, n0, n1, tol, options, y, c = _lp_setup(H, sp, n0, n1, tol, time_limit)
    m, n = H.shape
    # variables [z (n), t (m)]:  H z - t <= y  and  -H z - t <= -y
    Hs, eye = sparse.csr_matrix(H), sparse.identity(m, format="csr")
    A_ub = sparse.bmat([[Hs, -eye], [-Hs, -eye]], format="csc")
    b_ub = np.concatenate([y, -y])
    A_eq = sparse.csr_matrix(np.concatenate([np.ones(n), np.zeros(m)])[None, :])
    cost = np.concatenate([np.zeros(n), np.ones(m)])
    bounds = [(0.0, 1.0)] * n + [(0.0, None)] * m
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[float(n0)], bounds=bounds, method="highs",
                  options=options)
    info = _lp_info(res)
    info["l1_misfit"] = None if res.fun is None else float(res.fun) * c
    z = None if res.x is None else res.x[:n]
    return _finish("robust", H, sp, z, _evidence(H), n0, n1, tol, start, info)


# --------------------------------------------------------------------------- dispatcher


def decode_fastest(H: Any, sp: Any, n0: int, n1: int, tol: float | None = None, *,
                   allow_uncertified: bool = False, time_limit: float | None = None) -> Decoded:
    """The fastest decoder that certifies: AMP, else the box/count LP, else say more queries are needed.

    Parameters
    ----------
    H, sp : arrays of shape (m, n) and (m,)
        Probes and their SP answers.
    n0, n1 : int
        Group sizes; n1 must equal n - n0.
    tol : float, optional
        Answer tolerance; default :func:`default_tol`.
    allow_uncertified : bool
        Return the best uncertified reconstruction (smaller residual)
        instead of raising.
    time_limit : float, optional
        Seconds the box/count LP may spend. AMP costs a few dozen products
        with H; the LP fallback grows much faster with n (minutes at
        n = 10,000, m = 4,000), so cap it where that matters.

    Returns
    -------
    Decoded
        The first certified result; ``info["tried"]`` lists the decoders run
        (``seconds`` is that decoder's own time).

    Raises
    ------
    AttackError
        With :data:`TOO_FEW_QUERIES` when neither decoder certifies and
        ``allow_uncertified`` is False.
    """
    H, sp, n0, n1 = _validate(H, sp, n0, n1)
    tol = _tol(sp, tol)
    tried = []
    first = decode_amp(H, sp, n0, n1, tol=tol)
    tried.append(first.decoder)
    if first.certified:
        first.info["tried"] = tried
        return first
    second = decode_box_count(H, sp, n0, n1, tol=tol, time_limit=time_limit)
    tried.append(second.decoder)
    if second.certified:
        second.info["tried"] = tried
        return second
    if not allow_uncertified:
        raise AttackError(TOO_FEW_QUERIES.format(m=H.shape[0], n=H.shape[1], amp=first.residual,
                                                 box=second.residual, tol=tol))
    best = min((first, second), key=lambda d: d.residual)
    best.info["tried"] = tried
    return best
