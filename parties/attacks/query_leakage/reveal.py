"""Attribute-Reveal at full strength: the linear system, compressed sensing, and precision probes.

All three are attacks of a curious data center on statistical-parity answers
(query-leakage paper, Hamman, Chen, Dutta, FAccT 2023, Sec. 3):

* ``linear`` (Thm. 1, Alg. 1): n models whose prediction matrix has rank n;
  solve SP = H v, read a_j from the sign of v_j.
* ``compressed-sensing`` (Thm. 2, Alg. 2): rounds of bounded uniform
  perturbations of the base model's scores, decoded after each round; stops as
  soon as a decoder certifies a binary A that reproduces every answer (or at the
  query cap). Group sizes come first, from one double query (Remark 4).
  ``design = "paired"`` (parley's design) asks the same Alg. 2 models, each
  marginally i.i.d., as a reference and block re-draws of it, and reads each
  block exactly from an answer difference (:mod:`parley.parties.attacks.query_leakage.paired`).
* ``precision`` (parley's design): an answer released in float64 carries about
  45 bits. After one query on the base scores h0, each probe moves a block of K
  individuals by ±b·2^-k (k = 0..K-1; |h - h0| <= b everywhere), so

      SP(h) - SP(h0) = (1/N1) sum_j d_j - c * sum_{j in block, a_j = 0} d_j,  c = 1/N1 + 1/N0,

  and the second sum, a binary number with one digit per individual, is read
  off exactly. K is as large as the released precision allows (about 37 at
  n = 1,000 in float64, 2 at four decimals). The first block is narrower so that
  its answer also singles out N1 among every possible size: no query is spent on
  group sizes. Every block's decode is checked; a block that does not decode is
  asked again in halves. Each block is asked as its K entries only (edits of the
  kept base scores, :class:`parley.protocols.queries.Edits`), and the compliance
  party answers it from the base's exact group sums, so an answer costs O(K), not
  O(n), anywhere on its way; the answers are correctly rounded, which makes the
  float64 allowance ``safety_ulps`` a proven bound
  (:mod:`parley.parties.attacks.decoders.answer_error`, bound (E)).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator
from typing_extensions import TypeVar

from parley.parties.attacks.base import (
    Answer,
    Attack,
    AttackerView,
    AttackParams,
    Probe,
    Probes,
    Reconstruction,
    probe_accuracy,
    register_attack,
)
from parley.parties.attacks.decoders import sp_decoders as decoders
from parley.parties.attacks.decoders.answer_error import UNIT_ROUNDOFF, difference_error, rounding_error
from parley.parties.attacks.decoders.answer_error import answer_error as answer_error_bound
from parley.parties.attacks.query_leakage import paired
from parley.parties.attacks.query_leakage.counting import counting_bound
from parley.parties.attacks.query_leakage.group_sizes import decimals_to_identify
from parley.parties.attacks.query_leakage.probes import (
    _INSIDE,
    flip_one,
    max_deviation,
    precision_block_values,
    random_binary,
    uniform_perturbations,
)
from parley.parties.attacks.query_leakage.targeted import decide_from_steps
from parley.protocols.errors import AttackError, ConfigError
from parley.protocols.queries import Edits

__all__ = ["CompressedSensing", "CompressedSensingReveal", "LinearReveal", "PrecisionReveal"]

NO_SIZES = ("group sizes are not identified at {decimals} decimals; the {name} attack needs N0 and N1 (answers to "
            "{need} tell every size of n={n} apart)")
UNCERTIFIED = ("no decoder certified a reconstruction with {m} probe models for n={n}: the result is the decoder's "
               "best guess (scored as such), not a proven recovery")
SIZES_AMBIGUOUS = "the first block's answer fits no group size: answers are noisy or not exact ({detail})"
PRECISION_TOO_COARSE = ("the precision attack cannot read even one individual per answer at {decimals} decimals: "
                        "an answer difference may be off by {err:.3g}, more than a third of the smallest move "
                        "b c = {b} x 4/{n}; it needs answers to {need} at least")
PRECISION_UNDECIDED = ("the precision attack read every block but {undecided} of {n} individuals stay undecided after "
                       "{queries} queries: {sizes} group sizes still fit at {decimals} decimals and decode them "
                       "differently; it needs answers to {need} to single out the group sizes")
LINEAR_NEEDS_PRECISION = ("the linear system cannot decide anyone at {decimals} decimals: each v_j may be off by "
                          "{r:.3g}, at least 2/n = {bound:.3g}, the largest |v_j| of the larger group; it needs "
                          "answers to {need}")
LINEAR_UNDECIDED = ("the linear system decided none of n={n} individuals at {decimals} decimals (error bound "
                    "{radius:.3g} on v); it needs answers to {need}")
LINEAR_PARTIAL = ("{undecided} of n={n} individuals stay undecided at {decimals} decimals: their error bounds "
                  "include both groups")
CS_TOO_COARSE = ("at {decimals} decimals any attack needs at least {need} answers to single out A (counting bound), "
                 "more than the cap of {cap} probe models; it needs answers to {finer}, or a higher attack.max_queries")
PRECISION_CAP = "query cap {cap} reached with {left} individuals unread at {decimals} decimals"
ONE_PERSON_NO_FIT = "a one-person block did not decode at precision {decimals}: the answers are not exact"
PAIRED_WITH_PRIOR = ("attack.n0_prior applies to the i.i.d. designs (uniform, binary); the paired design reads the "
                     "group sizes from its first block and needs exact answers")
PAIRED_REFERENCE = "paired-reference"
DECODERS: dict[str, Callable[..., decoders.Decoded]] = {
    "fastest": decoders.decode_fastest, "l1": decoders.decode_l1, "box-count": decoders.decode_box_count,
    "amp": decoders.decode_amp, "robust": decoders.decode_robust,
}


def _rows(H: np.ndarray, batch: int, purpose: str) -> Generator[Probe, Answer, tuple[np.ndarray, int | None]]:
    """Ask ``H`` in envelopes of ``batch`` models; return all answers and their precision."""
    out, decimals = [], None
    for start in range(0, H.shape[0], batch):
        answer = yield Probe("sp", H[start:start + batch], purpose)
        out.append(np.asarray(answer.values, dtype=np.float64))
        decimals = answer.decimals
    return np.concatenate(out), decimals


def _sizes(view: AttackerView, rng: np.random.Generator) -> Generator[Probe, Answer, tuple[int, int, int | None]]:
    """Remark 4 with realistic models: base predictions and the same flipped at one individual."""
    base = view.require("base_predictions").astype(np.float64)
    j = int(rng.integers(view.n))
    H = flip_one(base, np.array([j]))
    answers, decimals = yield from _rows(np.vstack([base, H]), 2, "group sizes (double query)")
    step = (answers[1] - answers[0]) * (1.0 - 2.0 * base[j])
    _, _, info = decide_from_steps(np.array([step]), view.n, decimals)
    if "N0" not in info:
        need = decimals_to_identify(view.n)
        raise AttackError(NO_SIZES.format(name="reveal", decimals=decimals, n=view.n,
                                          need="exact float64 answers" if need is None else f"{need} decimals"))
    return info["N0"], info["N1"], decimals


class LinearParams(AttackParams):
    design: Literal["flip-one", "random-binary", "uniform"] = Field(
        default="flip-one", description="flip-one (Alg. 1), random binary models, or bounded uniform perturbations")
    b: float = Field(default=0.1, gt=0.0, le=0.5, description="perturbation bound of the uniform design")
    batch: int = Field(default=100, ge=1, description="models per query message")


@register_attack
class LinearReveal(Attack[LinearParams]):
    """Thm. 1 / Alg. 1: n models of rank n; A from the linear system SP = H v."""

    name = "linear"
    Params = LinearParams
    summary = "n probe models of full rank; solve SP = H v (Thm. 1, Alg. 1)"

    def planned_queries(self) -> int:
        """n models, asked ``batch`` at a time."""
        return self.view.n

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        n, p = self.view.n, self.params
        if p.design == "flip-one":
            H = flip_one(self.view.require("base_predictions"), np.arange(n))
        elif p.design == "random-binary":
            H = random_binary(n, n, self.rng)
        else:
            H = uniform_perturbations(self.view.require("base_scores"), n, p.b, self.rng)
        purpose = f"linear system ({p.design})"
        first, decimals = yield from _rows(H[:p.batch], p.batch, purpose)
        if decimals is not None and p.batch < n:
            # Before asking the rest: can the answers at this precision decide anyone? (Thm. 1 with error bars)
            unit = _unit_radius(H)
            if unit is not None and float(unit.min()) * _linear_answer_error(1.0, decimals) >= 2.0 / n:
                raise AttackError(LINEAR_NEEDS_PRECISION.format(
                    decimals=decimals, r=float(unit.min()) * _linear_answer_error(1.0, decimals), bound=2.0 / n,
                    need=_linear_needed(unit, n)))
        answers = first
        if p.batch < n:
            rest, decimals = yield from _rows(H[p.batch:], p.batch, purpose)
            answers = np.concatenate([first, rest])
        err = None if decimals is None else _linear_answer_error(answers, decimals)
        dec = decoders.decode_linear(H, answers, answer_error=err)
        if not dec.decided.any():
            unit = _unit_radius(H)
            raise AttackError(LINEAR_UNDECIDED.format(n=n, decimals=decimals, radius=dec.info["max_radius"],
                                                      need="a finer precision" if unit is None
                                                      else _linear_needed(unit, n)))
        info = {"decoder": dec.decoder, "certified": dec.certified, "decode_s": dec.seconds,
                "undecided": int((~dec.decided).sum()), "max_radius": dec.info["max_radius"],
                **probe_accuracy(H, self.view)}
        if not dec.decided.all():
            info["warning"] = LINEAR_PARTIAL.format(undecided=int((~dec.decided).sum()), n=n, decimals=decimals)
        elif not dec.certified:
            info["warning"] = "every individual is decided but the groups do not reproduce the answers: not exact"
        return Reconstruction(np.arange(n), dec.a_hat, dec.decided, queries=n, info=info)


def _cs_answer_error(released: np.ndarray, decimals: int) -> np.ndarray:
    """Per-answer error bound of rounded answers for the i.i.d. decoders: bound (R) plus their float tolerance."""
    return rounding_error(released, decimals) + decoders.default_tol(released)


def _check_counting(n: int, n0: int, b: float, decimals: int, cap: int) -> None:
    """Stop before asking when the counting bound says ``cap`` answers at this precision cannot single out A."""
    need = counting_bound(n, n0, b, decimals)
    if need > cap:
        finer = next((f"{d} decimals" for d in range(decimals + 1, 18) if counting_bound(n, n0, b, d) <= cap),
                     "exact float64 answers")
        raise AttackError(CS_TOO_COARSE.format(decimals=decimals, need=need, cap=cap, finer=finer))


def _linear_answer_error(released: np.ndarray | float, decimals: int) -> np.ndarray | float:
    """Per-answer error bound for the linear decoder: bound (R) plus its float64 tolerance (1e-9 relative)."""
    out = np.asarray(released, dtype=np.float64)
    return rounding_error(out, decimals) + decoders.default_tol(np.atleast_1d(out))


def _unit_radius(H: np.ndarray) -> np.ndarray | None:
    """r_j per unit of answer error (linear in it), or None when H has no usable inverse."""
    try:
        r = decoders.linear_radius(H, 1.0)
    except np.linalg.LinAlgError:
        return None
    return r if np.all(np.isfinite(r)) else None


def _linear_needed(unit: np.ndarray, n: int) -> str:
    """The coarsest precision at which every individual's interval is sure to exclude 0: 2 r_j < 1/(n - 1)."""
    for d in range(1, 18):
        if 2.0 * float(unit.max()) * _linear_answer_error(1.0, d) < 1.0 / (n - 1):
            return f"{d} decimals"
    return "exact float64 answers"


class CompressedSensingParams(AttackParams):
    design: Literal["uniform", "binary", "paired"] = Field(
        default="uniform", description="Alg. 2 i.i.d. perturbations, random binary, or Alg. 2 models asked in pairs "
                                       "(a reference and block re-draws of it, read exactly by meet in the middle; "
                                       "parley's design, which ignores round_size, decoder and stop)")
    b: float = Field(default=0.1, gt=0.0, le=0.5, description="perturbation bound (Alg. 2)")
    round_size: int = Field(default=25, ge=1, description="probe models added between two decodes")
    max_queries: int | None = Field(default=None, ge=1, description="probe models at most (default n)")
    decoder: Literal["fastest", "l1", "box-count", "amp", "robust"] = Field(
        default="fastest", description="decoder of the i.i.d. designs: 'fastest' (AMP, then the box-and-count LP), "
        "'l1' (Alg. 2's basis pursuit), 'box-count' (the LP with 0 <= z <= 1 and sum z = N0), 'amp' (approximate "
        "message passing) or 'robust' (least-absolute-deviation LP, for noisy answers)")
    stop: Literal["certified", "cap"] = Field(
        default="certified", description="stop at the first certified decode, or always ask max_queries")
    n0_prior: float | None = Field(
        default=None, gt=0.0, lt=1.0,
        description="assume N0 = round(share * n) from public statistics (e.g. a census) instead of querying the "
                    "group sizes; needed when answers are noisy")
    safety_ulps: float = Field(default=16.0, gt=0.0,
                               description="paired: float64 error allowance of an answer difference, in ulps of 1")
    margin: float = Field(default=256.0, ge=1.0,
                          description="paired, float64: a block is read only if one subset fits within margin x the "
                                      "error allowance (rounded answers: 1, their error bound is exact)")
    ambiguity: float = Field(default=0.01, gt=0.0, lt=1.0,
                             description="paired: expected wrong candidates per block the block width allows")

    @model_validator(mode="after")
    def _paired_reads_its_own_sizes(self) -> CompressedSensingParams:
        if self.design == "paired" and self.n0_prior is not None:
            raise ConfigError(PAIRED_WITH_PRIOR)
        return self


#: The parameters of a compressed-sensing attack (:class:`CompressedSensingParams`, the default, or an extension).
C = TypeVar("C", bound=CompressedSensingParams, default=CompressedSensingParams, covariant=True)


class CompressedSensing(Attack[C]):
    """Thm. 2 / Alg. 2, generic in its parameters: the attack :class:`CompressedSensingReveal` registers.

    An attack that post-processes its decode (reconstruction correction) subclasses it with its own model.
    """

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        if self.params.design == "paired":
            return (yield from self._paired())
        n, p = self.view.n, self.params
        if p.n0_prior is None:
            n0, n1, decimals = yield from _sizes(self.view, self.rng)
            size_queries = 2
        else:  # an assumption about the population, not a query: no answer is spent on it
            n0 = min(max(1, round(p.n0_prior * n)), n - 1)
            n1, decimals, size_queries = n - n0, None, 0
        cap = p.max_queries or n
        decode = DECODERS[p.decoder]
        if decimals is not None:
            _check_counting(n, n0, p.b, decimals, cap)
        H = np.empty((0, n))
        sp = np.empty(0)
        dec, proofs = None, 0
        while H.shape[0] < cap:
            k = min(p.round_size, cap - H.shape[0]) if p.stop == "certified" else cap
            if p.design == "uniform":
                rows = uniform_perturbations(self.view.require("base_scores"), k, p.b, self.rng)
            else:
                rows = random_binary(n, k, self.rng)
            answers, decimals = yield from _rows(rows, k, f"compressed sensing ({p.design}, b={p.b})")
            if H.shape[0] == 0 and decimals is not None and p.n0_prior is not None:
                _check_counting(n, n0, p.b, decimals, cap)
            H, sp = np.vstack([H, rows]), np.concatenate([sp, answers])
            if p.stop == "cap" and H.shape[0] < cap:
                continue
            err = None if decimals is None else _cs_answer_error(sp, decimals)
            tol = None if err is None else float(err.max())
            try:
                dec = decode(H, sp, n0, n1, tol=tol) if p.decoder != "fastest" \
                    else decode(H, sp, n0, n1, tol=tol, allow_uncertified=True)
            except AttackError:
                continue
            if dec.certified and err is not None:
                # Rounded answers: a fit within the error bars is not unique by itself; prove it (one LP).
                proofs += 1
                unique, farthest = decoders.prove_unique_binary(H, sp, n0, n1, dec.a_hat, err)
                dec.info.update(unique=unique, farthest_l1=farthest)
                if not unique:
                    dec = replace(dec, certified=False)
            if dec.certified:
                break
        self.decoded = dec  # kept for attacks that post-process the decode (reconstruction correction)
        if dec is None:
            raise AttackError(f"no decode succeeded with {H.shape[0]} probe models for n={n}")
        info = {"decoder": dec.decoder, "certified": dec.certified, "decode_s": dec.seconds, "probe_models": H.shape[0],
                **({} if dec.certified else {"warning": UNCERTIFIED.format(m=H.shape[0], n=n)}),
                **({"uniqueness_proofs": proofs} if proofs else {}),
                "N0": n0, "N1": n1, "probe_max_deviation": max_deviation(H, self.view.require("base_scores")),
                "counting_bound": counting_bound(n, n0, p.b, decimals), **probe_accuracy(H, self.view)}
        return Reconstruction(np.arange(n), dec.a_hat, dec.decided, queries=H.shape[0] + size_queries, info=info)

    def progress(self) -> Reconstruction | None:
        """Paired design: the blocks read since the previous call (each read is exact); i.i.d. decides at its end."""
        fresh = getattr(self, "_fresh", None)
        if not fresh:
            return None
        moved = np.concatenate(fresh)
        fresh.clear()
        return Reconstruction(moved, np.where(self._x_hat[moved], 0, 1).astype(np.int8),
                              np.ones(moved.size, dtype=bool),
                              queries=self._queries_so_far)

    def _paired(self) -> Generator[Probe, Answer, Reconstruction]:
        """Paired design (:mod:`parley.parties.attacks.query_leakage.paired`).

        A reference Alg. 2 model, then block re-draws of it.
        """
        n, p = self.view.n, self.params
        h0 = np.asarray(self.view.require("base_scores"), dtype=np.float64)
        cap = p.max_queries or n
        ref = uniform_perturbations(h0, 1, p.b, self.rng)[0]
        answer = yield Probe("sp", ref[None, :], f"paired design: reference model (Alg. 2, b={p.b})", keep=True,
                             name=PAIRED_REFERENCE)
        sp_ref, decimals = float(np.asarray(answer.values).reshape(-1)[0]), answer.decimals
        err = paired.answer_error(decimals, p.safety_ulps)
        margin = p.margin if decimals is None else 1.0  # a rounded answer's error bound is exact
        sizes = np.arange(1, n)  # every N1 is possible until an answer rules it out
        n1: int | None
        queries, c_worst = 1, float(_c(sizes, n).min())
        if paired.block_width(1, err, c_worst, p.b, margin, p.ambiguity) < 1:
            raise AttackError(paired.NEEDS_PRECISION.format(decimals=decimals, err=err, need=_decimals_needed(n, p)))
        if paired.block_width(sizes.size, err, c_worst, p.b, margin, p.ambiguity) < 1:
            # too coarse (or n too large) for a first block to rule out every size: Remark 4's double query
            _, n1, _ = yield from _sizes(self.view, self.rng)
            sizes, queries = np.array([n1]), queries + 2
        pending = self.rng.permutation(n)
        x_hat, decided = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        self._x_hat, self._fresh = x_hat, []  # filled as blocks are read; :meth:`progress` reports fresh ones
        self._queries_so_far = queries
        track = _ProbeTrack(self.view, h0, ref)
        reads, reasks, idle, worst_fit, seconds = 0, 0, 0, 0.0, 0.0
        first_width = width = None
        while pending.size and queries < cap:
            width = paired.block_width(sizes.size, err, float(_c(sizes, n).min()), p.b, margin, p.ambiguity)
            first_width = first_width or width
            row, moved, still, used = paired.redraw_block(h0, ref, pending, width, p.b, self.rng)
            answer = yield Probe("sp", row[None, :], f"paired design: block of {moved.size}",
                                 relative_to=PAIRED_REFERENCE)
            queries += 1
            self._queries_so_far = queries
            track.add(row)
            idle += still.size
            start = time.perf_counter()
            read = paired.read_block(row[moved] - ref[moved], float(np.asarray(answer.values).reshape(-1)[0]) - sp_ref,
                                     n, sizes, err, margin)
            seconds += time.perf_counter() - start
            if read.status == "none":
                raise AttackError(paired.NO_FIT.format(k=moved.size, window=read.window, sizes=sizes.size))
            if read.status == "ambiguous":  # the truth is among the candidates: keep their sizes, ask again later
                assert read.sizes is not None  # an "ambiguous" read carries the sizes
                sizes = read.sizes
                reasks += 1
                pending = np.concatenate([moved, still, pending[used:]])
                continue
            assert read.fit is not None  # a "read" carries x, n1 and fit
            x_hat[moved], decided[moved] = read.x, True
            self._fresh.append(moved)
            sizes = np.array([read.n1])
            reads += moved.size > 0
            worst_fit = max(worst_fit, read.fit)
            # unmoved individuals go first into the next block, so that every block but the last reads K
            pending = np.concatenate([still, pending[used:]])
        a_hat = np.where(x_hat, 0, 1).astype(np.int8)
        n1 = int(sizes[0]) if sizes.size == 1 else None
        count_ok = n1 is not None and int(x_hat.sum()) == n - n1
        certified = bool(decided.all() and count_ok and worst_fit <= 1.0)
        self.decoded = decoders.Decoded(a_hat=a_hat, decided=decided, certified=certified, residual=worst_fit,
                                        decoder="subset-sum", seconds=seconds)
        info = {"design": "paired", "decoder": "subset-sum", "certified": certified, "decode_s": seconds,
                "probe_models": queries, "block_width": width, "first_block_width": first_width,
                "blocks_read": reads, "ambiguous_blocks": reasks, "unmoved_redraws": idle,
                "worst_fit_tolerances": worst_fit, "N1_candidates": int(sizes.size),
                "probe_max_deviation": track.max_deviation, **track.accuracy(),
                "counting_bound": counting_bound(n, n - (n1 or int(np.median(sizes))), p.b, decimals,
                                                 max(abs(sp_ref), 1e-3))}
        if n1 is not None:
            info.update(N0=n - n1, N1=n1)
        if pending.size:
            info["warning"] = f"query cap {cap} reached with {pending.size} individuals unread"
        elif not count_ok:
            info["warning"] = "the blocks read do not add up to the group sizes: the answers are not exact"
        return Reconstruction(np.arange(n), a_hat, decided, queries=queries, info=info)


@register_attack
class CompressedSensingReveal(CompressedSensing[CompressedSensingParams]):
    """Thm. 2 / Alg. 2: bounded random perturbations, decoded round by round."""

    name = "compressed-sensing"
    Params = CompressedSensingParams
    summary = "rounds of perturbations within b of the base model, sparse decoding (Thm. 2, Alg. 2)"


class _ProbeTrack:
    """Realism of a probe sequence without keeping it: max |h - h0| and accuracies against the labels."""

    def __init__(self, view: AttackerView, h0: np.ndarray, first: np.ndarray) -> None:
        self.view, self.h0 = view, h0
        self.max_deviation = 0.0
        self.accuracies: list[float] = []
        self.add(first)

    def add(self, row: np.ndarray) -> None:
        self.max_deviation = max(self.max_deviation, float(np.abs(row - self.h0).max()))
        if self.view.y is not None:
            self.accuracies.append(float(((row >= 0.5) == (self.view.y == 1)).mean()))

    def accuracy(self) -> dict[str, float]:
        if self.view.y is None or self.view.base_predictions is None:
            return {}
        return {"base_accuracy": float((self.view.base_predictions == self.view.y).mean()),
                "probe_accuracy_min": min(self.accuracies), "probe_accuracy_max": max(self.accuracies)}


def _decimals_needed(n: int, p: CompressedSensingParams) -> str:
    """The coarsest released precision at which the paired design reads one individual per answer, any N1."""
    c_min = float(_c(np.arange(1, n), n).min())
    for d in range(1, 16):
        if paired.block_width(1, paired.answer_error(d, p.safety_ulps), c_min, p.b, 1.0, p.ambiguity):
            return f"{d} decimals"
    return "exact float64 answers"


class PrecisionParams(AttackParams):
    b: float = Field(default=0.1, gt=0.0, le=0.5, description="largest move of any score (|h - h0| <= b)")
    max_queries: int | None = Field(default=None, ge=2, description="queries at most (default n + 1)")
    safety_ulps: float = Field(default=16.0, gt=0.0,
                               description="float64 error allowance of an answer difference, in ulps of 1")
    first_block_slack: int = Field(default=16, ge=4, description="bits the first block leaves free to single out N1")
    ahead: int = Field(default=64, ge=1, description=(
        "blocks asked together, before their answers are read, once no answer can change them (1: one at a time)"))


def _precision_err(decimals: int | None, safety_ulps: float) -> float:
    """Largest error of a difference of two answers with |SP| <= 1 (answer_error module, bound (R))."""
    return float(2.0 * answer_error_bound(1.0, decimals, safety_ulps)[()]) + 2.0 * UNIT_ROUNDOFF


class _Blocks:
    """Decoding of precision blocks: the algebra of the module docstring, for many candidate N1 at once.

    Why a decode is never wrong (under the error model). A block's moves have
    magnitudes w_0 > w_1 > ... (b 2^-k as realised in float64); each exceeds the
    sum of the smaller ones by about the smallest, w_min. The observed
    T' = sum_j y_j w_j (y_j in {0, 1}, see :meth:`decode`) is within
    e_T = err / c + (float error of forming it) of the true one, where err bounds
    the error of the answer difference. Greedy extraction takes w_k iff the
    remainder is >= w_k - tol with tol = 2 err / c + the same float error; it
    reproduces the true digits as long as w_k - sum_{j>k} w_j > e_T + tol
    (about 3 err / c), which :meth:`width` guarantees for every size still
    possible (it sizes blocks for the smallest c, asking w_min c > 4 err, and
    never less than 3 err) and :meth:`decode` checks on the realised moves. A
    wrong N1 may decode too; the count check and the size probe rule it out.
    """

    def __init__(self, n: int, b: float, err: float) -> None:
        self.n, self.b, self.err = n, b, err

    def width(self, c: float) -> int:
        """Most individuals per block: the smallest digit b 2^-(K-1) c should exceed 4 x the error.

        1 when only a one-person block reads (its digit b c exceeds 3 x the error, what greedy
        extraction with tolerance 2 err / c needs), 0 when not even that. The digit is taken 1 %
        smaller than b 2^-(K-1), which covers _INSIDE and the float64 rounding of the realised moves.
        """
        digit = 0.99 * self.b * c
        if digit <= 3.0 * self.err * (1.0 + 1e-6):
            return 0
        ratio = digit / (4.0 * self.err)
        return 1 if ratio <= 1.0 else min(60, math.floor(math.log2(ratio)) + 1)

    def decode(self, d: float, moves: np.ndarray, n1: np.ndarray, err: float | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Bits x (1 = a_j is 0) of a block for each candidate N1, and which candidates decode cleanly.

        With y_j = x_j where the move is positive and 1 - x_j where it is negative,
        T' = sum_j y_j |d_j| is a sum of distinct, super-increasing weights:
        greedy digit extraction is exact and the remainder must vanish. A
        candidate whose weights are not separated by more than the tolerance
        (the block is too wide for its c) does not decode.
        """
        err = self.err if err is None else err
        n1 = n1.astype(np.float64)[:, None]
        c = 1.0 / n1 + 1.0 / (self.n - n1)
        total = (moves.sum() / n1 - d) / c  # T = sum over a_j = 0 of d_j, one per candidate
        weights = np.abs(moves)
        rem = total + weights[moves < 0].sum()
        # float error of forming T' and of the greedy subtractions, in T units
        slack = 8.0 * (moves.size + 4) * UNIT_ROUNDOFF * (float(weights.sum()) + np.abs(total) + np.abs(d) / c)
        tol = 2.0 * err / c + slack
        order = np.argsort(-weights)
        w_sorted = weights[order]
        gaps = w_sorted - (np.cumsum(w_sorted[::-1])[::-1] - w_sorted)  # w_k - sum of the smaller ones
        separated = (gaps.min() if gaps.size else np.inf) > 1.5 * tol + slack
        y = np.zeros((n1.shape[0], moves.size), dtype=bool)
        for k in order:
            take = rem >= weights[k] - tol
            y[:, k] = take[:, 0]
            rem = rem - np.where(take, weights[k], 0.0)
        ok = ((np.abs(rem) <= tol) & separated)[:, 0]
        x = np.where(moves[None, :] > 0, y, ~y)
        return x, ok


@dataclass
class _Read:
    """One answered precision block: who moved, by how much, the answer difference and its error bound."""

    block: np.ndarray
    moves: np.ndarray
    d: float
    err: float = 0.0
    #: (candidate sizes, bits, decodes) of the last decode: reused while the candidates are the same array
    decoded: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def decode(self, blocks: _Blocks, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_Blocks.decode` of this block for ``candidates``, decoded once per candidate array."""
        if self.decoded is None or self.decoded[0] is not candidates:
            x, ok = blocks.decode(self.d, self.moves, candidates, self.err)
            self.decoded = (candidates, x, ok)
        return self.decoded[1], self.decoded[2]


@register_attack
class PrecisionReveal(Attack[PrecisionParams]):
    """Precision probes: each float64 answer reads about 37 individuals' attribute at once."""

    name = "precision"
    Params = PrecisionParams
    summary = "blocks of scores moved by ±b·2^-k; one answer reads a whole block (parley's design)"

    def run(self) -> Generator[Probe | Probes | None, Answer, Reconstruction]:
        n, p = self.view.n, self.params
        h0 = np.asarray(self.view.require("base_scores"), dtype=np.float64)
        cap = p.max_queries or n + 1
        base = yield Probe("sp", h0[None, :], "base model scores", keep=True, name="base")
        sp0, decimals = float(base.values[0]), base.decimals
        # Error of a difference of two answers with |SP| <= 1: the float64 allowance, and for rounded
        # answers one unit of the last decimal plus the float error of the rounding (answer_error module).
        err = _precision_err(decimals, p.safety_ulps)
        blocks = _Blocks(n, p.b, err)
        candidates = np.arange(1, n)  # every N1 is possible until answers rule it out
        if blocks.width(float(_c(candidates, n).min())) < 1:
            raise AttackError(PRECISION_TOO_COARSE.format(decimals=decimals, err=err, b=p.b, n=n,
                                                          need=_precision_needed(n, p)))
        pending = [self.rng.permutation(n)]
        reads: list[_Read] = []
        queries, splits = 1, 0
        while pending and queries < cap:
            width = blocks.width(_c(candidates, n).min())
            if not reads:  # first block: leave slack so a wrong N1 leaves a visible remainder
                width = max(1, width - p.first_block_slack)
            # Blocks are asked together (Probes) once no answer can change the next ones: the width is the same
            # for every size still possible (it grows with c, and the sizes only shrink), so the next blocks are
            # the next `width` of the permutation whatever their answers say. The answers are read in order as
            # they would be one by one; a block that does not decode is asked again in halves after the batch.
            fixed = bool(reads) and width == blocks.width(_c(candidates, n).max())
            asked: list[tuple[np.ndarray, np.ndarray, Probe]] = []
            while pending and len(asked) < (min(p.ahead, cap - queries) if fixed else 1):
                todo = pending.pop(0)
                block, rest = todo[:width], todo[width:]
                if rest.size:
                    pending.insert(0, rest)
                # asked as the block's entries only: nothing n-wide is built for a probe (O(K) per answer)
                moved, _ = precision_block_values(h0, block, p.b)
                asked.append((block, moved, Probe("sp", None, f"precision block of {block.size}", relative_to="base",
                                                  edits=Edits(h0, block[None, :].astype(np.int64), moved[None, :]))))
            answer = yield asked[0][2] if len(asked) == 1 else Probes(tuple(probe for _, _, probe in asked))
            again: list[np.ndarray] = []  # halves of the blocks that did not decode, asked next
            for k, (block, moved, _) in enumerate(asked):
                if k:
                    answer = yield None  # the next answer of the Probes
                queries += 1
                value = float(answer.values[0])
                read = _Read(block, moved - h0[block], value - sp0,
                             difference_error(sp0, value, decimals, p.safety_ulps))
                x, ok = read.decode(blocks, candidates)
                if not ok.any():
                    if not reads:
                        raise AttackError(SIZES_AMBIGUOUS.format(detail=f"block of {block.size}"))
                    if block.size == 1:  # cannot split further: the answer is not exact
                        raise AttackError(ONE_PERSON_NO_FIT.format(decimals=decimals))
                    splits += 1
                    half = block.size // 2
                    again += [block[:half], block[half:]]
                    continue
                if not ok.all():  # the sizes this answer rules out; the decode of the rest is kept
                    candidates = candidates[ok]
                    read.decoded = (candidates, x[ok], ok[ok])
                reads.append(read)
                self._reads, self._blocks, self._candidates = reads, blocks, candidates
            pending[:0] = again
        if pending:
            left = sum(len(t) for t in pending)
            raise AttackError(PRECISION_CAP.format(cap=cap, left=left, decimals=decimals))
        # Every size still possible must also make the decoded blocks add up to itself (N0 = n - N1).
        candidates = self._consistent_sizes(reads, blocks, candidates, n)
        x_hat, decided = self._decide(reads, blocks, candidates, n)
        size_probes = 0
        if not decided.all() and decided.any() and candidates.size > 1:
            # One probe on individuals already read tells the sizes apart (D = b P1 / N1 - b P0 / N0).
            row, moves, known = _size_probe(h0, x_hat, decided, p.b)
            answer = yield Probe("sp", row[None, :], f"group-size probe over {known.size} individuals read",
                                 relative_to="base")
            queries, size_probes = queries + 1, 1
            value = float(answer.values[0])
            candidates = _sizes_fitting(value - sp0, moves, x_hat[known], candidates, n,
                                        difference_error(sp0, value, decimals, p.safety_ulps))
            if candidates.size:
                self._candidates = candidates
                x_hat, decided = self._decide(reads, blocks, candidates, n)
        if not candidates.size:
            raise AttackError(SIZES_AMBIGUOUS.format(detail="no group size fits every block and its count"))
        if not decided.all():
            raise AttackError(PRECISION_UNDECIDED.format(undecided=int((~decided).sum()), n=n, queries=queries,
                                                         sizes=candidates.size, decimals=decimals,
                                                         need=_precision_needed(n, p, sizes=True)))
        a_hat = (~x_hat).astype(np.int8)
        # The decoded vector fixes its own N1; it must be a size the answers allow, and reproduce them all.
        n1 = int(a_hat.sum())
        certified = bool(decided.all() and n1 in candidates and self._reproduces(reads, a_hat, n1, n))
        info: dict[str, Any] = {"certified": certified, "N1_candidates": int(candidates.size),
                "block_width": blocks.width(_c(candidates, n).min()), "block_splits": splits,
                "size_probes": size_probes, "answer_error": err,
                "probe_max_deviation": max((float(np.abs(r.moves).max()) for r in reads), default=0.0),
                **self._accuracy(reads, h0),
                "counting_bound": counting_bound(n, n - int(np.median(candidates)), p.b, decimals,
                                                 max(abs(sp0), 1e-3))}
        if candidates.size == 1:
            info.update(N0=n - int(candidates[0]), N1=int(candidates[0]))
        if not certified:
            info["warning"] = "the decoded groups do not reproduce every answer: the answers are not exact"
        return Reconstruction(np.arange(n), a_hat, decided, queries=queries, info=info)

    @staticmethod
    def _consistent_sizes(reads: list[_Read], blocks: _Blocks, candidates: np.ndarray, n: int) -> np.ndarray:
        """The candidate N1 under which every block decodes and the decoded a = 0 count is n - N1."""
        if candidates.size <= 1:
            return candidates
        zeros = np.zeros(candidates.size, dtype=np.int64)
        ok = np.ones(candidates.size, dtype=bool)
        for read in reads:
            x, fine = read.decode(blocks, candidates)
            zeros += x.sum(axis=1)
            ok &= fine
        sizes: np.ndarray = candidates[ok & (zeros == n - candidates)]
        return sizes

    @staticmethod
    def _decide(reads: list[_Read], blocks: _Blocks, candidates: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Decode every block under every size still possible; an individual is decided where they all agree."""
        x_hat, decided = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        if not candidates.size:
            return x_hat, decided
        for read in reads:
            x, _ = read.decode(blocks, candidates)
            x_hat[read.block], decided[read.block] = x[0], (x == x[0]).all(axis=0)
        return x_hat, decided

    def progress(self) -> Reconstruction | None:
        """The blocks read since the previous call, decoded with every group size the answers still allow.

        An individual counts as pinned down where all those sizes give the same bit. When an answer
        rules out sizes, every block read so far is decoded again and reported again.
        """
        reads = getattr(self, "_reads", None)
        if not reads:
            return None
        # The sizes only shrink, so the same count means the same set and earlier decodes still hold.
        start = getattr(self, "_reported", 0) if getattr(self, "_reported_sizes", None) == self._candidates.size else 0
        if start == len(reads):
            return None
        self._reported, self._reported_sizes = len(reads), self._candidates.size
        x = [read.decode(self._blocks, self._candidates)[0] for read in reads[start:]]
        return Reconstruction(np.concatenate([read.block for read in reads[start:]]),
                              np.concatenate([(~block[0]).astype(np.int8) for block in x]),
                              np.concatenate([(block == block[0]).all(axis=0) for block in x]),
                              queries=len(reads) + 1)

    @staticmethod
    def _reproduces(reads: list[_Read], a_hat: np.ndarray, n1: int, n: int) -> bool:
        """Do the decoded groups reproduce every answer difference (within its error bound and float slack)?"""
        if n1 in (0, n):
            return False
        c = 1.0 / n1 + 1.0 / (n - n1)
        return all(abs(r.moves.sum() / n1 - c * r.moves[a_hat[r.block] == 0].sum() - r.d)
                   <= r.err + 8.0 * (r.moves.size + 4) * UNIT_ROUNDOFF * (float(np.abs(r.moves).sum()) * c + abs(r.d))
                   for r in reads)

    def _accuracy(self, reads: list[_Read], h0: np.ndarray) -> dict[str, float]:
        """Probe accuracies against the labels, from each block's changes (no n-wide rows kept)."""
        y, base_pred = self.view.y, self.view.base_predictions
        if y is None or base_pred is None:
            return {}
        base_correct = (h0 >= 0.5) == (y == 1)  # the score model thresholded as the probes are
        base = float(base_correct.mean())
        deltas = [(((h0[r.block] + r.moves >= 0.5) == (y[r.block] == 1)).sum() - base_correct[r.block].sum())
                  / y.size for r in reads]
        return {"base_accuracy": float((base_pred == y).mean()), "probe_accuracy_min": base + min(deltas, default=0.0),
                "probe_accuracy_max": base + max(deltas, default=0.0)}


def _size_probe(h0: np.ndarray, x_hat: np.ndarray, decided: np.ndarray, b: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A probe moving the decided individuals of the larger decided group by ±b (the sign that stays in [0, 1]).

    Its answer difference is D = b P1 / N1 - b P0 / N0 with P1, P0 the signed counts moved in each
    group (known: they were read), which separates neighbouring sizes by about b P / N^2.
    Only moves of one sign are used, so |P| is the count moved.
    """
    signs = np.where(h0 + b <= 1.0, 1.0, -1.0)
    ones = decided & ~x_hat  # a = 1
    zeros = decided & x_hat  # a = 0
    group = ones if ones.sum() >= zeros.sum() else zeros
    up, down = group & (signs > 0), group & (signs < 0)
    chosen = up if up.sum() >= down.sum() else down
    known = np.flatnonzero(chosen)
    row = h0.copy()
    row[known] = h0[known] + signs[known] * (b * _INSIDE)
    return row, row[known] - h0[known], known


def _sizes_fitting(d: float, moves: np.ndarray, x_known: np.ndarray, candidates: np.ndarray, n: int, err: float
                   ) -> np.ndarray:
    """The candidate N1 whose predicted difference b P1 / N1 - b P0 / N0 lies within the error of ``d``."""
    n1 = candidates.astype(np.float64)
    p1, p0 = float(moves[~x_known].sum()), float(moves[x_known].sum())
    predicted = p1 / n1 - p0 / (n - n1)
    slack = 8.0 * (moves.size + 4) * UNIT_ROUNDOFF * (float(np.abs(moves).sum()) + abs(d))
    return candidates[np.abs(predicted - d) <= err + slack]


def _precision_needed(n: int, p: PrecisionParams, sizes: bool = False) -> str:
    """The coarsest precision at which a one-person block reads for every group size.

    With ``sizes``, also the first block, ``first_block_slack`` bits narrower, must keep a digit to
    single out N1.
    """
    c_min = float(_c(np.arange(1, n), n).min())
    for d in range(1, 18):
        width = _Blocks(n, p.b, _precision_err(d, p.safety_ulps)).width(c_min)
        if width >= (1 + p.first_block_slack if sizes else 1):
            return f"{d} decimals"
    return "exact float64 answers"


def _c(candidates: np.ndarray, n: int) -> np.ndarray:
    """c = 1/N1 + 1/N0 for each candidate N1."""
    return 1.0 / candidates + 1.0 / (n - candidates)
