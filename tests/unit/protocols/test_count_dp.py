"""``dp-counts``: the sensitivity it claims, exact post-processing, its noise laws and its privacy calibration.

The adversary reads the code: the sensitivity test flips every person's A on seeded audit sets and checks the
integer statistics move by at most what the proof charges; the noise tests compare released noise with the
exact probability mass functions the proof uses (chi-square, alpha = 0.01) and catch a sampler at the wrong scale.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from parley.protocols import AuditSet, MetricQuery, get_protocol
from parley.protocols.budget import ApproxDP, PureDP
from parley.protocols.dp.lattice import RandomBits, discrete_gaussian
from parley.protocols.errors import QueryError
from parley.protocols.mechanisms.count_dp import (
    CENTRED,
    COUNT_METRICS,
    GAUSSIAN_NEEDS_DELTA,
    LAPLACE_IS_PURE,
    PAIR,
    PREDICTION_BITS,
    PREDICTIONS_OUTSIDE,
    SLICE_TOO_SMALL,
    CountParams,
    centres,
    metrics_from_statistics,
    noise_scales,
    pair_scale,
    pair_step,
    release_kinds,
    rho_for,
    slices_of,
    statistics,
    support_steps,
)
from parley.protocols.metrics import evaluate

ALPHA = 0.01
UNIT = 1 << PREDICTION_BITS


def _protocol(**params):
    cls = get_protocol("dp-counts")
    return cls(cls.Params(**params))


def _audit(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    while True:
        a, y = rng.integers(0, 2, n).astype(np.int8), rng.integers(0, 2, n).astype(np.int8)
        if min(int(((a == g) & (y == label)).sum()) for g in (0, 1) for label in (0, 1)) >= 2:
            return a, y


def _vector(metric: str, H: np.ndarray, a: np.ndarray, y: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """The released coordinates in lattice units: (centred sums K_i - c_i N of every slice and model, their public
    sensitivities S_i, the sizes of every slice)."""
    masks = slices_of(metric, y)
    K, N, _, _ = statistics(H, a, masks)
    C, S = centres(H, masks)
    D = [k - c * N[s] for s in range(len(masks)) for k, c in zip(K[s], C[s], strict=True)]
    return D, [v for row in S for v in row], list(N)


@pytest.mark.parametrize("metric", COUNT_METRICS)
@pytest.mark.parametrize("soft", [False, True])
def test_flipping_one_attribute_moves_the_statistics_by_at_most_the_claimed_sensitivity(metric, soft):
    m, n = 5, 30
    a, y = _audit(n, 4)
    rng = np.random.default_rng(5)
    # acceptance rates below 1/2, so the person accepted by every model is the farthest from every centre
    H = rng.random((m, n)) * 0.6 if soft else (rng.random((m, n)) < 0.3).astype(float)
    H[:, [int(np.argmax(y == 1)), int(np.argmax(y == 0))]] = 1.0  # accepted by every model: the worst case
    laplace, gauss = (noise_scales(m, CountParams(epsilon=1.0)),
                      noise_scales(m, CountParams(epsilon=1.0, noise="gaussian", delta=1e-6)))
    d, sens, size = _vector(metric, H, a, y)
    assert all(0 < v <= UNIT for v in sens)
    worst = Fraction(0)
    for j in range(n):
        b = a.copy()
        b[j] = 1 - b[j]
        d2, sens2, size2 = _vector(metric, H, b, y)
        assert sens2 == sens  # public: the same in both neighbours
        dd = [abs(u - v) for u, v in zip(d, d2, strict=True)]
        dn = [abs(u - v) for u, v in zip(size, size2, strict=True)]
        # in j's slice one size moves by one and each centred sum by |r_ij - c_i| <= S_i; outside it nothing moves
        assert all(x <= s_ for x, s_ in zip(dd, sens, strict=True)) and sum(dn) == 1 or (max(dd), sum(dn)) == (0, 0)
        # the privacy loss the proofs charge, in exact arithmetic: scale tau_s S_i per centred sum, tau_n the size
        loss = sum(Fraction(x, s_) / laplace["sum"] for x, s_ in zip(dd, sens, strict=True)) + \
            sum(Fraction(x) / laplace["size"] for x in dn)
        assert loss <= 1
        worst = max(worst, loss)
        rho = sum(Fraction(x * x, s_ * s_) / (2 * gauss["sum"]) for x, s_ in zip(dd, sens, strict=True)) + \
            sum(Fraction(x * x) / (2 * gauss["size"]) for x in dn)
        assert rho <= gauss["rho"]
    assert worst == 1  # the bound is attained: it is the sensitivity, not a loose bound


def test_the_centred_sum_moves_less_than_the_plain_sum_and_a_constant_model_gets_no_noise():
    """Rate 1/4: flipping the accepted person moves K by 1 but D = K - N/4 by 3/4; an all-zero model releases 0."""
    n = 8
    a = np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=np.int8)
    H = np.array([[1, 1, 0, 0, 0, 0, 0, 0], [0] * n], dtype=float)
    C, S = centres(H, slices_of("sp", np.ones(n)))
    assert C == [[UNIT // 4, 0]] and S == [[UNIT - UNIT // 4, 0]]
    answer = _protocol(epsilon=1.0).answer(MetricQuery(metric="sp", predictions=H, query_id="q"),
                                           AuditSet(a=a, y=np.ones(n, dtype=np.int8)), np.random.default_rng(0))
    assert answer["values"][1] == 0.0 and answer["statistics"]["sums"][0, 1].tolist() == [0.0, 0.0]
    assert answer["scale"]["sum"][0].tolist() == [float(noise_scales(2, CountParams(epsilon=1.0))["sum"]) * 0.75, 0.0]


@pytest.mark.parametrize("m", [1, 2, 7, 100])
def test_the_noise_split_spends_exactly_the_budget(m):
    lap = noise_scales(m, CountParams(epsilon=0.7))
    assert m / lap["sum"] + 1 / lap["size"] == Fraction(0.7)
    gauss = noise_scales(m, CountParams(epsilon=0.7, noise="gaussian", delta=1e-5))
    assert m / (2 * gauss["sum"]) + 1 / (2 * gauss["size"]) == gauss["rho"]


@pytest.mark.parametrize("metric", COUNT_METRICS)
def test_post_processing_is_exact_when_the_noise_is_zero(metric):
    m, n = 4, 40
    a, y = _audit(n, 6)
    rng = np.random.default_rng(7)
    for H in (rng.integers(0, 2, (m, n)).astype(float), np.round(rng.random((m, n)) * UNIT) / UNIT):
        K, N, T, sizes = statistics(H, a, slices_of(metric, y))
        values = metrics_from_statistics(metric, np.array(K, float) / UNIT, N, np.array(T, float) / UNIT, sizes)
        np.testing.assert_allclose(values, evaluate(metric, H, a, y), rtol=0, atol=1e-12)


def test_post_processing_clamps_sizes_means_and_the_range():
    # noisy group-1 size -3 of a slice of 10 -> 1; a noisy sum above the size -> mean 1; result within [-1, 1]
    values = metrics_from_statistics("sp", np.array([[5.0, -2.0]]), [-3], np.array([[6.0, 2.0]]), [10])
    assert values.tolist() == [1.0 - 1.0 / 9.0, 0.0 - 4.0 / 9.0]


def test_same_seed_same_release_and_the_answer_records_its_public_noise():
    a, y = _audit(50, 8)
    H = np.random.default_rng(9).random((3, 50))
    query = MetricQuery(metric="eodds", predictions=H, query_id="q")
    for params in ({"epsilon": 1.0}, {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-6}):
        p = _protocol(**params)
        first = p.answer(query, AuditSet(a=a, y=y), np.random.default_rng(1))
        again = p.answer(query, AuditSet(a=a, y=y), np.random.default_rng(1))
        other = p.answer(query, AuditSet(a=a, y=y), np.random.default_rng(2))
        assert np.array_equal(first["values"], again["values"]) and not np.array_equal(first["values"],
                                                                                         other["values"])
        assert first["statistics"]["slices"] == ["y=1", "y=0"]
        assert first["statistics"]["sums"].shape == (2, 3, 2) and first["statistics"]["sizes"].shape == (2, 2)
        sums = first["statistics"]["sums"] * UNIT
        assert np.array_equal(sums, np.rint(sums))  # on the public lattice
        assert first["noise"] == f"discrete-{params.get('noise', 'laplace')}"
    assert _protocol(epsilon=1.0).cost(query) == PureDP(epsilon=1.0)
    assert _protocol(epsilon=1.0, noise="gaussian", delta=1e-6).cost(query) == ApproxDP(epsilon=1.0, delta=1e-6)


def test_bad_parameters_and_queries_get_typed_errors():
    with pytest.raises(ValidationError, match=GAUSSIAN_NEEDS_DELTA.format(delta=0.0).replace("(", r"\(")
                       .replace(")", r"\)")):
        CountParams(epsilon=1.0, noise="gaussian")
    with pytest.raises(ValidationError, match=LAPLACE_IS_PURE.format(delta=1e-6).replace("(", r"\(")
                       .replace(")", r"\)")):
        CountParams(epsilon=1.0, delta=1e-6)
    with pytest.raises(ValidationError, match="optimise"):
        CountParams(epsilon=1.0, optimise="p90")
    with pytest.raises(ValidationError, match="optimise"):  # mpc-dp releases no pair: the option is not its
        get_protocol("mpc-dp").Params(epsilon=1.0, optimise="mean")
    a = np.array([0, 1, 1, 0, 1], dtype=np.int8)
    y = np.array([1, 0, 0, 0, 0], dtype=np.int8)  # one person with y=1: EO is undefined whatever A is
    query = MetricQuery(metric="eo", predictions=np.ones((1, 5)), query_id="q")
    with pytest.raises(QueryError) as err:
        _protocol(epsilon=1.0).answer(query, AuditSet(a=a, y=y), np.random.default_rng(0))
    assert str(err.value).endswith(SLICE_TOO_SMALL.format(metric="eo", slice=" with y=1", size=1))
    with pytest.raises(QueryError) as err:
        statistics(np.full((1, 5), 1.5), a, slices_of("sp", y))
    assert str(err.value).endswith(PREDICTIONS_OUTSIDE)
    with pytest.raises(QueryError, match="answers only"):
        _protocol(epsilon=1.0).answer(MetricQuery(metric="prp", predictions=np.ones((1, 5)), query_id="q"),
                                      AuditSet(a=a, y=y), np.random.default_rng(0))


def test_a_group_left_empty_by_a_is_answered_not_refused():
    """An all-one-group audit set still gets an answer: no refusal depends on A."""
    a = np.ones(8, dtype=np.int8)
    answer = _protocol(epsilon=1.0).answer(MetricQuery(metric="sp", predictions=np.ones((1, 8)), query_id="q"),
                                           AuditSet(a=a, y=np.ones(8, dtype=np.int8)), np.random.default_rng(0))
    assert -1.0 <= answer["values"][0] <= 1.0


def _chi_square_pvalue(draws: np.ndarray, pmf) -> float:
    """Chi-square goodness of fit over the values with expected count >= 5, the tails pooled."""
    values, counts = np.unique(draws, return_counts=True)
    lo, hi = int(values.min()), int(values.max())
    support = np.arange(lo - 50, hi + 51)
    p = pmf(support)
    p = p / p.sum()
    expected = p * draws.size
    keep = expected >= 5
    observed = np.array([np.count_nonzero(draws == v) for v in support[keep]], dtype=float)
    obs = np.append(observed, draws.size - observed.sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("sigma2", [Fraction(9, 4), Fraction(40, 1)])
def test_discrete_gaussian_sampler_has_the_discrete_gaussian_law_and_a_wrong_scale_is_caught(sigma2):
    bits = RandomBits(np.random.default_rng(11))
    draws = np.array([discrete_gaussian(bits, sigma2.numerator, sigma2.denominator) for _ in range(20_000)])
    s2 = float(sigma2)
    assert _chi_square_pvalue(draws, lambda k: np.exp(-k.astype(float) ** 2 / (2 * s2))) > ALPHA
    assert _chi_square_pvalue(draws, lambda k: np.exp(-k.astype(float) ** 2 / (2 * 0.8 * s2))) < ALPHA


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_released_size_noise_has_the_law_the_proof_uses(noise):
    """Released size minus the true size, 6,000 releases: the pmf of the stated scale fits, 0.8 times it does not."""
    params = {"epsilon": 1.0} if noise == "laplace" else {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-6}
    p = _protocol(**params)
    a, y = _audit(60, 12)
    query = MetricQuery(metric="sp", predictions=np.zeros((2, 60)), query_id="q")
    rng = np.random.default_rng(13)
    true_n1 = int((a == 1).sum())
    draws = np.array([p.answer(query, AuditSet(a=a, y=y), rng)["statistics"]["sizes"][0][1] - true_n1
                      for _ in range(6_000)])
    scale = noise_scales(2, p.params)["size"]
    if noise == "laplace":
        def pmf(k, f=1.0):
            return np.exp(-np.abs(k) / (f * float(scale)))
    else:
        def pmf(k, f=1.0):
            return np.exp(-k.astype(float) ** 2 / (2 * f * float(scale)))
    assert _chi_square_pvalue(draws, pmf) > ALPHA
    assert _chi_square_pvalue(draws, lambda k: pmf(k, 0.8 if noise == "gaussian" else 0.8)) < ALPHA


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_released_centred_sum_noise_has_the_stated_scale(noise):
    """Released centred sums minus the exact ones, 4,000 releases of 2 models: mean |Y| (Laplace: tau_s S_i) or
    mean Y^2 (Gaussian: sigma_s^2 S_i^2) of each model is the stated one, 0.85 times it is rejected."""
    params = {"epsilon": 2.0} if noise == "laplace" else {"epsilon": 2.0, "noise": "gaussian", "delta": 1e-6}
    p = _protocol(**params)
    a, y = _audit(40, 15)
    H = np.zeros((2, 40))
    H[0, :10], H[1, :30] = 1.0, 0.5  # centres 1/4 and 3/8: sensitivities 3/4 and 3/8
    query, audit = MetricQuery(metric="sp", predictions=H, query_id="q"), AuditSet(a=a, y=y)
    K, N, _, _ = statistics(H, a, slices_of("sp", y))
    C, S = centres(H, slices_of("sp", y))
    assert S == [[3 * UNIT // 4, 3 * UNIT // 8]]
    exact = np.array([k - c * N[0] for k, c in zip(K[0], C[0], strict=True)], dtype=float) / UNIT
    rng = np.random.default_rng(16)
    draws = []
    for _ in range(4_000):
        out = p.answer(query, audit, rng)
        draws.append(out["statistics"]["sums"][0, :, 1] - out["centre"][0] * out["statistics"]["sizes"][0, 1] - exact)
    draws = np.array(draws)
    scale = noise_scales(2, p.params)["sum"]
    for i, s_ in enumerate(S[0]):
        if noise == "laplace":  # E|Y| of a discrete Laplace at this fine resolution equals the continuous scale
            sample, expected = np.abs(draws[:, i]), float(scale) * s_ / UNIT
        else:
            sample, expected = draws[:, i] ** 2, float(scale) * (s_ / UNIT) ** 2
        assert stats.ttest_1samp(sample, expected).pvalue > ALPHA
        assert stats.ttest_1samp(sample, 0.85 * expected).pvalue < ALPHA


@pytest.mark.parametrize(("epsilon", "delta"), [(1e-3, 1e-7), (1e-6, 1e-9)])
def test_a_small_epsilon_gets_a_rho_inside_it_not_the_bisections_starting_point(epsilon, delta):
    """rho = 1e-12, where the bisection once started unchecked, converts to more than these epsilons."""
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    def eps_of(rho: float) -> float:
        accountant = RdpAccountant()
        accountant.compose(ZCDpEvent(rho))
        return accountant.get_epsilon(delta)

    assert eps_of(1e-12) > epsilon  # the old starting point breaks the claim
    rho = rho_for(epsilon, delta)
    assert eps_of(rho) <= epsilon
    # independently of the accountant: Bun & Steinke 2016, Prop. 1.3, also keeps it inside
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) <= epsilon


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.5, 1e-5), (4.0, 1e-9), (0.05, 1e-6)])
def test_rho_is_the_largest_the_accountant_converts_within_epsilon_delta(epsilon, delta):
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    def eps_of(rho: float) -> float:
        accountant = RdpAccountant()
        accountant.compose(ZCDpEvent(rho))
        return accountant.get_epsilon(delta)

    rho = rho_for(epsilon, delta)
    assert eps_of(rho) <= epsilon < eps_of(rho * 1.001)
    # the textbook bound eps = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016, Prop. 1.3) is looser
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) > epsilon


def _pair_vector(metric: str, H: np.ndarray, a: np.ndarray, y: np.ndarray) -> list[tuple[int, int]]:
    """The one-model pair release's coordinates (K, Z = 2^B N - K) of every slice, lattice units, exact."""
    masks = slices_of(metric, y)
    K, N, _, _ = statistics(H, a, masks)
    return [(K[s][0], (N[s] << PREDICTION_BITS) - K[s][0]) for s in range(len(masks))]


@pytest.mark.parametrize("metric", ["sp", "eodds"])
def test_one_flip_moves_the_pair_by_exactly_two_to_the_b_in_l1(metric):
    """Every person's flip, binary and soft models: (K, Z) moves by +-(r_j, 2^B - r_j), l1 norm exactly 2^B, in
    the flipped person's slice only; the l1 loss 2^B / (2^B / epsilon) the proof charges is exactly epsilon."""
    a, y = _audit(30, 21)
    rng = np.random.default_rng(22)
    for H in (rng.integers(0, 2, (1, 30)).astype(float), rng.random((1, 30))):
        base = _pair_vector(metric, H, a, y)
        for j in range(30):
            flipped = a.copy()
            flipped[j] = 1 - flipped[j]
            moves = [abs(k - k2) + abs(z - z2) for (k, z), (k2, z2) in zip(base, _pair_vector(metric, H, flipped, y),
                                                                            strict=True)]
            assert sorted(moves) == [0] * (len(moves) - 1) + [UNIT]
    scale = pair_scale(CountParams(epsilon=0.7))
    assert Fraction(UNIT) / scale == Fraction(0.7)


def test_the_release_rule_depends_on_m_the_noise_and_the_public_sensitivity_only():
    lap, gauss = CountParams(epsilon=1.0), CountParams(epsilon=1.0, noise="gaussian", delta=1e-6)
    assert release_kinds(1, lap, [[5], [3]]) == [PAIR, PAIR]
    assert release_kinds(1, lap, [[5], [0]]) == [PAIR, CENTRED]  # a constant model: the exact centred sum
    assert release_kinds(1, gauss, [[5]]) == [CENTRED] and release_kinds(2, lap, [[5, 4]]) == [CENTRED]


@pytest.mark.parametrize("metric", COUNT_METRICS)
def test_the_pair_release_without_noise_gives_the_exact_metric(metric):
    """epsilon = 1e9: DLap(2^20 / 1e9) is 0 except with probability about e^-950, so the release is the exact
    statistics: N = (K + Z)/2^B is group 1's size and the metric is the exact metric of the rounded predictions."""
    a, y = _audit(40, 23)
    rng = np.random.default_rng(24)
    for H in (rng.integers(0, 2, (1, 40)).astype(float), np.round(rng.random((1, 40)) * UNIT) / UNIT):
        answer = _protocol(epsilon=1e9).answer(MetricQuery(metric=metric, predictions=H, query_id="q"),
                                               AuditSet(a=a, y=y), np.random.default_rng(25))
        assert set(answer["release"]) == {PAIR}
        K, N, _, _ = statistics(H, a, slices_of(metric, y))
        assert answer["statistics"]["sizes"][:, 1].tolist() == [float(v) for v in N]
        assert answer["statistics"]["sums"][:, 0, 1].tolist() == [k[0] / UNIT for k in K]
        np.testing.assert_allclose(answer["values"], evaluate(metric, H, a, y), rtol=0, atol=1e-12)


def test_the_pair_release_is_reproducible_on_its_lattice_and_its_noise_has_the_stated_law():
    """3,000 one-model releases at epsilon = 2 of a model whose scores are multiples of 1/8 (support step 2^17):
    the noise on K and on Z lies on the lattice of the step the rule chooses (and the answer states), has mean
    |Y| = s / sinh(epsilon s / 2^B) (the discrete Laplace's on that lattice; 0.85 times it rejected, t-test
    alpha = 0.01), the two are uncorrelated (Pearson, alpha = 0.01), and the same seed gives the same release."""
    a, y = _audit(40, 26)
    H = np.zeros((1, 40))
    H[0, :25] = 1.0
    H[0, 25:31] = 0.375
    p, audit = _protocol(epsilon=2.0), AuditSet(a=a, y=y)
    query = MetricQuery(metric="sp", predictions=H, query_id="q")
    first = p.answer(query, audit, np.random.default_rng(1))
    again = p.answer(query, audit, np.random.default_rng(1))
    assert first["release"] == [PAIR] and np.array_equal(first["values"], again["values"])
    assert np.array_equal(first["statistics"]["sizes"], again["statistics"]["sizes"])
    assert first["scale"]["sum"].tolist() == [[0.5]] and first["scale"]["complement"].tolist() == [[0.5]]
    assert "size" not in first["scale"]
    step = pair_step(2.0, 1 << 17)  # scores are multiples of 1/8: the support step is 2^17
    assert first["scale"]["step"].tolist() == [[step / UNIT]]
    (k_exact, z_exact), = _pair_vector("sp", H, a, y)
    rng = np.random.default_rng(27)
    noise = []
    for _ in range(3_000):
        stats_ = p.answer(query, audit, rng)["statistics"]
        k, n1 = stats_["sums"][0, 0, 1] * UNIT, stats_["sizes"][0, 1] * UNIT
        assert k == round(k) and n1 == round(n1) and stats_["sizes"][0].sum() == 40.0
        noise.append((k - k_exact, n1 - k - z_exact))
    values = np.array(noise)
    assert np.all(values % step == 0) and np.any(values % (2 * step) != 0)
    mean = step / math.sinh(2.0 * step / UNIT) / UNIT
    for column in np.abs(values).T / UNIT:
        assert stats.ttest_1samp(column, mean).pvalue > ALPHA
        assert stats.ttest_1samp(column, 0.85 * mean).pvalue < ALPHA
    assert stats.pearsonr(values[:, 0], values[:, 1]).pvalue > ALPHA


@pytest.mark.parametrize("metric", ["sp", "eo", "eodds"])
def test_the_public_notes_of_an_answer_are_the_same_for_every_neighbour(metric):
    """Flip every person's A (hard labels, eighths, soft and float32 scores; one model and two; Laplace, both
    lattice rules, Gaussian): the answer's public notes -- the release kinds, the noise scales and lattice steps,
    the centres, the resolution -- never change; only the noisy statistics and values may."""
    a, y = _audit(24, 32)
    rng = np.random.default_rng(33)
    models = [rng.integers(0, 2, (1, 24)).astype(float), np.round(rng.random((1, 24)) * 8) / 8, rng.random((1, 24)),
              rng.random((1, 24)).astype(np.float32).astype(float), rng.random((2, 24))]
    params = [{"epsilon": 1.0}, {"epsilon": 0.3}, {"epsilon": 1.0, "optimise": "mean"},
              {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-6}]

    def notes(answer):
        kept = {key: answer[key] for key in ("release", "centre", "resolution", "scale", "sigma", "epsilon", "noise")
                if key in answer}
        return repr({key: (value if not isinstance(value, dict) else {k: np.asarray(v).tolist()
                                                                          for k, v in sorted(value.items())})
                     for key, value in kept.items()})

    for H in models:
        query = MetricQuery(metric=metric, predictions=H, query_id="q")
        for p in params:
            base = notes(_protocol(**p).answer(query, AuditSet(a=a, y=y), np.random.default_rng(0)))
            for j in range(24):
                flipped = a.copy()
                flipped[j] = 1 - flipped[j]
                assert notes(_protocol(**p).answer(query, AuditSet(a=flipped, y=y), np.random.default_rng(j))) == base


def test_the_support_step_depends_on_the_predictions_and_the_slice_only():
    """g = gcd(2^B, r_j over the slice), per slice: 2^B for hard labels and for a model constant at 0, 2^B/8 for
    multiples of 1/8, 2^B/2 for halves."""
    rng = np.random.default_rng(31)
    everybody = [np.ones(40, dtype=bool)]
    assert support_steps(rng.integers(0, 2, (1, 40)).astype(float), everybody) == [UNIT]
    assert support_steps(np.full((1, 40), 0.375), everybody) == [UNIT // 8]
    assert support_steps(np.zeros((1, 40)), everybody) == [UNIT]
    halves = np.zeros((1, 40))
    halves[0, :20] = 0.5
    slices = [np.arange(40) < 20, np.arange(40) >= 20, everybody[0]]
    assert support_steps(halves, slices) == [UNIT // 2, UNIT, UNIT // 2]


def _median_abs(epsilon: float, step: int) -> float:
    """The median of |Y|, Y on the step's lattice with decay epsilon / 2^B, by summing its pmf."""
    alpha = math.exp(-epsilon * step / UNIT)
    ks = np.arange(0, int(40 / (1 - alpha)) + 2)  # the tail beyond holds < e^-40 of the mass
    cdf = (1 - alpha) / (1 + alpha) * (2 * np.cumsum(alpha ** ks.astype(float)) - 1)
    return float(np.searchsorted(cdf, 0.5) * step)


def test_the_pair_step_has_the_smallest_median_of_its_candidates():
    """The chosen s = g / 2^i has the smallest median |Y| of every candidate (by summing the pmf), the coarsest on
    a tie; 'mean' takes g; hard labels get g at epsilon = 0.5, 2 and 4, and g/2 at epsilon = 1."""
    assert [pair_step(e, UNIT) for e in (0.5, 1.0, 2.0, 4.0)] == [UNIT, UNIT // 2, UNIT, UNIT]
    for epsilon in (0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 4.0, 10.0):
        for support in (UNIT, UNIT // 8):
            assert pair_step(epsilon, support, "mean") == support
            chosen = pair_step(epsilon, support)
            medians = {support >> i: _median_abs(epsilon, support >> i) for i in range(support.bit_length())
                       if support >> i >= 1 << 12}  # finer steps: the continuous limit, ln 2 2^B / epsilon
            assert _median_abs(epsilon, chosen) == min(medians.values())
            assert chosen == max(s_ for s_, med in medians.items() if med == medians[chosen])


def test_hard_label_pair_noise_has_the_geometric_law_on_its_step():
    """Hard labels at epsilon = 1 (step 2^B/2), at epsilon = 4 (step 2^B) and at epsilon = 1 with optimise = 'mean'
    (step 2^B): the released noise on K, in steps, has the discrete Laplace pmf with decay epsilon x step / 2^B
    (chi-square, alpha = 0.01, 2,000 releases), and the share of exact draws that half that noise gives is
    rejected (binomial test); no draw falls between the lattice's points."""
    a, y = _audit(60, 28)
    H = (np.random.default_rng(29).random((1, 60)) < 0.3).astype(float)
    query = MetricQuery(metric="sp", predictions=H, query_id="q")
    (k_exact, _), = _pair_vector("sp", H, a, y)
    for epsilon, optimise, step in ((1.0, "median", UNIT // 2), (4.0, "median", UNIT), (1.0, "mean", UNIT)):
        p, rng = _protocol(epsilon=epsilon, optimise=optimise), np.random.default_rng(30)
        drawn = np.array([p.answer(query, AuditSet(a=a, y=y), rng)["statistics"]["sums"][0, 0, 1] * UNIT - k_exact
                          for _ in range(2_000)])
        assert np.all(drawn % step == 0)
        observed = np.bincount(np.minimum(np.abs(drawn / step), 3).astype(int), minlength=4)  # |Y| 0, 1, 2, >= 3
        alpha = math.exp(-epsilon * step / UNIT)
        pmf = [(1 - alpha) / (1 + alpha)] + [2 * (1 - alpha) / (1 + alpha) * alpha ** k for k in (1, 2)]
        expected = np.array(pmf + [1 - sum(pmf)]) * len(drawn)
        keep = expected >= 5  # rarer bins are left out, the kept ones rescaled to the kept draws
        assert keep.sum() >= 2
        assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()
                               ).pvalue > ALPHA
        half = math.exp(-2 * epsilon * step / UNIT)  # half the noise: the decay doubled
        assert stats.binomtest(int(observed[0]), len(drawn), (1 - half) / (1 + half)).pvalue < ALPHA
