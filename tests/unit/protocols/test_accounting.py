"""zCDP composition (dp-accounting) of dp-counts' Gaussian answers, in the ledger and across a restart."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parley.parties.ledger import ZCDP_NEEDS_DELTA, Ledger
from parley.protocols import AuditSet, MetricQuery, get_protocol
from parley.protocols.accounting import RHO_KEY, compose_zcdp, zcdp_epsilon, zcdp_of
from parley.protocols.budget import ApproxDP, PureDP, compose
from parley.protocols.errors import ConfigError, WireError

DC = "data-center"


def _gaussian_answers(k: int) -> list[dict]:
    cls = get_protocol("dp-counts")
    protocol = cls(cls.Params(epsilon=1.0, noise="gaussian", delta=1e-6))
    rng = np.random.default_rng(0)
    a, y = rng.integers(0, 2, 40).astype(np.int8), rng.integers(0, 2, 40).astype(np.int8)
    H = rng.random((3, 40))
    return [protocol.answer(MetricQuery(metric="sp", predictions=H, query_id=f"q{i}"), AuditSet(a=a, y=y), rng)
            for i in range(k)]


def test_gaussian_answers_compose_in_zcdp_far_below_the_sum_and_within_the_textbook_bound():
    answers = _gaussian_answers(10)
    costs = [ApproxDP(epsilon=1.0, delta=1e-6)] * 10
    total = compose_zcdp(costs, [a[RHO_KEY] for a in answers], slack=1e-6)
    rho = 10 * answers[0][RHO_KEY]
    assert total.epsilon == pytest.approx(zcdp_epsilon([answers[0][RHO_KEY]] * 10, 1e-6)) and total.delta == 1e-6
    assert total.epsilon < 0.5 * compose(costs).epsilon  # 10 answers at epsilon 1 cost less than 5
    assert total.epsilon <= rho + 2 * math.sqrt(rho * math.log(1e6))  # Bun & Steinke 2016, Prop. 1.3


def test_few_pure_costs_fall_back_to_the_plain_sum_and_mixed_costs_add_the_rest():
    assert compose_zcdp([PureDP(epsilon=1.0)] * 2, [None, None]) == compose([PureDP(epsilon=1.0)] * 2)
    assert zcdp_of(PureDP(epsilon=0.2), None) == pytest.approx(0.02)  # epsilon-DP => (epsilon^2/2)-zCDP
    assert zcdp_of(ApproxDP(epsilon=0.5, delta=1e-6), None) is None
    many = [PureDP(epsilon=0.1)] * 200 + [ApproxDP(epsilon=0.3, delta=1e-7)]
    total = compose_zcdp(many, [None] * 201, slack=1e-6)
    assert total.epsilon == pytest.approx(zcdp_epsilon([0.005] * 200, 1e-6) + 0.3)
    assert total.delta == pytest.approx(1e-6 + 1e-7)
    with pytest.raises(ConfigError):
        zcdp_of(PureDP(epsilon=1.0), -1.0)


def test_a_zcdp_ledger_pays_more_gaussian_answers_and_recomposes_them_after_a_restart(tmp_path):
    answers = _gaussian_answers(12)
    cost = ApproxDP(epsilon=1.0, delta=1e-6)
    path = tmp_path / "ledger.sqlite"
    with Ledger(path, method="zcdp") as ledger, Ledger(tmp_path / "seq.sqlite") as sequential:
        ledger.set_budget(DC, ApproxDP(epsilon=4.0, delta=1e-5))
        sequential.set_budget(DC, ApproxDP(epsilon=4.0, delta=1e-5))
        paid = {"zcdp": 0, "sequential": 0}
        for i, answer in enumerate(answers):
            for name, book in (("zcdp", ledger), ("sequential", sequential)):
                try:
                    book.charge(DC, f"q{i}", cost, answer, request=f"d{i}")
                    paid[name] += 1
                except WireError:
                    pass
        spent = ledger.spent(DC)
    assert paid == {"zcdp": 12, "sequential": 4}
    assert spent.epsilon == pytest.approx(zcdp_epsilon([answers[0][RHO_KEY]] * 12, 1e-6)) and spent.epsilon <= 4.0
    with Ledger(path, method="zcdp") as reopened:  # the events are read back from the stored answers
        assert reopened.spent(DC) == spent
        assert reopened.summary()["slack"] == 1e-6
        big = _gaussian_answers(13)[12]
        for i in range(12, 40):  # spend until refused: the total never passes the limit
            try:
                reopened.charge(DC, f"q{i}", cost, big, request=f"d{i}")
            except WireError as exc:
                assert "zcdp composition would total" in str(exc)
                break
        assert reopened.spent(DC).epsilon <= 4.0
    with Ledger(tmp_path / "pure.sqlite", method="zcdp") as pure, pytest.raises(ConfigError) as err:
        pure.set_budget(DC, PureDP(epsilon=1.0))
    assert str(err.value) == ZCDP_NEEDS_DELTA.format(slack=1e-6, querier=DC, delta=0.0)
