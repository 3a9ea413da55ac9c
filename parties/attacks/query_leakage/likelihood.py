"""``likelihood``: Dinur-Nissim reconstruction with the mechanism's own noise law as the decoder.

The noise-robust attacks of parley (``linear``, ``compressed-sensing`` with the ``robust`` decoder)
treat a DP answer as an exact value with an unknown error. A DP protocol, however, publishes how its
noise is drawn: the adversary who reads its code knows the mechanism, epsilon, and (for ``laplace``
and ``dp-counts``) the exact scale of every answer, which the answer records; for the smooth
protocols the scale is factor x S(N0, N1)/epsilon, a known function of the group sizes that each
candidate A fixes. So the posterior of A is computable, and this attack decodes with it
(:mod:`parley.parties.attacks.decoders.likelihood`):

* ``gibbs``: posterior marginals by Gibbs sampling under the exact likelihood, any noise law
  (Laplace, Cauchy, discrete Laplace, discrete Gaussian); a_j = 1 where the likelihood ratio of
  the marginal exceeds 1 (the Bayes rule for balanced accuracy);
* ``milp``: the exact maximum-likelihood A by a mixed-integer LP (HiGHS), for the Laplace laws, with
  N1 restricted to the central 99.8 % of Binomial(n, 1 - n0_prior);
* ``auto``: ``milp`` for a Laplace law when n <= ``milp_max_n``, else ``gibbs``.

The attack asks one query of m models (Dinur & Nissim, PODS 2003: random subset queries;
``design = "random-binary"``, each h_ij a fair coin) or of Alg. 2 perturbations of the base
model's scores (``design = "uniform"``, realistic). One query is one DP release: the run spends
epsilon once, so its leakage stands beside the bound of that epsilon. Against ``dp-counts`` it
reads the released noisy centred group-1 sums and size (the answer's ``statistics`` and ``centre``), a
linear model in A; a one-model query's answer is the pair of group 1's sum and its complement (``release``
``"sum-pair"``), decoded as two linear rows under its own Laplace law.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, Literal

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import (
    Answer,
    Attack,
    AttackParams,
    Probe,
    Reconstruction,
    probe_accuracy,
    register_attack,
)
from parley.parties.attacks.decoders import likelihood as lik
from parley.parties.attacks.query_leakage.probes import random_binary, uniform_perturbations
from parley.protocols.errors import AttackError

__all__ = ["LikelihoodParams", "LikelihoodReveal", "NO_RELEASE"]

NO_RELEASE = ("the answer carries no public noise notes: the likelihood attack decodes DP answers only "
              "(laplace, smooth-laplace, smooth-cauchy, dp-counts)")


class LikelihoodParams(AttackParams):
    """Parameters of the likelihood attack: the query design, its size and the decoder."""

    design: Literal["random-binary", "uniform"] = Field(
        default="random-binary", description="random subsets (Dinur-Nissim) or Alg. 2 perturbations within b of h0")
    m: int | None = Field(default=None, ge=1, description="models in the one query (default n)")
    b: float = Field(default=0.1, gt=0.0, le=0.5, description="perturbation bound of the uniform design")
    decoder: Literal["auto", "gibbs", "milp"] = Field(
        default="auto",
        description="gibbs (posterior marginals, any law), milp (exact maximum likelihood, Laplace laws), or auto")
    n0_prior: float = Field(default=0.1, gt=0.0, lt=1.0,
                            description="public share of group a = 0, the prior (Adult, race: 9.8 % Black)")
    sweeps: int = Field(default=300, ge=2, description="Gibbs sweeps over all individuals (half are burn-in)")
    milp_max_n: int = Field(default=200, ge=2, description="auto: largest n decoded by the MILP")
    milp_time_limit: float = Field(default=20.0, gt=0.0, description="seconds per MILP (HiGHS)")


def warm_start(model: lik.LikelihoodModel, prior: float) -> np.ndarray:
    """A in {0, 1}^n from box-constrained least squares on the linear model, thresholded at 1/2."""
    from scipy import optimize  # scipy is imported where it is used: design.md, "Start-up"

    n = model.H.shape[1]
    if isinstance(model, lik.SumModel):
        A, y = model.H, model.y
    else:
        n1 = min(max(1, round(prior * n)), n - 1)
        c = 1.0 / n1 + 1.0 / (n - n1)
        A, y = c * model.H, model.y + model.rowsum / (n - n1)
    z = optimize.lsq_linear(A, y, bounds=(0.0, 1.0)).x
    guess: np.ndarray = (z >= 0.5).astype(np.int8)
    return guess


def n1_window(n: int, prior: float, tail: float = 1e-3) -> np.ndarray:
    """Group-1 sizes the MILP tries: the central 1 - 2 tail of Binomial(n, prior), within 1..n-1."""
    from scipy import stats

    lo, hi = stats.binom.ppf([tail, 1.0 - tail], n, prior)
    return np.arange(max(1, int(lo)), min(n - 1, int(hi)) + 1)


@register_attack
class LikelihoodReveal(Attack[LikelihoodParams]):
    """One query of m models, decoded by the posterior under the mechanism's published noise law."""

    name = "likelihood"
    Params = LikelihoodParams
    summary = "one query of m models; A by maximum likelihood / MAP under the DP mechanism's own noise law"

    def planned_queries(self) -> int:
        """m models in one query."""
        return self.params.m or self.view.n

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        n, p = self.view.n, self.params
        m = p.m or n
        if p.design == "random-binary":
            H = random_binary(n, m, self.rng)
        else:
            H = uniform_perturbations(self.view.require("base_scores"), m, p.b, self.rng)
        answer = yield Probe("sp", H, f"likelihood decoder: {m} models ({p.design})")
        if answer.release is None:
            raise AttackError(NO_RELEASE)
        model = lik.model_from_release("sp", H, answer.values, answer.release)
        prior = 1.0 - p.n0_prior
        decoder = p.decoder
        if decoder == "auto":
            decoder = "milp" if model.law.family == "laplace" and n <= p.milp_max_n and (
                not isinstance(model, lik.SumModel) or model.size_law is None
                or model.size_law.family == "laplace") else "gibbs"
        info: dict[str, Any] = {"decoder": decoder, "noise": model.law.family, "models": m,
                                **probe_accuracy(H, self.view)}
        if decoder == "milp":
            window = None if isinstance(model, lik.SumModel) else n1_window(n, prior)
            a_hat, extra = lik.milp_map(model, window, p.milp_time_limit)
            info.update(extra)
        else:
            marg, extra = lik.gibbs_marginals(model, prior, self.rng, p.sweeps, start=warm_start(model, prior))
            info.update(extra)
            # Bayes rule for balanced accuracy: a_j = 1 where the posterior odds exceed the prior odds
            a_hat = (marg > prior).astype(np.int8)
            info["posterior_mean_n1"] = float(marg.sum())
        info["decode_s"] = round(float(info["decode_s"]), 3)
        if not math.isfinite(float(model.loglik(model.H @ a_hat.astype(np.float64), int(a_hat.sum())))):
            info["warning"] = "the decoded A has zero likelihood (a group is empty)"
        return Reconstruction(np.arange(n), a_hat, np.ones(n, dtype=bool), queries=m, info=info)
