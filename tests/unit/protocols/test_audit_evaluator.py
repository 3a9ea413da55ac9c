"""AuditEvaluator: the compliance party's and the referee's evaluate(), its weights kept, bit for bit the same."""

from __future__ import annotations

import numpy as np
import pytest

from parley.protocols.base import AuditSet
from parley.protocols.errors import EmptyGroupError, QueryError
from parley.protocols.metrics import METRICS, AuditEvaluator, evaluate


@pytest.mark.parametrize("n", [1, 40, 3001])
def test_every_metric_is_evaluate_bit_for_bit_on_every_call(n):
    """First call, cached calls, 1-D and 2-D H, scores and decisions: the same bits as evaluate()."""
    rng = np.random.default_rng(n)
    a = (rng.random(n) < 0.7).astype(np.int8)
    y = (rng.random(n) < 0.5).astype(np.int8)
    a[:1], y[:2] = 0, [1, 0][: min(n, 2)]
    if n > 2:
        a[1] = 1
    evaluator = AuditEvaluator(a, y)
    for _ in range(3):  # the first call fills the cache, the next ones use it
        for metric in METRICS:
            for H in (rng.random(n), rng.random((4, n)), (rng.random((2, n)) < 0.5).astype(np.int8),
                      rng.random((1, n)).round(2)):
                try:
                    expected = evaluate(metric, H, a, y)
                except EmptyGroupError as exc:  # n = 1: a group is empty; the evaluator says so too
                    with pytest.raises(EmptyGroupError, match=str(exc).replace("(", r"\(").replace(")", r"\)")):
                        evaluator(metric, H)
                    continue
                got = evaluator(metric, H)
                assert type(got) is type(expected) and np.shape(got) == np.shape(expected)
                np.testing.assert_array_equal(got, expected, strict=True)


def test_a_query_of_another_length_or_shape_is_refused_as_evaluate_refuses_it():
    rng = np.random.default_rng(1)
    a = np.array([0, 1] * 20, dtype=np.int8)
    evaluator = AuditEvaluator(a, a)
    evaluator("sp", rng.random(40))  # weights now kept
    for metric, bad in (("sp", rng.random(39)), ("sp", rng.random((2, 41))), ("sp", rng.random((2, 2, 40))),
                        ("no-such-metric", rng.random(40))):
        with pytest.raises(QueryError) as expected:
            evaluate(metric, bad, a)
        with pytest.raises(QueryError) as got:
            evaluator(metric, bad)
        assert str(got.value) == str(expected.value)


def test_the_audit_set_answers_through_its_evaluator_and_keeps_the_plan_once():
    a = np.array([0, 1, 1, 0, 1], dtype=np.int8)
    audit = AuditSet(a=a, y=np.array([1, 0, 1, 1, 0], dtype=np.int8))
    H = np.linspace(0, 1, 5)
    assert audit.evaluate("sp", H) == evaluate("sp", H, a)
    kept = audit.evaluator._slices[("gap", None)]
    assert audit.evaluate("sp", H[::-1]) == evaluate("sp", H[::-1], a)
    assert audit.evaluator._slices[("gap", None)] is kept  # not rebuilt
    np.testing.assert_array_equal(kept.groups, a)
    assert (kept.n0, kept.n1) == (2, 3)
