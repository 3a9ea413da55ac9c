"""Bayes-optimal inference of A from a randomized-response release, optionally with auxiliary data.

The release of ``rr-release`` (Mozannar, Ohannessian & Srebro, ICML 2020,
Sec. 3) is eps-LDP: Q(z | a) / Q(z | a') <= e^eps. Whoever reads Z (the data
center that asked for it, an observer of the wire) can do no better than the
Bayes rule

    P(A = a | Z = z, X = x)  ∝  Q(z | a) P(A = a | x),

with P(A | x) the adversary's prior: the population share of each group
(estimated from Z itself by inverting the mechanism, Sec. 4) when it knows
nothing else, or a classifier of A from X trained on auxiliary data with A
(the black-box-auxiliary threat model).

Two objectives. ``"accuracy"`` is the MAP rule (most individuals right).
``"balanced"`` maximises balanced accuracy, parley's leakage (Def. 5.1 of
the query-leakage paper): the Bayes rule under equal class weights,
argmax_a P(A = a | z, x) / P(A = a). From Z alone and binary A it reports
a_hat = z, whose expected balanced accuracy is exactly pi = e^eps / (1 + e^eps),
the bound 100 e^eps / (1 + e^eps) every eps-DP test meets (TPR <= e^eps FPR
and TNR <= e^eps FNR give TPR + TNR <= 2 e^eps / (1 + e^eps)). With
auxiliary features the leakage may exceed that bound: the bound caps what the
release adds, not what X already tells (the run reports the features-only
leakage beside it).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import Attack, AttackParams, Reconstruction, register_attack
from parley.protocols.errors import AttackError
from parley.protocols.estimators.rr_estimators import WITHHELD, debias_joint, rr_matrix

__all__ = ["RRBayesAttack", "RRBayesParams", "bayes_guess", "posterior", "prior_from_release"]

CURIOUS, OBSERVER, AUXILIARY = "curious-data-center", "passive-observer", "black-box-auxiliary"
NEEDS_AUX = "attack 'rr-bayes' with auxiliary = {k} needs auxiliary features and attributes; got none"


class RRBayesParams(AttackParams):
    """Parameters of ``rr-bayes``."""

    objective: Literal["balanced", "accuracy"] = Field(
        "balanced", description="maximise balanced accuracy (parley's leakage) or plain accuracy")
    auxiliary: int = Field(0, ge=0, description="rows of auxiliary data with A for a model of A from X (0: Z only)")


def prior_from_release(z: np.ndarray, epsilon: float, groups: int) -> np.ndarray:
    """Group shares P(A = a) estimated from Z by inverting the mechanism (Sec. 4), clipped into the simplex."""
    reported = z[z != WITHHELD]
    freq = np.bincount(reported, minlength=groups) / max(reported.size, 1)
    share = np.clip(debias_joint(freq, epsilon, groups), 1e-6, None)
    prior: np.ndarray = share / share.sum()
    return prior


def posterior(z: np.ndarray, epsilon: float, groups: int, prior: np.ndarray) -> np.ndarray:
    """P(A = . | Z = z_i, x_i) for every i: rows of Q(z_i | .) times the prior (k,) or (n, k), normalised.

    A withheld z (-1) carries no likelihood: the posterior is the prior.
    """
    likelihood = rr_matrix(epsilon, groups)[np.where(z == WITHHELD, 0, z)]   # row z of Pi: Q(z | a) over a
    likelihood[z == WITHHELD] = 1.0
    joint = likelihood * np.broadcast_to(prior, likelihood.shape)
    posterior: np.ndarray = joint / joint.sum(axis=1, keepdims=True)
    return posterior


def bayes_guess(post: np.ndarray, shares: np.ndarray | None = None) -> np.ndarray:
    """MAP guess, or with ``shares`` the balanced-accuracy rule argmax_a post[:, a] / shares[a]."""
    score = post if shares is None else post / shares[None, :]
    guess: np.ndarray = np.argmax(score, axis=1).astype(np.int8)
    return guess


@register_attack
class RRBayesAttack(Attack[RRBayesParams]):
    """Bayes-optimal reading of A from a randomized-response release (and a model of A from X)."""

    name: ClassVar[str] = "rr-bayes"
    Params = RRBayesParams
    threat_models: ClassVar[tuple[str, ...]] = (CURIOUS, OBSERVER, AUXILIARY)
    flows: ClassVar[tuple[str, ...]] = ("rr-release",)
    summary: ClassVar[str] = "Bayes rule on a randomized-response release of A, optionally with a model of A from X"

    def infer(self, z: np.ndarray, epsilon: float, groups: int, X: np.ndarray | None = None,
              X_aux: np.ndarray | None = None, a_aux: np.ndarray | None = None) -> Reconstruction:
        """Guess A of every individual of the release; with ``auxiliary`` rows, also from their features ``X``."""
        z = np.asarray(z).astype(np.int64)
        info: dict[str, float | int] = {}
        if self.params.auxiliary:
            if X is None or X_aux is None or a_aux is None or len(a_aux) == 0:
                raise AttackError(NEEDS_AUX.format(k=self.params.auxiliary))
            from sklearn.linear_model import LogisticRegression  # the adversary's model of A from X

            model = LogisticRegression(max_iter=1000).fit(X_aux, a_aux)
            prior = np.zeros((X.shape[0], groups))
            prior[:, model.classes_.astype(int)] = model.predict_proba(X)
            prior = np.clip(prior, 1e-9, None)
            shares = np.bincount(np.asarray(a_aux, dtype=np.int64), minlength=groups) / len(a_aux)
            shares = np.clip(shares, 1e-9, None)
            features_only = bayes_guess(prior, shares if self.params.objective == "balanced" else None)
            info["features_only_guess_share"] = float(features_only.mean())
            self.features_only = features_only
        else:
            shares = prior_from_release(z, epsilon, groups)
            prior = shares
        post = posterior(z, epsilon, groups, prior)
        a_hat = bayes_guess(post, shares if self.params.objective == "balanced" else None)
        n = z.shape[0]
        return Reconstruction(indices=np.arange(n), a_hat=a_hat, decided=np.ones(n, bool), queries=0,
                              info={**info, "mean_posterior_max": float(post.max(axis=1).mean())})

    def features_only_guess(self) -> np.ndarray | None:
        """The guess from the auxiliary model alone (None without auxiliary data): what X tells without Z."""
        return getattr(self, "features_only", None)
