"""Fair PCA baselines of Table I of the distributed-fair-learning paper: FPCA1 and FPCA2.

Hu, Liu, Wang & Lan (ICDM 2019, Sec. IV-D) compare DFPCA with two fair PCAs that need s:
FPCA1, Samadi, Tantipongpipat, Morgenstern, Singh and Vempala, "The Price of Fair PCA: One
Extra Dimension" (NeurIPS 2018), and FPCA2, Olfat and Aswani, "Convex Formulations for Fair
Principal Component Analysis" (AAAI 2019). Both are semidefinite programs over the lifted
projection ``P = V V^T`` (``0 <= P <= I`` in the semidefinite order, ``tr P <= d``), solved here
with cvxpy and SCS. As for DFPCA (``fair_span.py``), the representation is then handed to a
classifier, the paper's "then a classifier": logistic regression on the projected, centred
features. s enters the training only; the prediction reads x alone.

**FPCA1** (Samadi et al., Sec. 4, Algorithm 1). For groups A (s = 1, m_A rows) and B (s = 0)
of the centred training set, the loss of a projection is its reconstruction error minus the
group's own best rank-d error, ``loss(A, P) = ||A_d||_F^2 - <A^T A, P>`` (``A_d`` the best rank-d
approximation of A). The SDP minimises ``max(loss(A, P) / m_A, loss(B, P) / m_B)``; at its
optimum the two groups' average losses are equal (their Sec. 4; the tests check it). The LP
step of their Algorithm 1 writes the optimum as ``sum_j l_j u_j u_j^T`` and re-optimises the weights l_j in
[0, 1], ``sum l_j <= d``; a vertex of that LP has at most d + 1 non-zero weights, and the
representation is the span of their u_j: at most d + 1 dimensions whose fair loss is at most
the best d-dimensional one (the paper's "one extra dimension").

**FPCA2** (Olfat & Aswani). Maximise the projected variance ``<Sigma, P>`` subject to the
mean-difference constraint ``f^T P f <= delta^2`` (f: the difference of the two groups' mean
features; ``delta = 0`` forces the projected means equal) and the covariance-difference
constraint ``|<Sigma_1 - Sigma_0, P>| <= mu`` (the groups' covariance matrices). The
representation is the d leading eigenvectors of P. What differs from the paper: for d > 1
Olfat and Aswani bound the spectral norm of the projected covariance difference with two
linear matrix inequalities of size 2p; we bound its trace, which for d = 1 (a rank-one P, the
default here) is the same quantity. On one split of Communities and Crime (p = 99, d = 1) the
two inequalities of size 196 (on the complement of f) took SCS 86 s of CPU against 0.8 s for the
trace form, and met the same bound (v^T (Sigma_1 - Sigma_0) v = 0.100 for both).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from pydantic import Field
from typing_extensions import TypeVar

from parley.parties.learners.fair_baselines import AttributeLearner
from parley.parties.learners.fair_span import HypothesisParams
from parley.parties.learners.registry import LearnerParams, register_learner
from parley.protocols.errors import ConfigError, EmptyGroupError, ParleyError

__all__ = ["FPCA1", "FPCA2", "FairPCAParams", "OlfatAswaniParams", "SolverFailed", "olfat_aswani_sdp",
           "samadi_lp_round", "samadi_sdp"]

NOT_SOLVED = "{what}: the solver ({solver}) stopped with status {status!r}{hint}"
TOO_FEW = "learner {name!r}: fit needs rows of both groups of s (got {n1} with s = 1, {n0} with s = 0)"
BAD_D = "learner {name!r}: components = {d} must be below the number of features ({p})"
#: Eigenvalues (of P) and LP weights below this count as zero.
_ZERO = 1e-6


class SolverFailed(ParleyError):
    """The semidefinite or linear program did not reach an optimal solution (infeasible, or the solver stopped)."""


class FairPCAParams(HypothesisParams):
    """Parameters of a fair PCA baseline: the target dimension and the classifier on the representation."""

    components: int = Field(default=1, ge=1, le=100, description="d, the dimension of the fair representation")
    C: float = Field(default=1.0, gt=0.0, allow_inf_nan=False,
                     description="inverse regularisation of the logistic classifier on the representation")


class OlfatAswaniParams(FairPCAParams):
    """Parameters of :class:`FPCA2`: the bounds of its two fairness constraints."""

    delta: float = Field(default=0.0, ge=0.0, allow_inf_nan=False,
                         description="bound on the projected mean difference: f^T P f <= delta^2 (0: equal means)")
    mu: float = Field(default=0.1, ge=0.0, allow_inf_nan=False,
                      description="bound on the projected covariance difference: |<Sigma_1 - Sigma_0, P>| <= mu")


def _check(problem: Any, what: str, solver: str) -> None:
    if problem.status not in ("optimal", "optimal_inaccurate"):
        hint = "; the fairness bounds may admit no projection (raise delta or mu)" if "infeasible" in str(
            problem.status) else ""
        raise SolverFailed(NOT_SOLVED.format(what=what, solver=solver, status=problem.status, hint=hint))


def _cvxpy() -> Any:
    """cvxpy, imported where it is used (seconds at start-up otherwise); typed Any, as its expressions are."""
    import cvxpy

    return cvxpy


def _inner(C: np.ndarray, P: Any) -> Any:
    """<C, P> = tr(C P) for symmetric C, as an elementwise sum (cheaper to compile than a matrix product)."""
    cp = _cvxpy()
    return cp.sum(cp.multiply(C, P))


def _best_rank_d(M: np.ndarray, d: int) -> float:
    """||M_d||_F^2 of M's best rank-d approximation M_d: the sum of its d largest squared singular values."""
    sv = np.linalg.svd(M, compute_uv=False)
    return float((sv[:d] ** 2).sum())


def samadi_sdp(A: np.ndarray, B: np.ndarray, d: int) -> tuple[np.ndarray, float]:
    """Samadi et al.'s fair PCA SDP: P minimising the larger of the two groups' average losses.

    Parameters
    ----------
    A, B : numpy.ndarray
        The two groups' rows (centred together), shapes (m_A, p) and (m_B, p).
    d : int
        The target dimension (``tr P <= d``).

    Returns
    -------
    (numpy.ndarray, float)
        P, symmetric (p, p) with eigenvalues in [0, 1], and the optimal value z.
    """
    cp = _cvxpy()
    p = A.shape[1]
    P = cp.Variable((p, p), symmetric=True)
    z = cp.Variable()
    constraints = [P >> 0, P << np.eye(p), cp.trace(P) <= d]
    for G in (A, B):
        # loss(G, P) / m_G = (||G_d||^2 - <G^T G, P>) / m_G <= z
        constraints.append(z >= (_best_rank_d(G, d) - _inner(G.T @ G, P)) / len(G))
    problem = cp.Problem(cp.Minimize(z), constraints)
    problem.solve(solver="SCS")
    _check(problem, "Samadi et al.'s fair PCA SDP", "SCS")
    return _symmetric(P.value), float(problem.value)


def samadi_lp_round(P: np.ndarray, A: np.ndarray, B: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Samadi et al.'s LP step: the eigenvectors of P re-weighted at an LP vertex, at most d + 1 kept.

    With ``P = sum_j l_j u_j u_j^T`` fixed in its eigenvectors, the losses are linear in the weights l.
    The LP ``min z`` s.t. ``z >= (||G_d||^2 - sum_j l_j ||G u_j||^2) / m_G`` for both groups G,
    ``sum_j l_j <= d``, ``0 <= l_j <= 1`` has P's own weights as a feasible point, so its optimum is no
    worse; at a vertex at most three of its constraints other than the bounds are tight, which
    leaves at most d + 1 non-zero weights (HiGHS's dual simplex returns a vertex).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, float)
        U, the (p, r) eigenvectors with non-zero weight (r <= d + 1); their weights; the LP's value.
    """
    from scipy.optimize import linprog

    _, U = np.linalg.eigh(P)
    p = U.shape[1]
    # Variables (l_1, ..., l_p, z); minimise z.
    cost = np.r_[np.zeros(p), 1.0]
    rows, rhs = [], []
    for G in (A, B):
        captured = ((G @ U) ** 2).sum(0)  # ||G u_j||^2 = <G^T G, u_j u_j^T>
        # (||G_d||^2 - captured . l) / m_G <= z   <=>   -captured . l / m_G - z <= -||G_d||^2 / m_G
        rows.append(np.r_[-captured / len(G), -1.0])
        rhs.append(-_best_rank_d(G, d) / len(G))
    rows.append(np.r_[np.ones(p), 0.0])  # sum_j l_j <= d
    rhs.append(float(d))
    bounds = [(0.0, 1.0)] * p + [(None, None)]
    result = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs-ds")
    if result.status != 0:
        raise SolverFailed(NOT_SOLVED.format(what="Samadi et al.'s LP step", solver="HiGHS", status=result.message,
                                             hint=""))
    weights = result.x[:p]
    keep = weights > _ZERO
    return U[:, keep], weights[keep], float(result.fun)


def olfat_aswani_sdp(X: np.ndarray, s: np.ndarray, d: int, delta: float, mu: float) -> np.ndarray:
    """Olfat and Aswani's fair PCA SDP (trace form of the covariance constraint; module docstring).

    Parameters
    ----------
    X : numpy.ndarray
        Centred training features, (n, p).
    s : numpy.ndarray
        Boolean group of each row.
    d, delta, mu
        Target dimension, mean-difference bound, covariance-difference bound.

    Returns
    -------
    numpy.ndarray
        P, symmetric (p, p) with eigenvalues in [0, 1] and trace d.
    """
    cp = _cvxpy()
    n, p = X.shape
    f = X[s].mean(0) - X[~s].mean(0)  # difference of the groups' mean features
    # Sigma_1 - Sigma_0: each group's covariance about its own mean.
    M = np.cov(X[s].T, bias=True) - np.cov(X[~s].T, bias=True)
    Sigma = X.T @ X / n
    # With delta = 0 and P >= 0, f^T P f = 0 means P f = 0: P lives on the complement of f. Writing
    # P = Q R Q^T (Q an orthonormal basis of f's complement) is the same problem without a constraint that
    # has no strictly feasible point, which SCS converges on slowly (minutes on Crime instead of seconds).
    Q = np.linalg.svd(f[None, :])[2][1:].T if delta == 0.0 and np.any(f) else np.eye(p)
    k = Q.shape[1]
    R = cp.Variable((k, k), symmetric=True)
    constraints = [R >> 0, R << np.eye(k), cp.trace(R) == d,  # Q^T Q = I: P's eigenvalues are R's
                   cp.abs(_inner(Q.T @ M @ Q, R)) <= mu]  # |<M, P>|: the projected covariances' difference
    if k == p:
        constraints.append(_inner(np.outer(f, f), R) <= delta ** 2)  # f^T P f: the projected means' distance
    problem = cp.Problem(cp.Maximize(_inner(Q.T @ Sigma @ Q, R)), constraints)
    problem.solve(solver="SCS")
    _check(problem, "Olfat and Aswani's fair PCA SDP", "SCS")
    return _symmetric(Q @ _symmetric(R.value) @ Q.T)


def _symmetric(P: Any) -> np.ndarray:
    """(P + P^T) / 2 of a solver's matrix, as float64."""
    P = np.asarray(P, dtype=np.float64)
    out: np.ndarray = (P + P.T) / 2.0
    return out


#: The parameters of a fair PCA learner.
FP = TypeVar("FP", bound=FairPCAParams, default=FairPCAParams, covariant=True)


class _FairPCA(AttributeLearner[FP]):
    """A fair representation fitted with s (``_directions``), then logistic regression on it."""

    def __init__(self, params: FP | None = None) -> None:
        super().__init__(params)
        self.components_: np.ndarray | None = None
        self.classifier_: Any = None

    def _directions(self, X: np.ndarray, s: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> _FairPCA[FP]:
        """Fit the representation on the centred X with s, then the classifier on it (y)."""
        from sklearn.linear_model import LogisticRegression

        X = np.asarray(X, dtype=np.float64)
        s = np.asarray(s).astype(bool)
        n1, n0 = int(s.sum()), int((~s).sum())
        if min(n1, n0) == 0:
            raise EmptyGroupError(TOO_FEW.format(name=self.name, n1=n1, n0=n0))
        if self.params.components >= X.shape[1]:
            raise ConfigError(BAD_D.format(name=self.name, d=self.params.components, p=X.shape[1]))
        self.x_mean_ = X.mean(0)
        Xc = X - self.x_mean_
        start = time.perf_counter()
        self.components_ = self._directions(Xc, s)
        self.solve_s_ = time.perf_counter() - start
        self.classifier_ = LogisticRegression(C=self.params.C, max_iter=1000).fit(Xc @ self.components_, y)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The fair representation: centred X projected on the fitted directions."""
        W = self._check_fitted("components_")
        out: np.ndarray = (np.asarray(X, dtype=np.float64) - self.x_mean_) @ W
        return out

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """P(y = 1 | x) of the classifier on the representation; ``predict`` thresholds it (0.5)."""
        scores: np.ndarray = self._check_fitted("classifier_").predict_proba(self.transform(X))[:, 1]
        return scores


@register_learner
class FPCA1(_FairPCA[FairPCAParams]):
    """Samadi et al.'s fair PCA (SDP, then the LP step: at most d + 1 directions), then logistic regression."""

    name: ClassVar[str] = "fpca1"
    Params: ClassVar[type[LearnerParams]] = FairPCAParams
    summary: ClassVar[str] = "baseline with s: Samadi et al.'s fair PCA (SDP + LP rounding), then a classifier"

    def _directions(self, X: np.ndarray, s: np.ndarray) -> np.ndarray:
        A, B = X[s], X[~s]
        d = self.params.components
        P, self.sdp_value_ = samadi_sdp(A, B, d)
        U, self.weights_, self.lp_value_ = samadi_lp_round(P, A, B, d)
        return U


@register_learner
class FPCA2(_FairPCA[OlfatAswaniParams]):
    """Olfat and Aswani's fair PCA (SDP with mean and covariance constraints), then logistic regression."""

    name: ClassVar[str] = "fpca2"
    Params: ClassVar[type[LearnerParams]] = OlfatAswaniParams
    summary: ClassVar[str] = "baseline with s: Olfat and Aswani's convex fair PCA (SDP), then a classifier"

    def _directions(self, X: np.ndarray, s: np.ndarray) -> np.ndarray:
        params = self.params
        self.P_ = olfat_aswani_sdp(X, s, params.components, params.delta, params.mu)
        _, U = np.linalg.eigh(self.P_)
        directions: np.ndarray = U[:, ::-1][:, :params.components]  # the d leading eigenvectors of P
        return directions
