"""Reconstruction correction: the smallest confidence-weighted change to a guess of A that makes a model fair.

Ferry, Aïvodji, Gambs, Huguet, Siala, "Exploiting Fairness to Enhance Sensitive
Attributes Reconstruction" (SaTML 2023). An adversary guesses the training set's
protected attribute ``a0`` with confidences ``w``; the target model's predictions
``yhat`` on that set and a published fairness constraint (metric, tolerance
``eps``) are known. The corrector returns the reconstruction closest to ``a0``
(sum of ``w_i`` over changed entries, objective (1)/(6)) under which ``yhat``
satisfies the constraint.

Fairness constraint (Table I, constraints (4)-(5)/(9)-(10)): on a slice ``S`` of
the training set (all rows for SP, ``y = 0`` for PE, ``y = 1`` for EO, both for
EOdds, Sec. III-D), every group's positive-prediction rate is within ``eps`` of
the slice's overall rate ``r = P / N``::

    |P_g / N_g - r| <= eps   <=>   (r - eps) N_g <= P_g <= (r + eps) N_g,   N_g >= 1,

with ``P_g`` (``N_g``) the positively predicted (all) rows the corrected guess
puts in group ``g``. ``r`` is fixed (it does not depend on A), so both sides are
linear in the counts: this is fairlearn's ``DemographicParity(difference_bound)``
(and TPR/FPR parity on the slices), the form the paper uses.

Two models solve it, each with HiGHS (through :func:`scipy.optimize.milp`) or with
OR-Tools CP-SAT (``backend = "cp-sat"``, the open counterpart of the IBM CP Optimizer
the paper used). CP-SAT takes integer data only: the fairness rows get an exact
rational tolerance (:func:`rational_tolerance`, which proves that the rows are neither
loosened nor tightened) and the confidences become integers with a stated bound on
the optimum's error (:func:`integer_weights`, 0 when the scaling is exact):

* :func:`solve_general` -- the general integer model of Sec. III-B (one variable
  per example, ``K`` binaries with a one-hot row each for ``K`` groups, App. A-A).
* :func:`solve_efficient` -- the efficient model of Sec. III-C: only the *number*
  of moves of each kind matters, because the fairness counts change by the same
  amount whichever examples of a cell (prediction, slice, guessed group) move, and
  the cheapest to move are those of lowest confidence. Binary A gives the paper's
  four variables per slice (0->1 and 1->0 among ``yhat = 1`` and ``yhat = 0``);
  ``K`` groups give ``2 K (K - 1)`` per slice (App. A-B). The objective
  ``sum_cells C_cell[moved out of cell]`` uses the sorted cumulative confidences;
  the paper states it with element constraints for a CP solver. Sorted ascending,
  each ``C_cell`` is convex and piecewise linear, so the incremental encoding
  ``moved = sum_j z_j``, ``0 <= z_j <= 1``, cost ``sum_j c_(j) z_j`` is exact for
  a linear solver: an optimum fills the cheapest ``z_j`` first. Only the move
  counts are integers, so HiGHS branches on a handful of variables.

* :func:`solve_enumeration` -- the same efficient model for binary A, solved
  exactly without a MILP by enumerating the net moves (O(n log n)); the default of
  :func:`correct` for binary A, because HiGHS's branch and bound on the efficient MILP
  is slow at tight tolerances and was measured to report infeasible where a solution
  exists (tolerance 0, 15,000 rows). For ``K > 2`` groups the default is CP-SAT on
  the efficient model (HiGHS stops at its time limit on worse solutions at tolerance 0).
* :func:`solve_released_sp` -- the combination with the query-leakage attacks:
  a guess corrected to a released signed SP value of a model with known group
  sizes.

Theorem 1 (both models share the optimal objective and solutions) is checked
by the tests on small instances, as is the enumeration against HiGHS.

The cost of moving an example does not depend on its destination group (it is
the confidence in the guess being abandoned), as in objective (1); with ``K > 2``
groups App. A's element constraints reduce to the same per-cell cumulative sums.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from parley.protocols.errors import AttackError
from parley.protocols.group_gaps import GAP_METRICS, metric_slices, slice_gap, unfairness

if TYPE_CHECKING:
    from scipy.optimize import LinearConstraint

#: One affine count over the variables: (columns, coefficients, constant).
_Affine = tuple[np.ndarray, np.ndarray, float]
#: ``count_of(g)``: the affine counts (N_g, P_g) of group g within one slice.
_CountOf = Callable[[int], tuple[_Affine, _Affine]]
#: Every slice's (count_of, slice size, positives among the model's decisions).
_SliceRows = list[tuple[_CountOf, int, int]]

__all__ = [
    "BACKENDS", "CORRECTION_METRICS", "CP_SAT_PARAMETERS", "FEASIBLE", "SOLVERS", "TIME_LIMIT", "Correction",
    "FairnessConstraint",
    "INFEASIBLE", "OPTIMAL", "correct", "integer_weights", "metric_slices", "rational_tolerance", "slice_gap",
    "solve_efficient", "solve_enumeration", "solve_general", "solve_released_sp", "unfairness",
]

#: Metrics the corrector can use, and the label values of their slices (Sec. III-D).
CORRECTION_METRICS = GAP_METRICS
#: How a solve ended. "feasible": a limit stopped the solver with a solution not proven optimal;
#: "time-limit": it stopped with no solution (the guess is returned unchanged).
OPTIMAL, FEASIBLE, INFEASIBLE, TIME_LIMIT = "optimal", "feasible", "infeasible", "time-limit"

Solver = Literal["auto", "enumeration", "highs", "cp-sat"]
SOLVERS: tuple[Solver, ...] = get_args(Solver)
#: Solvers of the general and the efficient model.
Backend = Literal["highs", "cp-sat"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)
BAD_SOLVER = "correction solver must be one of {known}; got {solver!r}"
BAD_BACKEND = "model backend must be one of {known}; got {backend!r}"
BAD_BITS = "weight_bits must be an integer in 1..{top}; got {bits!r}"
CP_SAT_INVALID = "CP-SAT rejected the correction model: {detail}"
ENUMERATION_BINARY = ("the enumeration solver handles binary A only; got {groups} groups "
                      "(use solver 'cp-sat' or 'highs')")
BAD_RELEASE = "released value and slack must be finite, slack >= 0; got value={value!r}, slack={slack!r}"
BAD_N1 = "n1 must lie in 1..n-1 (both groups non-empty); got n1={n1} for n={n}"
BAD_METRIC = "correction metric must be one of {known}; got {metric!r}"
NEEDS_LABELS = "metric {metric!r} works on label slices: pass y"
BAD_SHAPES = "a0, confidence, yhat (and y) must be 1-d arrays of one length; got shapes {shapes}"
BAD_TOLERANCE = "tolerance must be a finite number >= 0; got {tolerance!r}"
BAD_GROUPS = "a0 must hold group ids 0..{top}; got values {values}"
BAD_CONFIDENCE = "confidence must be finite and >= 0"
BAD_HINT = "hint must be a 1-d array of {n} group ids in 0..{top}; got shape {shape}"
TOO_LARGE = "the general model takes at most {limit} examples (it has one variable per example and group); got {n}"

#: Added to every tolerance: a certified value computed in floating point must not exclude the truth.
SLACK = 1e-9
#: The general model's size cap: it exists for tests and benchmarks, not for whole data sets.
GENERAL_LIMIT = 2_000_000
#: CP-SAT's objective: the largest weight becomes 2**WEIGHT_BITS (see :func:`integer_weights`).
WEIGHT_BITS = 40
#: Sum of the integer weights stays below 2**62 (CP-SAT's int64 objective, with room for its bounds).
_OBJECTIVE_BITS = 62


@dataclass(frozen=True)
class FairnessConstraint:
    """What the adversary knows about the target's fairness: ``metric`` with every group within ``tolerance``."""

    metric: str
    tolerance: float

    def __post_init__(self) -> None:
        if self.metric not in CORRECTION_METRICS:
            raise AttackError(BAD_METRIC.format(known=", ".join(CORRECTION_METRICS), metric=self.metric))
        if not (np.isfinite(self.tolerance) and self.tolerance >= 0):
            raise AttackError(BAD_TOLERANCE.format(tolerance=self.tolerance))


@dataclass
class Correction:
    """A corrected reconstruction, its cost (objective (1)/(6)) and how the solver ended."""

    a: np.ndarray
    objective: float
    status: str
    changed: int
    solve_s: float
    moves: dict[str, int] = field(default_factory=dict)
    #: ``objective`` exceeds the real optimum by at most this much (0 for exact solvers and exact
    #: integer weights; CP-SAT with rounded weights: :func:`integer_weights`); only meaningful when optimal.
    bound: float = 0.0


def _slices(constraint: FairnessConstraint, y: np.ndarray | None, n: int) -> list[np.ndarray]:
    if GAP_METRICS[constraint.metric] != (None,) and y is None:
        raise AttackError(NEEDS_LABELS.format(metric=constraint.metric))
    return metric_slices(constraint.metric, y, n)


def _check(a0: np.ndarray, confidence: np.ndarray, yhat: np.ndarray, y: np.ndarray | None,
           groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = [np.asarray(a0), np.asarray(confidence, dtype=np.float64), np.asarray(yhat)]
    if y is not None:
        arrays.append(np.asarray(y))
    if any(x.ndim != 1 for x in arrays) or len({x.shape[0] for x in arrays}) != 1:
        raise AttackError(BAD_SHAPES.format(shapes=[x.shape for x in arrays]))
    a0 = arrays[0].astype(np.int64)
    if a0.size and (a0.min() < 0 or a0.max() >= groups):
        raise AttackError(BAD_GROUPS.format(top=groups - 1, values=sorted(set(np.unique(a0).tolist()))[:10]))
    if not np.all(np.isfinite(arrays[1])) or np.any(arrays[1] < 0):
        raise AttackError(BAD_CONFIDENCE)
    return a0, arrays[1], (arrays[2] >= 0.5).astype(np.int64)


def _fairness_constraint(slice_rows: _SliceRows, size: int, groups: int, eps: float) -> LinearConstraint | None:
    """Every slice's :func:`_fairness_rows` as one HiGHS constraint (None when there are no rows)."""
    from scipy.optimize import LinearConstraint  # scipy is imported where it is used: design.md, "Start-up"

    rows, lower, upper = [], [], []
    for count_of, n_slice, positives in slice_rows:
        r, lo, hi = _fairness_rows(count_of, size, n_slice, positives, groups, eps)
        rows += r
        lower += lo
        upper += hi
    return LinearConstraint(np.vstack(rows), lower, upper) if rows else None


def _fairness_rows(count_of: _CountOf, size: int, n_slice: int, positives: int, groups: int,
                   eps: float) -> tuple[list[np.ndarray], list[float], list[float]]:
    """Constraint rows ``(r - eps) N_g <= P_g <= (r + eps) N_g`` and ``N_g >= 1`` for one slice.

    ``count_of(g)`` returns sparse (columns, coefficients) of ``N_g`` and of
    ``P_g`` as affine functions of the variables plus their constants.
    """
    rate = positives / n_slice
    eps = eps + SLACK
    rows, lower, upper = [], [], []
    for g in range(groups):
        (n_cols, n_coef, n_const), (p_cols, p_coef, p_const) = count_of(g)
        # P_g - (r + eps) N_g <= 0 and P_g - (r - eps) N_g >= 0, constants moved to the bounds. (Rows scaled
        # by N to integer coefficients were measured worse: HiGHS then stops early on wrong optima.)
        for slope, lo, hi in ((rate + eps, -np.inf, 0.0), (rate - eps, 0.0, np.inf)):
            row = np.zeros(size)
            np.add.at(row, p_cols, p_coef)
            np.add.at(row, n_cols, -slope * n_coef)
            const = p_const - slope * n_const
            rows.append(row)
            lower.append(lo - const)
            upper.append(hi - const)
        row = np.zeros(size)
        np.add.at(row, n_cols, n_coef)
        rows.append(row)
        lower.append(1.0 - n_const)
        upper.append(np.inf)
    return rows, lower, upper


def _simplest_in(lo: Fraction, hi: Fraction | None) -> Fraction:
    """The rational with the smallest denominator in ``[lo, hi)`` (``hi = None``: no upper end), ``0 <= lo < hi``.

    Continued fractions: if an integer lies in the interval the smallest is the answer; otherwise
    ``x = floor(lo) + 1 / y`` and ``y`` is the simplest point of ``(1 / (hi - floor(lo)), 1 / (lo - floor(lo))]``.
    """
    whole = math.floor(lo)
    if lo == whole:
        return lo
    if hi is None or whole + 1 < hi:
        return Fraction(whole + 1)
    return whole + 1 / _simplest_open_closed(1 / (hi - whole), 1 / (lo - whole))


def _simplest_open_closed(lo: Fraction, hi: Fraction) -> Fraction:
    """The rational with the smallest denominator in ``(lo, hi]``, ``1 <= lo < hi``."""
    whole = math.floor(lo)
    if whole + 1 <= hi:
        return Fraction(whole + 1)
    # y = whole + 1 / z with lo < y <= hi: 1 / (hi - whole) <= z < 1 / (lo - whole) (no upper end if lo = whole).
    return whole + 1 / _simplest_in(1 / (hi - whole), None if lo == whole else 1 / (lo - whole))


def rational_tolerance(n_slice: int, positives: int, tolerance: float, slack: float = SLACK) -> Fraction:
    """An exact rational stand-in ``q = a / b`` for ``tolerance + slack`` on a slice (``positives`` of ``n_slice``).

    CP-SAT takes integer rows only. For a group with ``m = N_g`` rows (``1 <= m <= N - 1``) and
    ``p = P_g`` positives (``0 <= p <= m``) the constraint is ``|N p - P m| <= e N m`` with
    ``e = tolerance + slack`` taken exactly (a float is a dyadic rational), i.e. ``v(m, p) <= e`` for
    ``v(m, p) = |N p - P m| / (N m)``. ``v`` takes finitely many values ``V``. Let ``below`` be the
    largest of them ``<= e`` (0 if none) and ``above`` the smallest ``> e``. **Claim:** every ``q`` in
    ``[below, above)`` admits exactly the counts ``e`` admits. *Proof:* ``v <= e`` implies
    ``v <= below <= q``; ``v > e`` implies ``v >= above > q``. So ``v <= q`` iff ``v <= e`` on all of
    ``V``: the rows are neither loosened nor tightened, beyond the ``slack`` the floating-point
    models add as well. The function returns the point of that interval with the smallest
    denominator (continued fractions), so the integer rows
    ``b N P_g - (b P + a N) N_g <= 0 <= b N P_g - (b P - a N) N_g`` have small coefficients; tolerance
    0 gives ``q = 0`` whenever ``1 / N**2 > slack``, i.e. ``N P_g = P N_g``. ``V`` is taken over all
    ``1 <= m <= N - 1`` (a superset of the counts any solution reaches), which only narrows the
    interval: the claim holds for every subset of ``V``.
    """
    N, P = int(n_slice), int(positives)
    e = Fraction(tolerance) + Fraction(slack)
    a, b = e.numerator, e.denominator
    below_n, below_d = 0, 1  # largest attainable v <= e, as a fraction (0 stands in when none)
    above_n, above_d = -1, 1  # smallest attainable v > e (-1: none yet)

    def consider(m: int, p: int) -> None:
        nonlocal below_n, below_d, above_n, above_d
        d, den = abs(N * p - P * m), N * m
        if d * b <= a * den:
            if d * below_d > below_n * den:
                below_n, below_d = d, den
        elif above_n < 0 or d * above_d < above_n * den:
            above_n, above_d = d, den

    for m in range(1, N):
        t = (a * N * m) // b  # |D| <= e N m  <=>  |D| <= t (D is an integer)
        p_lo = -((t - P * m) // N)  # ceil((P m - t) / N): smallest p with N p - P m >= -t
        p_hi = (P * m + t) // N  # largest p with N p - P m <= t
        lo, hi = max(p_lo, 0), min(p_hi, m)
        if lo <= hi:  # |D| is convex in p: its largest admitted value sits at an end of [lo, hi]
            consider(m, lo)
            consider(m, hi)
        if min(p_lo - 1, m) >= 0:  # nearest p below the admitted range
            consider(m, min(p_lo - 1, m))
        if max(p_hi + 1, 0) <= m:  # nearest p above it
            consider(m, max(p_hi + 1, 0))
    return _simplest_in(Fraction(below_n, below_d), None if above_n < 0 else Fraction(above_n, above_d))


def integer_weights(confidence: np.ndarray, bits: int = WEIGHT_BITS) -> tuple[np.ndarray, float, float]:
    """Integer objective weights for CP-SAT and how far the integer optimum may be from the real one.

    ``W_i = round(w_i S)`` with ``S`` a power of two putting the largest weight in
    ``[2**(bits-1), 2**bits)`` (fewer bits if ``n 2**bits`` would pass ``2**62``). ``w_i S`` is then
    exact in floating point, and ``err_i = w_i - W_i / S`` is exact too.

    **Bound.** Let ``x*`` minimise ``W . x`` and ``x°`` minimise ``w . x`` over the same 0/1
    "moved" vectors. Then ``w . x* - w . x° = (W . x* - W . x°) / S + (x* - x°) . err <= 0 +
    sum_i |err_i|``. The returned ``bound`` is that sum (rounded up): 0 when every ``w_i S`` is an
    integer, and the optimum is then exactly the real one.

    Returns
    -------
    W : array of int64
    scale : float
        ``S``.
    bound : float
        ``sum_i |w_i - W_i / S|``.
    """
    w = np.asarray(confidence, dtype=np.float64)
    top = float(w.max()) if w.size else 0.0
    if top <= 0.0:
        return np.zeros(w.size, dtype=np.int64), 1.0, 0.0
    bits = min(int(bits), _OBJECTIVE_BITS - max(1, int(w.size)).bit_length())
    scale = math.ldexp(1.0, bits - math.frexp(top)[1])  # top * scale in [2**(bits-1), 2**bits)
    scaled = w * scale
    W = np.rint(scaled)
    bound = math.fsum(np.abs(scaled - W).tolist()) / scale
    return W.astype(np.int64), scale, (math.nextafter(bound, math.inf) if bound > 0 else 0.0)


def _check_solver(backend: str, weight_bits: int) -> None:
    """A known backend and a valid weight precision, or AttackError."""
    if backend not in BACKENDS:
        raise AttackError(BAD_BACKEND.format(known=", ".join(BACKENDS), backend=backend))
    _check_bits(weight_bits)


def _check_bits(bits: int) -> None:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= _OBJECTIVE_BITS - 2:
        raise AttackError(BAD_BITS.format(top=_OBJECTIVE_BITS - 2, bits=bits))


def _cp_fairness(model: Any, count_of: _CountOf, variable: Sequence[Any], n_slice: int,
                 positives: int, groups: int, tolerance: float) -> None:
    """The integer rows of one slice in a CP-SAT model, counts given per example column (:func:`_cp_group_rows`)."""
    from ortools.sat.python import cp_model

    counts = []
    for g in range(groups):
        (n_cols, n_coef, n_const), (p_cols, p_coef, p_const) = count_of(g)
        count = cp_model.LinearExpr.weighted_sum([variable[c] for c in n_cols], [int(v) for v in n_coef])
        pos = cp_model.LinearExpr.weighted_sum([variable[c] for c in p_cols], [int(v) for v in p_coef])
        counts.append((count + int(n_const), pos + int(p_const)))
    _cp_group_rows(model, counts, n_slice, positives, tolerance)


def _cp_group_rows(model: Any, counts: Sequence[tuple[Any, Any]], n_slice: int, positives: int,
                   tolerance: float) -> None:
    """Each group's integer rows (:func:`rational_tolerance`) and ``N_g >= 1``; ``counts`` holds ``(N_g, P_g)``."""
    q = rational_tolerance(n_slice, positives, tolerance)
    a, b = q.numerator, q.denominator
    N, P = n_slice, positives
    for count, pos in counts:
        # |N P_g - P N_g| <= q N N_g, times b, each row divided by the gcd of its coefficients.
        for slope, upper in ((b * P + a * N, True), (b * P - a * N, False)):
            k = math.gcd(b * N, slope) or 1
            row = (b * N // k) * pos - (slope // k) * count
            model.add(row <= 0) if upper else model.add(row >= 0)
        model.add(count >= 1)


#: CP-SAT parameters of the correction models beyond gaps, workers and time (measured one at a time by
#: tests/benchmarks/bench_cp_sat_levers.py on bench_correction.py's instances, n = 15,000; docs/design.md).
#: None of them changes the model: CP-SAT still proves optimality, only presolve does less.
CP_SAT_PARAMETERS: dict[str, Any] = {
    # Probing and repeated presolve rounds took ~11 s of presolve before ~1 s of search.
    "cp_model_probing_level": 0,
    "max_presolve_iterations": 1,
    # Merging at-most-ones walks the implication graph of the sorted-cell chains (quadratic in a cell's
    # length); it found nothing to merge on these models and was most of the remaining presolve time.
    "merge_at_most_one_work_limit": 0.0,
    # The SAT presolve (bounded variable elimination), the big-linear-overlap search and the symmetry
    # search found nothing either; SAT inprocessing during the search re-walks the same chains.
    "cp_model_use_sat_presolve": False,
    "find_big_linear_overlap": False,
    "symmetry_level": 0,
    "use_sat_inprocessing": False,
    # One worker: deterministic, and the machine's two cores are shared; a fixed seed on top.
    "random_seed": 1,
}


def _cp_solve(model: Any, time_limit: float | None, workers: int,
              parameters: dict[str, Any] | None = None) -> tuple[str, Any]:
    """Solve with CP-SAT; map its status to parley's (a solution stopped by a limit is "feasible").

    ``parameters`` replaces :data:`CP_SAT_PARAMETERS` (``{}``: CP-SAT's defaults).
    """
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    for name, value in (CP_SAT_PARAMETERS if parameters is None else parameters).items():
        setattr(solver.parameters, name, value)
    solver.parameters.num_workers = int(workers)
    solver.parameters.absolute_gap_limit = 0.0  # the paper's optimality tolerances of 0
    solver.parameters.relative_gap_limit = 0.0
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    status = solver.solve(model)
    if status == cp_model.OPTIMAL:
        return OPTIMAL, solver
    if status == cp_model.FEASIBLE:
        return FEASIBLE, solver
    if status == cp_model.INFEASIBLE:
        return INFEASIBLE, solver
    if status == cp_model.MODEL_INVALID:
        raise AttackError(CP_SAT_INVALID.format(detail=model.validate()))
    return TIME_LIMIT, solver


def _milp_status(result: Any) -> str:
    if result.status == 0:
        return OPTIMAL
    if result.status == 2:
        return INFEASIBLE
    # A limit was reached: the best solution found ("feasible"), or none (the guess is kept).
    return FEASIBLE if result.x is not None else TIME_LIMIT


def _options(time_limit: float | None) -> dict[str, Any]:
    # The paper sets optimality tolerances to 0: exponentiated confidences can be tiny.
    # HiGHS's presolve slows these small-row models down by orders of magnitude (measured), so it is off.
    options = {"mip_rel_gap": 0.0, "presolve": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    return options


def solve_efficient(a0: np.ndarray, confidence: np.ndarray, yhat: np.ndarray, constraint: FairnessConstraint,
                    y: np.ndarray | None = None, groups: int = 2, time_limit: float | None = 60.0,
                    backend: Backend = "highs", weight_bits: int = WEIGHT_BITS, workers: int = 1) -> Correction:
    """The efficient model of Sec. III-C (App. A-B for ``groups > 2``), solved with HiGHS or CP-SAT.

    With ``backend = "cp-sat"`` the move counts are integer variables and each cell's cost
    ``C_c[moved_c]`` over the cumulative integer weights (:func:`integer_weights`) uses the
    convex incremental encoding with ordered Booleans, with the fairness rows in exact integer
    form (:func:`rational_tolerance`).

    Parameters
    ----------
    a0 : array of int, shape (n,)
        The adversary's guess, group ids ``0 .. groups - 1``.
    confidence : array of float, shape (n,)
        Cost of changing each guess (>= 0).
    yhat : array, shape (n,)
        The target's predictions on the training set (thresholded at 0.5).
    constraint : FairnessConstraint
        Metric and tolerance the predictions satisfy.
    y : array, shape (n,), optional
        True labels (needed for PE, EO and EOdds slices).
    groups : int
        Number of groups K.
    time_limit : float, optional
        Seconds the solver may spend (the paper's one-minute limit).
    backend : {"highs", "cp-sat"}
        HiGHS through :func:`scipy.optimize.milp`, or OR-Tools CP-SAT (the open counterpart
        of the CP Optimizer the paper used).
    weight_bits : int
        CP-SAT only: bits of the largest integer weight (:func:`integer_weights`).
    workers : int
        CP-SAT only: search workers (1, as in the paper, is deterministic).

    Returns
    -------
    Correction
        With ``status`` "optimal", "infeasible" (the guess is returned unchanged),
        "feasible" (a limit stopped the solver at its best solution) or "time-limit"
        (stopped with none; the guess is returned unchanged). CP-SAT optimises the integer
        weights: its "optimal" is within ``bound`` of the real optimum (0 when the scaling is exact).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    start = time.perf_counter()
    _check_solver(backend, weight_bits)
    a0, w, yhat = _check(a0, confidence, yhat, y, groups)
    n = a0.size
    slices = _slices(constraint, y, n)
    # Cells: (slice, prediction, guessed group); each cell's examples sorted by confidence ascending.
    cells: list[np.ndarray] = []
    cell_key: dict[tuple[int, int, int], int] = {}
    for s, mask in enumerate(slices):
        for p in (0, 1):
            for g in range(groups):
                idx = np.flatnonzero(mask & (yhat == p) & (a0 == g))
                cell_key[(s, p, g)] = len(cells)
                cells.append(idx[np.argsort(w[idx], kind="stable")])
    # Variables: move counts x[c, h] (cell c to group h != its group), integer; then z per cell element.
    move_index: dict[tuple[int, int], int] = {}
    for (_s, _p, g), c in cell_key.items():
        for h in range(groups):
            if h != g:
                move_index[(c, h)] = len(move_index)
    n_moves = len(move_index)
    z_offset = np.cumsum([0] + [len(idx) for idx in cells]) + n_moves
    size = int(z_offset[-1])
    cost = np.zeros(size)
    for c, idx in enumerate(cells):
        cost[z_offset[c]:z_offset[c + 1]] = w[idx]
    # Linking rows: sum_h x[c, h] - sum_j z[c, j] = 0 (moves out of a cell = its incremental fill).
    link_r, link_c, link_v = [], [], []
    for c in range(len(cells)):
        for h in range(groups):
            if (c, h) in move_index:
                link_r.append(c)
                link_c.append(move_index[(c, h)])
                link_v.append(1.0)
        span = np.arange(z_offset[c], z_offset[c + 1])
        link_r.extend([c] * span.size)
        link_c.extend(span.tolist())
        link_v.extend([-1.0] * span.size)
    link = coo_matrix((link_v, (link_r, link_c)), shape=(len(cells), size)).tocsr()
    constraints = [LinearConstraint(link, 0.0, 0.0)]
    slice_rows: _SliceRows = []
    for s, mask in enumerate(slices):
        n_slice, positives = int(mask.sum()), int(yhat[mask].sum())
        if n_slice == 0:
            continue

        def count_of(h: int, s: int = s) -> tuple[_Affine, _Affine]:
            # N_h = sum_{p} |cell(s,p,h)| + moves into h - moves out of h; P_h the same over p = 1.
            n_cols, n_coef, p_cols, p_coef, n_const, p_const = [], [], [], [], 0.0, 0.0
            for p in (0, 1):
                base = cells[cell_key[(s, p, h)]].size
                n_const += base
                p_const += base * p
                for g in range(groups):
                    c = cell_key[(s, p, g)]
                    if g != h:  # into h from g
                        n_cols.append(move_index[(c, h)])
                        n_coef.append(1.0)
                        if p:
                            p_cols.append(move_index[(c, h)])
                            p_coef.append(1.0)
                    else:  # out of h to every other group
                        for k in range(groups):
                            if k != h:
                                n_cols.append(move_index[(c, k)])
                                n_coef.append(-1.0)
                                if p:
                                    p_cols.append(move_index[(c, k)])
                                    p_coef.append(-1.0)
            return ((np.array(n_cols, dtype=int), np.array(n_coef), n_const),
                    (np.array(p_cols, dtype=int), np.array(p_coef), p_const))

        slice_rows.append((count_of, n_slice, positives))
    bound = 0.0
    if backend == "cp-sat":
        status, values, bound = _efficient_cp_sat(w, cells, move_index, slice_rows, groups, constraint.tolerance,
                                                  time_limit, weight_bits, workers)
    else:
        fairness = _fairness_constraint(slice_rows, size, groups, constraint.tolerance)
        if fairness is not None:
            constraints.append(fairness)
        integrality = np.zeros(size)
        integrality[:n_moves] = 1
        upper_bounds = np.ones(size)
        for (c, _h), j in move_index.items():
            upper_bounds[j] = cells[c].size
        result = milp(cost, constraints=constraints, integrality=integrality,
                      bounds=Bounds(np.zeros(size), upper_bounds), options=_options(time_limit))
        status, values = _milp_status(result), result.x
    if values is None:
        return Correction(a0.copy(), float("nan"), status, 0, time.perf_counter() - start)
    # Post-processing (Sec. III-C): apply each cell's moves to its lowest-confidence examples first.
    a = a0.copy()
    moves: dict[str, int] = {}
    for (s, p, g), c in cell_key.items():
        taken = 0
        for h in range(groups):
            if h == g:
                continue
            count = int(round(values[move_index[(c, h)]]))
            a[cells[c][taken:taken + count]] = h
            taken += count
            if count:
                moves[f"slice{s}:yhat{p}:{g}->{h}"] = count
    changed = a != a0
    return Correction(a, float(w[changed].sum()), status, int(changed.sum()), time.perf_counter() - start, moves,
                      bound)


def _efficient_cp_sat(w: np.ndarray, cells: list[np.ndarray], move_index: dict[tuple[int, int], int],
                      slice_rows: _SliceRows, groups: int, tolerance: float, time_limit: float | None, weight_bits: int,
                      workers: int) -> tuple[str, np.ndarray | None, float]:
    """The efficient model for CP-SAT: move counts, convex cell costs over cumulative integer weights."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    W, _scale, bound = integer_weights(w, weight_bits)
    variable: list[Any] = [None] * len(move_index)
    for (c, h), j in move_index.items():
        variable[j] = model.new_int_var(0, int(cells[c].size), f"x{c}_{h}")
    costs = []
    for c, idx in enumerate(cells):
        out = [variable[j] for (cell, _h), j in move_index.items() if cell == c]
        if idx.size == 0 or not out:
            continue
        # C_c[k], the k cheapest confidences of the cell (sorted ascending). The paper states it as an
        # element constraint; that form was measured 15-25 times slower in CP-SAT at n = 15,000 than the
        # convex incremental encoding: one Boolean per sorted example, z_(j+1) <= z_j, moved = sum z,
        # cost = sum W_(j) z_j (the prefix of the cheapest is exactly C_c[moved]).
        z = [model.new_bool_var(f"z{c}_{j}") for j in range(idx.size)]
        for first, second in zip(z[:-1], z[1:], strict=True):
            model.add_implication(second, first)
        model.add(sum(out) == sum(z))
        costs.append(cp_model.LinearExpr.weighted_sum(z, W[idx].tolist()))
    for count_of, n_slice, positives in slice_rows:
        _cp_fairness(model, count_of, variable, n_slice, positives, groups, tolerance)
    model.minimize(sum(costs))
    status, solver = _cp_solve(model, time_limit, workers)
    if status in (INFEASIBLE, TIME_LIMIT):
        return status, None, bound
    return status, np.array([solver.value(v) for v in variable], dtype=np.float64), bound


def solve_general(a0: np.ndarray, confidence: np.ndarray, yhat: np.ndarray, constraint: FairnessConstraint,
                  y: np.ndarray | None = None, groups: int = 2, time_limit: float | None = 60.0,
                  backend: Backend = "highs", weight_bits: int = WEIGHT_BITS, workers: int = 1,
                  dominance: bool = True, cell_counts: bool = True,
                  parameters: dict[str, Any] | None = None, hint: np.ndarray | None = None) -> Correction:
    """The general integer model of Sec. III-B (App. A-A for ``groups > 2``): one-hot binaries per example.

    One binary per example and other group (``move[i, g] = 1``: example ``i``
    leaves its guessed group for ``g``; binary A: one variable per example, the
    paper's ``{0, 1}^n`` search space); the objective sums the confidence of every
    moved example. Same arguments and return value as :func:`solve_efficient`.

    ``dominance`` (CP-SAT only) adds the exchange argument behind Thm. 1 as implications: within
    a cell (slice, prediction, guessed group), sorted by confidence, a guess moves only if every
    less confident one moves too. Swapping a moved example for a less confident unmoved one of
    its cell (same destination) leaves every count unchanged and costs no more, so an optimum
    satisfying the implications exists: the optimal objective is unchanged.

    ``cell_counts`` (CP-SAT only) states the fairness rows over one integer per cell and
    destination, ``x[c, h] = sum_{i in c} move[i, h]``, instead of over the examples. The
    Booleans, their feasible assignments and the objective are those of the general model
    (each ``x`` is defined by its equality, and ``N_g``, ``P_g`` are the same affine functions
    of the Booleans), so the optimum is the same; the rows shrink from one term per example to
    ``2 K (K - 1)`` terms per slice, and CP-SAT's presolve no longer rewrites 90,000 row terms
    at n = 15,000. ``parameters`` replaces :data:`CP_SAT_PARAMETERS` (``{}``: CP-SAT's defaults).
    With ``dominance = cell_counts = False`` and ``parameters = {}`` the CP-SAT model is the
    plain general model of Sec. III-B; the tests check that every variant has its optimum.
    ``hint`` (CP-SAT only): a reconstruction given to CP-SAT as a warm start (``add_hint``; not
    fixed, so the optimum and its proof do not depend on it).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    start = time.perf_counter()
    _check_solver(backend, weight_bits)
    a0, w, yhat = _check(a0, confidence, yhat, y, groups)
    n = a0.size
    if n * groups > GENERAL_LIMIT:
        raise AttackError(TOO_LARGE.format(limit=GENERAL_LIMIT // groups, n=n))
    if hint is not None:
        hint = np.asarray(hint)
        if hint.shape != (n,) or (n and (not np.issubdtype(hint.dtype, np.integer) or hint.min() < 0
                                         or hint.max() >= groups)):
            raise AttackError(BAD_HINT.format(n=n, top=groups - 1, shape=hint.shape))
    size = n * groups
    # Column of "example i moves to group g" (g != a0_i); the column of g = a0_i stays unused (fixed at 0),
    # so the objective sum_i w_i * moved_i has no constant and the solver's absolute gap sees true costs.
    column = np.arange(n)[:, None] * groups + np.arange(groups)[None, :]
    cost = np.repeat(w, groups)
    fixed = column[np.arange(n), a0]
    cost[fixed] = 0.0
    upper_bounds = np.ones(size)
    upper_bounds[fixed] = 0.0
    # At most one move per example.
    one_move = coo_matrix((np.ones(size), (np.repeat(np.arange(n), groups), column.ravel())), shape=(n, size))
    constraints = [LinearConstraint(one_move.tocsr(), 0.0, 1.0)]
    slice_rows: _SliceRows = []
    for mask in _slices(constraint, y, n):
        members = np.flatnonzero(mask)
        if members.size == 0:
            continue

        def count_of(g: int, members: np.ndarray = members) -> tuple[_Affine, _Affine]:
            # [in g] = [a0_i = g] (1 - sum_h move[i, h]) + move[i, g]: constant plus +-1 coefficients.
            cols, coef, const = [], [], 0.0
            pcols, pcoef, pconst = [], [], 0.0
            stay = members[a0[members] == g]
            const, pconst = float(stay.size), float(yhat[stay].sum())
            for h in range(groups):
                if h != g:
                    cols.append(column[stay, h])
                    coef.append(-np.ones(stay.size))
                    pos = stay[yhat[stay] == 1]
                    pcols.append(column[pos, h])
                    pcoef.append(-np.ones(pos.size))
            come = members[a0[members] != g]
            cols.append(column[come, g])
            coef.append(np.ones(come.size))
            pos = come[yhat[come] == 1]
            pcols.append(column[pos, g])
            pcoef.append(np.ones(pos.size))
            return ((np.concatenate(cols), np.concatenate(coef), const),
                    (np.concatenate(pcols), np.concatenate(pcoef), pconst))

        slice_rows.append((count_of, members.size, int(yhat[members].sum())))
    if backend == "cp-sat":
        return _general_cp_sat(a0, w, yhat, slice_rows, column, groups, constraint, time_limit, weight_bits,
                               workers, dominance, y, start, cell_counts, parameters, hint)
    fairness = _fairness_constraint(slice_rows, size, groups, constraint.tolerance)
    if fairness is not None:
        constraints.append(fairness)
    result = milp(cost, constraints=constraints, integrality=np.ones(size),
                  bounds=Bounds(np.zeros(size), upper_bounds), options=_options(time_limit))
    status = _milp_status(result)
    if result.x is None:
        return Correction(a0.copy(), float("nan"), status, 0, time.perf_counter() - start)
    moved = np.round(result.x.reshape(n, groups)).astype(bool)
    a = np.where(moved.any(axis=1), np.argmax(moved, axis=1), a0).astype(np.int64)
    changed = a != a0
    return Correction(a, float(w[changed].sum()), status, int(changed.sum()), time.perf_counter() - start)


def _general_cp_sat(a0: np.ndarray, w: np.ndarray, yhat: np.ndarray, slice_rows: _SliceRows, column: np.ndarray,
                    groups: int, constraint: FairnessConstraint, time_limit: float | None, weight_bits: int,
                    workers: int, dominance: bool, y: np.ndarray | None, start: float, cell_counts: bool = True,
                    parameters: dict[str, Any] | None = None, hint: np.ndarray | None = None) -> Correction:
    """The general model for CP-SAT: one Boolean per (example, other group), integer rows and weights."""
    from ortools.sat.python import cp_model

    n = a0.size
    model = cp_model.CpModel()
    zero = model.new_constant(0)
    move = [[zero if g == a0[i] else model.new_bool_var(f"m{i}_{g}") for g in range(groups)] for i in range(n)]
    variable = [move[i][g] for i in range(n) for g in range(groups)]  # indexed like ``column``
    moved = [move[i][1 - a0[i]] if groups == 2 else sum(move[i][g] for g in range(groups) if g != a0[i])
             for i in range(n)]
    if groups > 2:
        for i in range(n):
            model.add_at_most_one(move[i][g] for g in range(groups) if g != a0[i])
    slices = [mask for mask in _slices(constraint, y, n) if mask.any()]
    # Cells (slice, prediction, guessed group), each sorted by confidence ascending.
    cells = {(s, p, g): idx[np.argsort(w[idx], kind="stable")]
             for s, mask in enumerate(slices) for p in (0, 1) for g in range(groups)
             for idx in [np.flatnonzero(mask & (yhat == p) & (a0 == g))]}
    if not cell_counts:
        for count_of, n_slice, positives in slice_rows:
            _cp_fairness(model, count_of, variable, n_slice, positives, groups, constraint.tolerance)
    else:
        for s, mask in enumerate(slices):
            # x[p, g, h]: examples of cell (s, p, g) moved to h; N_h, P_h are affine in them.
            x = {}
            for p in (0, 1):
                for g in range(groups):
                    idx = cells[(s, p, g)].tolist()
                    for h in range(groups):
                        if h != g and idx:
                            x[(p, g, h)] = model.new_int_var(0, len(idx), f"x{s}_{p}_{g}_{h}")
                            model.add(cp_model.LinearExpr.sum([move[i][h] for i in idx]) == x[(p, g, h)])
            counts = []
            for h in range(groups):
                per_p = []
                for p in (0, 1):
                    into = [x[(p, g, h)] for g in range(groups) if (p, g, h) in x]
                    out = [x[(p, h, k)] for k in range(groups) if (p, h, k) in x]
                    per_p.append(cells[(s, p, h)].size + sum(into) - sum(out))
                counts.append((per_p[0] + per_p[1], per_p[1]))
            _cp_group_rows(model, counts, int(mask.sum()), int(yhat[mask].sum()), constraint.tolerance)
    W, _scale, bound = integer_weights(w, weight_bits)
    if dominance:
        for idx in cells.values():
            for lower, higher in zip(idx[:-1].tolist(), idx[1:].tolist(), strict=True):
                if groups == 2:  # a binary clause, which CP-SAT loads into its implication graph directly
                    model.add_implication(moved[higher], moved[lower])
                else:
                    model.add(moved[higher] <= moved[lower])
    model.minimize(cp_model.LinearExpr.weighted_sum(moved, W.tolist()))
    if hint is not None:
        for i, target in enumerate(np.asarray(hint, dtype=np.int64).tolist()):
            for g in range(groups):
                if g != a0[i]:
                    model.add_hint(move[i][g], target == g)
    status, solver = _cp_solve(model, time_limit, workers, parameters)
    if status in (INFEASIBLE, TIME_LIMIT):
        return Correction(a0.copy(), float("nan"), status, 0, time.perf_counter() - start)
    a = a0.copy()
    for i in range(n):
        for g in range(groups):
            if g != a0[i] and solver.boolean_value(move[i][g]):
                a[i] = g
    changed = a != a0
    return Correction(a, float(w[changed].sum()), status, int(changed.sum()), time.perf_counter() - start,
                      bound=bound)


def _net_cost(sorted_up: np.ndarray, sorted_down: np.ndarray, net: np.ndarray) -> np.ndarray:
    """``C_up[net]`` for net >= 0, ``C_down[-net]`` below: the cheapest way to realise a net move count."""
    up = np.concatenate([[0.0], np.cumsum(sorted_up)])
    down = np.concatenate([[0.0], np.cumsum(sorted_down)])
    gains: np.ndarray = np.where(net >= 0, up[np.clip(net, 0, up.size - 1)], down[np.clip(-net, 0, down.size - 1)])
    return gains


def solve_enumeration(a0: np.ndarray, confidence: np.ndarray, yhat: np.ndarray, constraint: FairnessConstraint,
                      y: np.ndarray | None = None) -> Correction:
    """The efficient model of Sec. III-C for binary A, solved exactly by enumeration in O(n log n).

    An independent exact solver of the same model, without a MILP solver. Moving an
    example 0->1 and another 1->0 in the same (slice, prediction) cell never helps
    (both fairness counts return to where they were, the cost does not), so on a
    slice only the net moves ``u = x1 - x2`` (among ``yhat = 1``) and
    ``v = x3 - x4`` (among ``yhat = 0``) matter, with convex costs ``f1(u)``,
    ``f0(v)`` (sorted cumulative confidences). With ``P_1 = n_11 + u`` fixed by
    ``u``, constraints (7)-(10) bound ``N_1 = n_1 + u + v`` to an interval, and
    the convex ``f0`` is smallest at the point of ``v``'s interval closest to 0.
    Enumerating every ``u`` is exact. Slices of different metrics are disjoint,
    so they are solved apart. Tolerances get the same 1e-9 slack as the MILP.
    """
    start = time.perf_counter()
    a0, w, yhat = _check(a0, confidence, yhat, y, 2)
    a = a0.copy()
    total, feasible, moves = 0.0, True, {}
    eps = constraint.tolerance + SLACK
    for s, mask in enumerate(_slices(constraint, y, a0.size)):
        N, P = int(mask.sum()), int(yhat[mask].sum())
        if N == 0:
            continue
        r = P / N
        cell = {(p, g): np.flatnonzero(mask & (yhat == p) & (a0 == g)) for p in (0, 1) for g in (0, 1)}
        cell = {k: idx[np.argsort(w[idx], kind="stable")] for k, idx in cell.items()}
        n11, n1 = cell[(1, 1)].size, cell[(1, 1)].size + cell[(0, 1)].size
        u = np.arange(-n11, cell[(1, 0)].size + 1)
        P1, P0 = n11 + u, P - (n11 + u)
        # Interval of N_1: 1 <= N_1 <= N - 1; (r - eps) N_g <= P_g <= (r + eps) N_g for g = 1 and for
        # g = 0 with N_0 = N - N_1 (each side divides by a positive slope or is vacuous).
        lo = np.full(u.size, 1.0)
        hi = np.full(u.size, N - 1.0)
        if r + eps > 0:
            lo = np.maximum(lo, P1 / (r + eps))
            hi = np.minimum(hi, N - P0 / (r + eps))
        if r - eps > 0:
            hi = np.minimum(hi, P1 / (r - eps))
            lo = np.maximum(lo, N - P0 / (r - eps))
        lo, hi = np.ceil(lo - 1e-9), np.floor(hi + 1e-9)
        v_lo = np.maximum(lo - n1 - u, -cell[(0, 1)].size)
        v_hi = np.minimum(hi - n1 - u, cell[(0, 0)].size)
        ok = v_lo <= v_hi
        if not ok.any():
            feasible = False
            break
        v = np.clip(0, v_lo, v_hi).astype(np.int64)
        cost = _net_cost(w[cell[(1, 0)]], w[cell[(1, 1)]], u) + _net_cost(w[cell[(0, 0)]], w[cell[(0, 1)]], v)
        cost = np.where(ok, cost, np.inf)
        best = int(np.argmin(cost))
        total += float(cost[best])
        for p, net in ((1, int(u[best])), (0, int(v[best]))):
            source = (p, 0) if net > 0 else (p, 1)
            a[cell[source][:abs(net)]] = 1 - source[1]
            if net:
                moves[f"slice{s}:yhat{p}:{source[1]}->{1 - source[1]}"] = abs(net)
    if not feasible:
        return Correction(a0.copy(), float("nan"), INFEASIBLE, 0, time.perf_counter() - start)
    changed = a != a0
    return Correction(a, float(w[changed].sum()), OPTIMAL, int(changed.sum()), time.perf_counter() - start, moves)


def solve_released_sp(a0: np.ndarray, confidence: np.ndarray, h: np.ndarray, value: float, slack: float,
                      n1: int) -> Correction:
    """Correct a binary guess to a *released* signed SP value with known group sizes, exactly.

    For the Attribute-Reveal setting (query-leakage paper): the compliance party
    released ``SP = mean(h | a=1) - mean(h | a=0)`` of a model ``h`` on the audit
    set, possibly with noise, and the attacker knows ``N_1`` (group sizes, from
    answers or public statistics). The between-group difference is not linear in
    the counts in general, but with ``N_1 = n1`` fixed it is linear in ``P_1``::

        SP = P_1 / n1 - (P - P_1) / n0   in  [value - slack, value + slack]

    so ``P_1`` lies in an integer interval. With the net moves ``u`` (among
    ``h = 1``) and ``v`` (among ``h = 0``) of :func:`solve_enumeration`,
    ``P_1 = n_11 + u`` and ``N_1 = n_1 + u + v = n1`` fix ``v`` for every ``u``;
    enumerating ``u`` over the interval is exact. ``slack`` is what the attacker
    allows for the release's noise (0 for exact answers).
    """
    start = time.perf_counter()
    a0, w, h = _check(a0, confidence, h, None, 2)
    n = a0.size
    if not (np.isfinite(value) and np.isfinite(slack) and slack >= 0):
        raise AttackError(BAD_RELEASE.format(value=value, slack=slack))
    if not 1 <= n1 <= n - 1:
        raise AttackError(BAD_N1.format(n1=n1, n=n))
    n0, P = n - n1, int(h.sum())
    cell = {(p, g): np.flatnonzero((h == p) & (a0 == g)) for p in (0, 1) for g in (0, 1)}
    cell = {k: idx[np.argsort(w[idx], kind="stable")] for k, idx in cell.items()}
    n11, n_1 = cell[(1, 1)].size, cell[(1, 1)].size + cell[(0, 1)].size
    # P_1 (1/n1 + 1/n0) = SP + P / n0, so P_1 = (SP + P / n0) n1 n0 / n over the released interval.
    scale = n1 * n0 / n
    p_lo = int(np.ceil((value - slack - SLACK + P / n0) * scale - 1e-9))
    p_hi = int(np.floor((value + slack + SLACK + P / n0) * scale + 1e-9))
    u = np.arange(max(p_lo, 0) - n11, min(p_hi, P) - n11 + 1)
    u = u[(u >= -n11) & (u <= cell[(1, 0)].size)]
    v = n1 - n_1 - u
    ok = (v >= -cell[(0, 1)].size) & (v <= cell[(0, 0)].size)
    if not ok.any():
        return Correction(a0.copy(), float("nan"), INFEASIBLE, 0, time.perf_counter() - start)
    u, v = u[ok], v[ok]
    cost = _net_cost(w[cell[(1, 0)]], w[cell[(1, 1)]], u) + _net_cost(w[cell[(0, 0)]], w[cell[(0, 1)]], v)
    best = int(np.argmin(cost))
    a, moves = a0.copy(), {}
    for p, net in ((1, int(u[best])), (0, int(v[best]))):
        source = (p, 0) if net > 0 else (p, 1)
        a[cell[source][:abs(net)]] = 1 - source[1]
        if net:
            moves[f"h{p}:{source[1]}->{1 - source[1]}"] = abs(net)
    changed = a != a0
    return Correction(a, float(w[changed].sum()), OPTIMAL, int(changed.sum()), time.perf_counter() - start, moves)


def correct(a0: np.ndarray, confidence: np.ndarray, yhat: np.ndarray, constraint: FairnessConstraint,
            y: np.ndarray | None = None, groups: int = 2, solver: str = "auto",
            time_limit: float | None = 60.0) -> Correction:
    """Correct ``a0`` with the efficient model: the exact enumeration for binary A, CP-SAT otherwise.

    ``solver`` is "auto", "enumeration" (binary A only), "cp-sat" or "highs" (the
    efficient model with that backend). "auto" prefers the enumeration for binary A
    (exact, O(n log n): milliseconds at n = 15,000) and CP-SAT for ``groups > 2``:
    at tolerance 0 HiGHS's branch and bound stops at its time limit on worse
    solutions, or reports infeasible where a solution exists, while CP-SAT proves
    optimality in under a second (docs/attacks/reconstruction-correction.md, measured
    by tests/benchmarks/bench_correction.py).
    """
    if solver not in SOLVERS:
        raise AttackError(BAD_SOLVER.format(known=", ".join(SOLVERS), solver=solver))
    if solver == "enumeration" or (solver == "auto" and groups == 2):
        if groups != 2:
            raise AttackError(ENUMERATION_BINARY.format(groups=groups))
        return solve_enumeration(a0, confidence, yhat, constraint, y)
    backend: Backend = "highs" if solver == "highs" else "cp-sat"
    return solve_efficient(a0, confidence, yhat, constraint, y, groups, time_limit, backend=backend)
