"""Remark 3 of the query-leakage paper: n - 1 statistical-parity queries reveal every attribute.

Hamman, Chen & Dutta (FAccT 2023), Thm. 1 solves SP = H v with n models of rank n, where
v_j = 1/N1 if a_j = 1 and v_j = -1/N0 if a_j = 0. Remark 3 notes that n - 1 queries suffice:
the last individual follows from the group sizes. The same fact as one linear equation that
needs no answer at all:

    sum_j v_j = N1 (1/N1) - N0 (1/N0) = 0    for every A with N0, N1 >= 1,

so the n - 1 answered rows of Alg. 1 (the base model with the prediction of individual i
flipped, i = every individual but one) together with the row 1^T and the answer 0 form a
square system. It has full rank unless the base model's predictions are degenerate: its
null space holds v_i = -c (1 - 2 h0_i) for the flipped individuals, v_l = -sum of those for
the one left out, with c (1 - K - h0_l (n - 1 - 2 K)) = 0 where K counts the flipped
individuals the base model accepts (the determinant vanishes only for K = 1 with h0_l = 0,
or K = n - 2 with h0_l = 1). The attack leaves out an individual whose row keeps the system
regular and solves it with the decoder of Thm. 1
(:func:`parley.parties.attacks.decoders.sp_decoders.decode_linear`), whose error bounds
decide each sign; under raw answers it recovers every attribute with n - 1 queries.
Remark 3's caveat (reading N1 from 1/N1 loses precision when N0 and N1 are large and close)
does not apply: the decode reads signs, and the sizes follow as counts.
"""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import (
    Answer,
    Attack,
    AttackParams,
    Probe,
    Probes,
    Reconstruction,
    ask,
    probe_accuracy,
    register_attack,
)
from parley.parties.attacks.decoders import sp_decoders as decoders
from parley.parties.attacks.decoders.answer_error import rounding_error
from parley.parties.attacks.query_leakage.probes import flip_one
from parley.protocols.errors import AttackError

__all__ = ["NMinusOneParams", "NMinusOneReveal", "left_out", "sum_closed_system"]

SINGULAR = ("the n - 1 flip-one models and sum(v) = 0 are singular for this base model (it accepts {k} of the "
            "flipped individuals); no individual can be left out")
UNDECIDED = "the n - 1 answers decided none of n={n} individuals (error bound {radius:.3g} on v)"


def sum_closed_system(H: np.ndarray, answers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Append the row 1^T with the answer 0 (sum_j v_j = 0 holds for every A with both groups present)."""
    H = np.asarray(H, dtype=np.float64)
    return np.vstack([H, np.ones((1, H.shape[1]))]), np.concatenate([np.asarray(answers, dtype=np.float64), [0.0]])


def left_out(base_predictions: np.ndarray, rng: np.random.Generator) -> int:
    """An individual l whose flip-one row may be dropped: the system of the others and 1^T stays regular.

    With K = the number of the others the binary base model accepts, the system is singular iff
    1 - K - h0_l (n - 1 - 2 K) = 0 (module docstring); a random regular choice is returned.
    """
    h0 = np.asarray(base_predictions, dtype=np.float64)
    n, total = h0.size, float(h0.sum())
    for out in rng.permutation(n):
        k = total - h0[out]
        if abs(1.0 - k - h0[out] * (n - 1 - 2.0 * k)) > 0.5:
            return int(out)
    raise AttackError(SINGULAR.format(k=int(total)))


class NMinusOneParams(AttackParams):
    """Parameters of the n - 1 reveal: how many models travel in one query message."""

    batch: int = Field(default=100, ge=1, description="models per query message")


@register_attack
class NMinusOneReveal(Attack[NMinusOneParams]):
    """Remark 3: n - 1 flip-one models (Alg. 1 without one row) and sum(v) = 0 reveal A."""

    name = "linear-n-1"
    Params = NMinusOneParams
    summary = "n - 1 flip-one models plus sum(v) = 0: A from a square system (Remark 3)"

    def planned_queries(self) -> int:
        """n - 1 models."""
        return self.view.n - 1

    def run(self) -> Generator[Probe | Probes | None, Answer, Reconstruction]:
        n, p = self.view.n, self.params
        base = self.view.require("base_predictions").astype(np.float64)
        skip = left_out(base, self.rng)
        flipped = np.delete(np.arange(n), skip)
        H = flip_one(base, flipped)
        parts, decimals = [], None
        for start in range(0, H.shape[0], p.batch):
            values, decimals = yield from ask("sp", H[start:start + p.batch], True, "linear system, n - 1 models")
            parts.append(values)
        answers = np.concatenate(parts)
        M, rhs = sum_closed_system(H, answers)
        error = decoders.default_tol(answers) if decimals is None else \
            rounding_error(answers, decimals) + decoders.default_tol(answers)
        dec = decoders.decode_linear(M, rhs, answer_error=np.append(np.broadcast_to(error, answers.shape), 0.0))
        if not dec.decided.any():
            raise AttackError(UNDECIDED.format(n=n, radius=dec.info["max_radius"]))
        info = {"decoder": dec.decoder, "certified": dec.certified, "decode_s": dec.seconds, "left_out": skip,
                "undecided": int((~dec.decided).sum()), "max_radius": dec.info["max_radius"],
                "N1": int(dec.a_hat.sum()), "N0": int(n - dec.a_hat.sum()), **probe_accuracy(H, self.view)}
        return Reconstruction(np.arange(n), dec.a_hat, dec.decided, queries=H.shape[0], info=info)
