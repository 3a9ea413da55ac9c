"""The likelihood decoder: its noise laws, its model of each DP answer, recovery at low noise, and the DP bound.

Protocols answer directly (``Protocol.answer``, the payload the compliance party signs) and the
attack reads it through :func:`parley.parties.adversary.answer_from`, as over the wire.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from scipy import integrate, stats

from parley.parties.adversary import answer_from
from parley.parties.attacks import AttackerView, get_attack
from parley.parties.attacks.decoders import likelihood as lik
from parley.parties.attacks.query_leakage.likelihood import NO_RELEASE
from parley.parties.attacks.scoring import leakage
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.errors import AttackError
from parley.protocols.mechanisms.laplace import LaplaceProtocol
from parley.protocols.metrics import evaluate
from parley.scenarios.runner import leakage_bound
from tests.oracle import drive, synthetic_world

SCIPY = {"laplace": stats.laplace, "gaussian": stats.norm, "cauchy": stats.cauchy}


def _protocol(name: str, **params: Any):
    cls = get_protocol(name)
    return cls(cls.Params(**params))


def _attack(view: AttackerView, seed: int, **params: Any):
    cls = get_attack("likelihood")
    return cls(cls.Params(**params), view, np.random.default_rng(seed))


def _run(attack, protocol, audit: AuditSet, seed: int):
    """Answer the attack's probes with ``protocol`` as the compliance party does; the reconstruction."""
    rng = np.random.default_rng([seed, 1])
    run = attack.run()
    try:
        probe = next(run)
        while True:
            H = np.atleast_2d(probe.predictions)
            payload = protocol.answer(MetricQuery(probe.metric, H, "q"), audit, rng)
            probe = run.send(answer_from(payload, H.shape[0]))
    except StopIteration as stop:
        return stop.value


# -- the noise laws --------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["laplace", "gaussian", "cauchy"])
def test_log_density_is_the_law_and_integrates_to_one(family):
    r = np.linspace(-7.0, 7.0, 29)
    for scale in (0.01, 0.7, 30.0):
        np.testing.assert_allclose(lik.log_density(family, r * scale, scale),
                                   SCIPY[family].logpdf(r * scale, scale=scale), rtol=1e-12, atol=1e-12)
        mass, _ = integrate.quad(lambda x, s=scale: math.exp(lik.log_density(family, np.array([x]), s)[0]),
                                 -np.inf, np.inf)
        assert mass == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("family", ["laplace", "gaussian", "cauchy"])
def test_log_tail_is_the_survival_function(family):
    t = np.linspace(-5.0, 5.0, 21)
    np.testing.assert_allclose(lik.log_tail(family, t * 2.0, 2.0), SCIPY[family].logsf(t * 2.0, scale=2.0),
                               rtol=1e-10, atol=1e-12)


def test_sp_model_mean_at_the_true_groups_is_the_exact_answer():
    a, view = synthetic_world(0, 60, 9)
    H = np.random.default_rng(1).random((7, 60))
    model = lik.SpModel(H, np.zeros(7), lik.NoiseLaw("laplace", 1.0))
    np.testing.assert_allclose(model.mean(H @ a.astype(float), int(a.sum())), evaluate("sp", H, a), atol=1e-12)


def test_models_read_the_published_noise_of_each_protocol():
    a, view = synthetic_world(2, 50, 8)
    audit = AuditSet(a=a, y=view.y)
    H = np.random.default_rng(3).random((5, 50))
    rng = np.random.default_rng(4)
    query = MetricQuery("sp", H, "q")
    lap = _protocol("laplace", epsilon=1.0).answer(query, audit, rng)
    model = lik.model_from_release("sp", H, lap["values"], answer_from(lap, 5).release)
    assert isinstance(model, lik.SpModel) and model.law.at(25) == lap["scale"]
    counts = _protocol("dp-counts", epsilon=1.0).answer(query, audit, rng)
    model = lik.model_from_release("sp", H, counts["values"], answer_from(counts, 5).release)
    # the centred sums, each row scaled to the smallest scale: y_i = ((H - c) a)_i / w_i + noise of that scale
    scales = counts["scale"]["sum"][0]
    assert isinstance(model, lik.SumModel) and model.law.at(0) == scales.min()
    weight = scales / scales.min()
    k1, n1 = counts["statistics"]["sums"][0, :, 1], counts["statistics"]["sizes"][0, 1]
    np.testing.assert_allclose(model.y, (k1 - counts["centre"][0] * n1) / weight, rtol=0, atol=1e-9)
    np.testing.assert_allclose(model.H, (np.rint(H * 2 ** 20) / 2 ** 20 - counts["centre"][0][:, None])
                               / weight[:, None], rtol=0, atol=1e-12)
    # the exact statistics make the residual the noise: d_i - ((H - c) a)_i, at the release's scale
    assert model.y0 == n1 and model.size_law.at(0) == counts["scale"]["size"]
    gauss = _protocol("dp-counts", epsilon=1.0, noise="gaussian", delta=1e-6).answer(query, audit, rng)
    model = lik.model_from_release("sp", H, gauss["values"], answer_from(gauss, 5).release)
    assert model.law.family == "gaussian" and model.law.at(0) == gauss["sigma"]["sum"][0].min()
    cauchy = _protocol("smooth-cauchy", epsilon=1.0).answer(query, audit, rng)
    model = lik.model_from_release("sp", H, cauchy["values"], answer_from(cauchy, 5).release)
    # the scale at the true group sizes is the one the protocol drew with (never published, derived from N1)
    assert model.law.at(int(a.sum())) == pytest.approx(
        _protocol("smooth-cauchy", epsilon=1.0).noise_scale(query, audit), rel=1e-12)
    with pytest.raises(AttackError, match=re.escape(lik.MILP_NEEDS_LAPLACE.format(family="cauchy"))):
        lik.milp_map(model)


def test_exact_answers_carry_no_noise_notes_and_the_attack_says_so():
    a, view = synthetic_world(0, 30, 5)
    with pytest.raises(AttackError, match="carries no public noise notes") as err:
        drive(_attack(view, 0), a)
    assert str(err.value) == NO_RELEASE


# -- recovery at low noise (seeded statistical test) -------------------------------------------------


@pytest.mark.parametrize(("protocol", "params", "decoder"), [
    ("dp-counts", {"epsilon": 1e4}, "milp"), ("dp-counts", {"epsilon": 1e4}, "gibbs"),
    ("dp-counts", {"epsilon": 1e4, "noise": "gaussian", "delta": 1e-6}, "gibbs"),
    ("laplace", {"epsilon": 1e5}, "gibbs"), ("smooth-cauchy", {"epsilon": 1e5}, "gibbs"),
])
def test_recovers_a_at_low_noise(protocol, params, decoder):
    # Three seeded worlds (n = 80, 10 in group 0); each must reach 95 % balanced accuracy.
    for seed in range(3):
        a, view = synthetic_world(seed, 80, 10)
        rec = _run(_attack(view, seed, decoder=decoder, sweeps=40), _protocol(protocol, **params),
                   AuditSet(a=a, y=view.y), seed)
        assert leakage(a, rec.a_hat) >= 95.0, (seed, rec.info)


# -- never above the bound (privacy or attack bug) --------------------------------------------------

#: Seeded worlds per protocol; n = 100 with 10 in group 0.
RUNS = 6
N, N0 = 100, 10


def _margin() -> float:
    """3 standard errors of a mean over RUNS runs of balanced accuracy, each at most 50 sqrt(1/N0 + 1/N1)/2 %."""
    per_run = 100.0 * math.sqrt(0.25 * (1.0 / N0 + 1.0 / (N - N0)) / 4.0)
    return 3.0 * per_run / math.sqrt(RUNS)


def _mean_leakage(protocol, decoder: str = "auto") -> float:
    out = []
    for seed in range(RUNS):
        a, view = synthetic_world(100 + seed, N, N0)
        rec = _run(_attack(view, seed, decoder=decoder, sweeps=60), protocol, AuditSet(a=a, y=view.y), seed)
        out.append(leakage(a, rec.a_hat))
    return float(np.mean(out))


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "params"), [
    ("laplace", {"epsilon": 0.5}), ("smooth-cauchy", {"epsilon": 0.5}),
    ("smooth-laplace", {"epsilon": 0.5, "delta": 1e-6}), ("dp-counts", {"epsilon": 0.5}),
    ("dp-counts", {"epsilon": 0.5, "noise": "gaussian", "delta": 1e-6}),
])
def test_leakage_stays_within_the_bound_of_the_epsilon_spent(protocol, params):
    bound = leakage_bound(params["epsilon"], params.get("delta", 0.0))
    assert _mean_leakage(_protocol(protocol, **params)) <= bound + _margin()


class _Leaky(LaplaceProtocol):
    """A privacy bug: it charges epsilon but draws its noise at 10,000 epsilon (the check must catch it)."""

    def release(self, exact, query, audit, rng):
        inner = LaplaceProtocol(self.Params(epsilon=self.params.epsilon * 1e4))
        return inner.release(exact, query, audit, rng)


@pytest.mark.slow
def test_the_bound_check_flags_a_protocol_that_spends_less_noise_than_it_charges():
    leaky = _Leaky(_Leaky.Params(epsilon=0.5))
    assert leaky.cost(MetricQuery("sp", np.zeros((1, N)), "q")).epsilon == 0.5
    assert _mean_leakage(leaky, decoder="gibbs") > leakage_bound(0.5, 0.0) + _margin()


def test_a_one_model_dp_counts_answer_is_decoded_under_its_pair_law():
    """m = 1 under discrete Laplace releases the pair K = h a + Y_1, Z = (1 - h) a + Y_2 (scale 1/epsilon, no size
    of its own): the model has those two rows and that law, and at epsilon = 1e4 the true A outscores every
    one-flip neighbour."""
    a, view = synthetic_world(2, 40, 8)
    H = np.random.default_rng(5).random((1, 40))
    counts = _protocol("dp-counts", epsilon=1e4).answer(MetricQuery("sp", H, "q"), AuditSet(a=a, y=view.y),
                                                        np.random.default_rng(6))
    model = lik.model_from_release("sp", H, counts["values"], answer_from(counts, 1).release)
    hr = np.rint(H * 2 ** 20) / 2 ** 20
    assert isinstance(model, lik.SumModel) and model.y0 is None and model.law == lik.NoiseLaw("laplace", 1e-4)
    np.testing.assert_allclose(model.H, np.vstack([hr, 1.0 - hr]), rtol=0, atol=0)
    k1, n1 = counts["statistics"]["sums"][0, 0, 1], counts["statistics"]["sizes"][0, 1]
    assert model.y.tolist() == [k1, n1 - k1]
    truth = model.loglik(model.H @ a, int(a.sum()))
    for j in range(40):
        flipped = a.copy()
        flipped[j] = 1 - flipped[j]
        assert model.loglik(model.H @ flipped, int(flipped.sum())) < truth
