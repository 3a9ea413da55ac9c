"""Correctly rounded metric answers, and answers to edits updated from exact sums: an adversary's inputs.

The promise (docstring of :mod:`parley.protocols.metrics`, "Correctly rounded answers"): SP, EO, PE,
|SP|, |EO|, EOdds and cov are the float64 nearest to the exact value of the formula on the inputs,
and an answer to models given as edits of a kept model is the same bits as :func:`evaluate` on the
expanded models. The checks below do not reuse the code's rounding: a value is correctly rounded
when no neighbouring float64 is nearer the exact rational (ties to an even significand), decided
with :class:`fractions.Fraction`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from parley.protocols import get_protocol
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.metrics import AuditEvaluator, evaluate, float_units
from parley.protocols.queries import apply_edits

TINY = 5e-324  # the smallest subnormal
EXTREMES = np.array([0.0, 1.0, TINY, 2 * TINY, 2.2250738585072014e-308, 1e-300, 0.5, np.nextafter(0.5, 1.0),
                     np.nextafter(1.0, 0.0), 1.0 / 3.0, np.nextafter(1.0 / 3.0, 1.0), 0.1, 1e-16, 2.0 ** -60])


def _exact_gap(h: np.ndarray, a: np.ndarray, keep: np.ndarray | None = None) -> Fraction:
    """mean_{a=1} h - mean_{a=0} h over the individuals in ``keep``, as an exact rational."""
    keep = np.ones(a.size, dtype=bool) if keep is None else keep
    s = {0: Fraction(0), 1: Fraction(0)}
    for value, group in zip(h[keep].tolist(), a[keep].tolist(), strict=True):
        s[group] += Fraction(value)
    n1 = int(a[keep].sum())
    n0 = int(keep.sum()) - n1
    return s[1] / n1 - s[0] / n0


def _exact_cov(h: np.ndarray, a: np.ndarray) -> Fraction:
    n, n1 = a.size, int(a.sum())
    return sum((Fraction(v) * (Fraction(int(g)) - Fraction(n1, n)) for v, g in zip(h.tolist(), a.tolist(),
                                                                                 strict=True)), Fraction(0)) / n


def _correctly_rounded(value: float, exact: Fraction) -> bool:
    """No float64 is nearer ``exact`` than ``value``; on a tie, ``value`` has an even significand."""
    here = abs(Fraction(value) - exact)
    for neighbour in (np.nextafter(value, -np.inf), np.nextafter(value, np.inf)):
        there = abs(Fraction(float(neighbour)) - exact)
        if there < here:
            return False
        if there == here and (math.frexp(value)[0] * 2 ** 53) % 2 != 0:
            return False
    return True


def _hostile_rows(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """Scores mixing extremes, neighbours one ulp apart and wide exponent ranges."""
    H = rng.random((m, n))
    H[:, : n // 3] = rng.choice(EXTREMES, size=(m, n // 3))
    H[:, n // 3: n // 2] = np.ldexp(rng.random((m, n // 2 - n // 3)), rng.integers(-1074, 1, (m, n // 2 - n // 3)))
    return np.clip(H, 0.0, 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_every_linear_metric_is_the_nearest_float_to_its_exact_value(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    a = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.int8)
    y = (rng.random(n) < 0.5).astype(np.int8)
    a[:4], y[:4] = [0, 1, 0, 1], [0, 0, 1, 1]  # every group of every slice has a member
    H = _hostile_rows(rng, n, 5)
    for i in range(H.shape[0]):
        h = H[i]
        exact = {"sp": _exact_gap(h, a), "eo": _exact_gap(h, a, y == 1), "pe": _exact_gap(h, a, y == 0),
                 "cov": _exact_cov(h, a)}
        exact.update(abs_sp=abs(exact["sp"]), abs_eo=abs(exact["eo"]), eodds=max(abs(exact["eo"]), abs(exact["pe"])))
        for metric, value in exact.items():
            got = float(evaluate(metric, h, a, y))
            assert _correctly_rounded(got, value), (metric, got, float(value))


def test_a_numpy_dot_product_is_not_correctly_rounded_on_these_inputs():
    """The check above can fail: the float dot product the answers used before misses on such inputs."""
    rng = np.random.default_rng(0)
    misses = 0
    for _ in range(30):
        n = 50
        a = (rng.random(n) < 0.3).astype(np.int8)
        a[:2] = [0, 1]
        h = _hostile_rows(rng, n, 1)[0]
        w = np.where(a == 1, 1.0 / a.sum(), -1.0 / (n - a.sum()))
        misses += not _correctly_rounded(float(h @ w), _exact_gap(h, a))
    assert misses > 0


def test_float_units_are_exact():
    for x in EXTREMES.tolist():
        assert Fraction(float_units(x), 2 ** 1074) == Fraction(x)


def _random_edits(rng: np.random.Generator, base: np.ndarray, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Edits an adversary would pick: extremes, one-ulp moves, values put back, moves that cancel in a group."""
    n = base.size
    indices = np.stack([rng.choice(n, k, replace=False) for _ in range(m)])
    values = rng.random((m, k))
    style = rng.integers(0, 5, (m, k))
    old = base[indices]
    values = np.where(style == 0, rng.choice(EXTREMES, (m, k)), values)
    values = np.where(style == 1, np.nextafter(old, np.where(rng.random((m, k)) < 0.5, 0.0, 1.0)), values)
    values = np.where(style == 2, old, values)  # "changed" to what it was
    if k >= 2:  # one pair that swaps two scores: their group sums cancel when both are in one group
        values[:, 0], values[:, 1] = old[:, 1], old[:, 0]
    return indices.astype(np.int64), np.clip(values, 0.0, 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_answers_to_edits_are_evaluate_on_the_expanded_models_bit_for_bit(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(8, 400))
    a = (rng.random(n) < 0.6).astype(np.int8)
    y = (rng.random(n) < 0.5).astype(np.int8)
    a[:4], y[:4] = [0, 1, 0, 1], [0, 0, 1, 1]
    evaluator = AuditEvaluator(a, y)
    base = _hostile_rows(rng, n, 1)[0]
    for metric in ("sp", "abs_sp", "eo", "abs_eo", "pe", "eodds", "cov", "prp"):
        for k in (1, 2, 7, min(n, 40)):
            indices, values = _random_edits(rng, base, 3, k)
            expected = evaluate(metric, apply_edits(base, indices, values), a, y)
            got = evaluator.edited(metric, base, indices, values)
            np.testing.assert_array_equal(got, expected, strict=True)


def test_many_successive_edits_of_edits_stay_exact():
    """A chain of 300 models, each an edit of the one before: no error builds up along the chain."""
    rng = np.random.default_rng(7)
    n = 200
    a = (rng.random(n) < 0.5).astype(np.int8)
    a[:2] = [0, 1]
    evaluator = AuditEvaluator(a)
    model = rng.random(n)
    for _ in range(300):
        indices, values = _random_edits(rng, model, 1, int(rng.integers(1, 30)))
        got = evaluator.edited("sp", model, indices, values)
        model = apply_edits(model, indices, values)[0]
        np.testing.assert_array_equal(got, evaluate("sp", model[None, :], a), strict=True)
        assert _correctly_rounded(float(got[0]), _exact_gap(model, a))


def test_the_compliance_party_answers_an_edit_query_without_expanding_it():
    """Through query validation and the raw protocol: the released bits are evaluate()'s on the expanded model."""
    rng = np.random.default_rng(3)
    n = 500
    a = (rng.random(n) < 0.8).astype(np.int8)
    y = (rng.random(n) < 0.5).astype(np.int8)
    audit = AuditSet(a=a, y=y)
    raw = get_protocol("raw")()
    base = MetricQuery.from_payload({"metric": "sp", "predictions": _hostile_rows(rng, n, 1), "query_id": "b"}, n)
    kept = {"b": base.predictions[0]}
    for i in range(50):
        indices, values = _random_edits(rng, kept["b"], 1, 30)
        query = MetricQuery.from_payload({"metric": "sp", "query_id": f"e{i}", "edit_of": "b", "indices": indices,
                                          "values": values}, n, kept)
        released = raw.answer(query, audit, rng)["values"]
        assert query._predictions is None  # the answer never built the n-wide model
        np.testing.assert_array_equal(released, evaluate("sp", query.predictions, a), strict=True)
