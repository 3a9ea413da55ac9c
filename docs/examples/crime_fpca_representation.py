"""What the fair PCA representations of Table I keep of s on Communities and Crime (FPCA1, FPCA2 against PCA).

    python docs/examples/crime_fpca_representation.py [splits]

On ``splits`` random 75/25 splits (default 10; seeds 0, 1, ...) of the crime data set as
crime-table1 uses it, for plain PCA's leading direction, ``fpca1``'s directions (d = 1, so one or
two after the LP step) and ``fpca2``'s direction: each group's average reconstruction loss (the
quantity Samadi et al. equalise), and R^2 of s regressed on the representation of the training set
(how much of s a linear model reads from it; 0: nothing). Prints the mean over the splits, and the
median CPU time of each fit's solve (``fpca1``: SDP and LP step; ``fpca2``: SDP).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from parley.parties.learners.fair_pca import _best_rank_d, olfat_aswani_sdp, samadi_lp_round, samadi_sdp
from parley.scenarios.datasets import load_split
from parley.scenarios.datasets._crime import CrimeParams


def _r2(Z: np.ndarray, s: np.ndarray) -> float:
    """R^2 of the least-squares fit of s on Z (with an intercept)."""
    design = np.column_stack([Z, np.ones(len(s))])
    residual = s - design @ np.linalg.lstsq(design, s, rcond=None)[0]
    return float(1.0 - residual.var() / s.var())


def _losses(W: np.ndarray, A: np.ndarray, B: np.ndarray, d: int = 1) -> tuple[float, float]:
    """Each group's average loss of the projection on W's columns: (||G_d||^2 - ||G W||^2) / m_G."""
    la, lb = ((_best_rank_d(G, d) - float(((G @ W) ** 2).sum())) / len(G) for G in (A, B))
    return la, lb


def main(splits: int = 10) -> None:
    rows, cpu = [], []
    samadi_sdp(np.eye(3), np.eye(3)[::-1], 1)  # cvxpy and SCS imported before the clock runs
    for seed in range(splits):
        split = load_split(CrimeParams(), np.random.default_rng(seed))
        X = split.X_train - split.X_train.mean(0)
        s = split.a_train.astype(bool)
        A, B = X[s], X[~s]
        pca = np.linalg.eigh(X.T @ X)[1][:, -1:]
        start = time.process_time()
        samadi = samadi_lp_round(samadi_sdp(A, B, 1)[0], A, B, 1)[0]
        middle = time.process_time()
        olfat = np.linalg.eigh(olfat_aswani_sdp(X, s, 1, 0.0, 0.1))[1][:, -1:]
        cpu.append((middle - start, time.process_time() - middle))
        row = []
        for W in (pca, samadi, olfat):
            row += [*_losses(W, A, B), _r2(X @ W, s.astype(float)), W.shape[1]]
        rows.append(row)
    mean = np.mean(rows, axis=0)
    print(f"{splits} splits; loss = reconstruction error less the group's best rank-1 error, per row")
    print("representation      | loss a=1 | loss a=0 (minority) | R^2 of s | dimensions")
    for i, name in enumerate(("PCA, leading direction", "fpca1 (Samadi et al.)", "fpca2 (Olfat and Aswani)")):
        la, lb, r2, dims = mean[4 * i: 4 * i + 4]
        print(f"{name:24s} | {la:8.3f} | {lb:19.3f} | {r2:8.3f} | {dims:.1f}")
    samadi_s, olfat_s = np.median(cpu, axis=0)
    print(f"median CPU time of a solve: fpca1 {samadi_s:.2f} s (SDP and LP), fpca2 {olfat_s:.2f} s (SDP)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
