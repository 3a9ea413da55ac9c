"""Floating-point noise: float releases leak their input; the lattice and snapping samplers do not.

The adversary reads the code. For each DP protocol it fixes, before any release
is drawn, events that are empty in exact arithmetic: {y impossible under the
neighbouring audit set} for the textbook float release (replayed bit for bit,
:func:`tests.reliability.fp_attack.possible_additive`) and {y off the public
lattice}. On an n = 5 audit set whose neighbours differ in person 0's attribute,
with a probe accepting only person 0, it draws releases under both neighbours and
bounds epsilon from each event (Clopper-Pearson, ALPHA_EPS = 0.05, both
directions). The float-unsafe sampler (the control) must be caught far above its
claim; every floating-point-safe sampler must show no bound above its claim.
The default run uses 10,000 releases per neighbour; ``-m reliability`` runs
100,000. Seeded, no timing. Other tests: alpha = 0.01 where a p-value is tested.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from parley.protocols import get_protocol
from parley.protocols.base import MetricQuery
from parley.protocols.dp.snapping import snapping_laplace, uniform_doubles

from .fp_attack import MECHANISMS, campaign, distinguish
from .hostile import N, audit_set

#: The float-unsafe control is configured on purpose here; its warning is tested once, below.
pytestmark = pytest.mark.filterwarnings("ignore::parley.protocols.dp.lattice.FloatUnsafeWarning")

ALPHA = 0.01
#: Confidence of the epsilon lower bounds: 95 %.
ALPHA_EPS = 0.05
FAST_DRAWS = 10_000
FULL_DRAWS = 100_000
#: The control must be caught at least this far above its claim (its bound is about 7 at 10,000 draws).
CAUGHT_MARGIN = 3.0

SAFE = [(name, params, claim, sampler) for name, params, claim in MECHANISMS
        for sampler in (("lattice", "snapping") if name == "laplace" else ("lattice",))]


def _report(result: dict, claim: float) -> None:
    print(json.dumps({"claim": claim, **{k: result[k] for k in ("protocol", "sampler", "draws", "lower_bound",
                                                                  "bounds", "counts")}}))


@pytest.mark.parametrize(("name", "params", "claim"), MECHANISMS, ids=[m[0] for m in MECHANISMS])
def test_the_float_unsafe_sampler_is_caught_by_an_exact_arithmetic_empty_event(name, params, claim):
    result = campaign(name, params, "float-unsafe", FAST_DRAWS, seed=11, alpha=ALPHA_EPS)
    _report(result, claim)
    assert result["counts"]["float:not-a"][1] == 0 and result["counts"]["float:not-a_prime"][1] == 0  # exact replay
    assert result["lower_bound"] > claim + CAUGHT_MARGIN


@pytest.mark.parametrize(("name", "params", "claim", "sampler"), SAFE, ids=[f"{s[0]}-{s[3]}" for s in SAFE])
def test_no_fixed_event_separates_a_floating_point_safe_sampler(name, params, claim, sampler):
    result = campaign(name, params, sampler, FAST_DRAWS, seed=12, alpha=ALPHA_EPS)
    _report(result, claim)
    assert result["lower_bound"] <= claim
    if sampler == "lattice":  # every release is on the public lattice, under both neighbours
        assert result["counts"]["lattice:not-a"] == [0, 0] and result["counts"]["lattice:not-a_prime"] == [0, 0]


@pytest.mark.reliability
@pytest.mark.parametrize(("name", "params", "claim", "sampler"),
                         [(*m, "float-unsafe") for m in MECHANISMS] + SAFE,
                         ids=[f"{m[0]}-float-unsafe" for m in MECHANISMS] + [f"{s[0]}-{s[3]}" for s in SAFE])
def test_exact_arithmetic_empty_events_at_100k_releases(name, params, claim, sampler):
    """The campaign at 100,000 releases per neighbour: the control far above its claim, the rest at or below."""
    result = campaign(name, params, sampler, FULL_DRAWS, seed=13, alpha=ALPHA_EPS)
    _report(result, claim)
    if sampler == "float-unsafe":
        assert result["lower_bound"] > claim + 2 * CAUGHT_MARGIN
    else:
        assert result["lower_bound"] <= claim


def test_the_textbook_sampler_reveals_which_neighbour_it_was_given():
    """Mironov Sec. 4 on numpy: most releases are impossible under the neighbouring input."""
    x, delta = 0.1, 0.5 + 1 / 999  # an SP answer and its global sensitivity on 1,000 rows (Thm. 5)
    releases = np.random.default_rng(0).laplace(x, delta / 1.0, size=400)
    found = distinguish(releases, x, x + 1 / 250, delta)  # the neighbour moves SP by about 1/n_1
    assert found["possible_under_truth"] == 1.0  # the attack's replay of numpy is bit-exact
    assert found["ruled_out_other"] > 0.5  # epsilon-DP allows no release that rules a neighbour out


def test_snapped_releases_lie_on_one_grid_whatever_the_input():
    """The support of the snapped release (multiples of Lambda Delta within B) does not depend on the input."""
    rng = np.random.default_rng(1)
    for x in (0.1, 0.1 + 1 / 250, -0.7):
        values, notes = snapping_laplace(np.full(2000, x), 0.5, 1.0, 1.0, rng)
        steps = values / notes["snap_grid"]
        np.testing.assert_array_equal(steps, np.round(steps))
        assert np.abs(values).max() <= notes["snap_bound"]
        assert notes["epsilon_guaranteed"] <= 1.0


def test_uniform_doubles_are_uniform():
    u = uniform_doubles(np.random.default_rng(2), 50_000)
    assert (u > 0).all() and (u < 1).all()
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    # Unlike a textbook uniform (multiples of 2^-53), U* below 1/4 reaches doubles between those multiples.
    small = u[u < 0.25]
    assert (np.mod(small * 2.0**53, 1.0) != 0).mean() > 0.4
    textbook = np.random.default_rng(3).random(50_000)
    assert (np.mod(textbook * 2.0**53, 1.0) != 0).mean() == 0


@pytest.mark.parametrize("x", [0.0, 0.3])
def test_snapping_has_the_laplace_distribution_at_the_grid_scale(x):
    """Chi-square of the snapped release against Laplace(lambda) rounded to the grid (alpha 0.01), with power."""
    delta, epsilon = 0.5, 1.0
    values, notes = snapping_laplace(np.full(40_000, x), delta, epsilon, 1.0, np.random.default_rng(3))
    grid, lam = notes["snap_grid"], notes["snap_lambda"] * delta
    k = np.round(values / grid).astype(int)

    def expected(scale: float) -> tuple[np.ndarray, np.ndarray]:
        ks = np.arange(k.min(), k.max() + 1)
        cdf = stats.laplace(loc=x, scale=scale).cdf
        p = cdf((ks + 0.5) * grid) - cdf((ks - 0.5) * grid)
        p[0] += cdf((ks[0] - 0.5) * grid)
        p[-1] += 1 - cdf((ks[-1] + 0.5) * grid)
        return ks, p

    def pvalue(scale: float) -> float:
        ks, p = expected(scale)
        observed = np.array([(k == j).sum() for j in ks], dtype=float)
        keep = p * k.size >= 5  # merge the sparse tails into one bin
        obs = np.append(observed[keep], observed[~keep].sum())
        exp = np.append(p[keep], p[~keep].sum()) * k.size
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue

    assert pvalue(lam) > ALPHA
    assert pvalue(1.25 * lam) < ALPHA  # the test can tell a 25% wrong scale at this sample size


def test_laplace_protocol_offers_the_snapping_sampler():
    audit = audit_set()
    P = get_protocol("laplace")
    protocol = P(P.Params(epsilon=0.5, sampler="snapping"))
    H = np.random.default_rng(4).integers(0, 2, size=(3, N)).astype(np.float64)
    query = MetricQuery(metric="sp", predictions=H, query_id="q")
    answer = protocol.answer(query, audit, np.random.default_rng(5))
    assert answer["sampler"] == "snapping" and answer["epsilon_guaranteed"] <= 0.5
    steps = answer["values"] / answer["snap_grid"]
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
    assert protocol.cost(query).epsilon == 0.5
    assert "sampler" not in P.Params(epsilon=0.5).model_dump()  # default left out: existing cell ids unchanged


def test_float_unsafe_is_an_explicit_opt_in_that_warns_and_textbook_is_gone():
    from pydantic import ValidationError

    from parley.protocols.dp.lattice import FLOAT_UNSAFE_WARNING, FloatUnsafeWarning
    for name in ("laplace", "smooth-cauchy", "smooth-laplace"):
        params = {"epsilon": 0.5, "delta": 1e-6} if name == "smooth-laplace" else {"epsilon": 0.5}
        cls = get_protocol(name)
        assert cls.Params(**params).sampler == "lattice"
        with pytest.raises(ValidationError):
            cls.Params(**params, sampler="textbook")
        with pytest.warns(FloatUnsafeWarning) as caught:
            cls.Params(**params, sampler="float-unsafe")
        assert str(caught[0].message) == f"protocol {name!r}: {FLOAT_UNSAFE_WARNING}"


def _count_campaign(draws: int, seed: int, float_control: bool) -> dict[str, object]:
    """``dp-counts`` (or its float control) on the n = 5 pair: the released group-1 size and sum under both sides.

    Events, fixed before drawing: ``lattice`` = {the released sum K or its complement Z = N - K off the side's
    exact value plus the pair's public noise lattice s Z} (s from :func:`pair_step` on the public support step,
    here a whole prediction; at epsilon = 1 half a prediction: both sides' K and Z lie on it, so no output is
    possible on one side only);
    ``float`` (the control only) = {the released size impossible for numpy's textbook sampler at the other
    side's size} (:func:`tests.reliability.fp_attack.possible`). Returns the counts and the largest epsilon lower
    bound.
    """
    from parley.protocols import AuditSet
    from parley.protocols.mechanisms.count_dp import (
        PREDICTION_BITS,
        noise_scales,
        pair_step,
        slices_of,
        statistics,
        support_steps,
    )

    from .fp_attack import A_PRIME, PROBE, A, Y, event_lower_bound, lattice_possible, possible

    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(epsilon=1.0))
    query = MetricQuery(metric="sp", predictions=PROBE, query_id="fp")
    step = pair_step(1.0, support_steps(PROBE, slices_of("sp", Y))[0]) / 2.0 ** PREDICTION_BITS
    assert step == 0.5
    scale = float(noise_scales(1, protocol.params)["size"])
    sizes = [int(a.sum()) for a in (A, A_PRIME)]
    releases = []
    for i, a in enumerate((A, A_PRIME)):
        rng = np.random.default_rng([seed, i])
        if float_control:  # the textbook float release of the same count: numpy's laplace at the same scale
            releases.append([(float(v), 0.0) for v in rng.laplace(sizes[i], scale, size=draws)])
            continue
        out = []
        for _ in range(draws):
            answer = protocol.answer(query, AuditSet(a=a, y=Y), rng)
            stats_ = answer["statistics"]
            assert answer["scale"]["step"].tolist() == [[step]]  # the stated step is the public one, on both sides
            out.append((float(stats_["sizes"][0][1]), float(stats_["sums"][0][0][1])))
        releases.append(out)
    counts: dict[str, list[int]] = {}
    bounds: dict[str, float] = {}
    # the one-model Laplace release is the pair (K, Z): K + Y_1 and Z + Y_2 (prediction units) with Y_1, Y_2 on the
    # step's lattice: an output is possible under a side iff both differ from that side's exact K, Z by multiples
    exact = [statistics(PROBE, a, slices_of("sp", Y)) for a in (A, A_PRIME)]
    k_z = [(K[0][0] / 2.0 ** PREDICTION_BITS, N[0] - K[0][0] / 2.0 ** PREDICTION_BITS) for K, N, _, _ in exact]
    tests = {"lattice": lambda r, side: (lattice_possible(r[1] - k_z[side][0], step)
                                         and lattice_possible(r[0] - r[1] - k_z[side][1], step))}
    if float_control:
        tests["float"] = lambda r, side: possible(r[0], float(sizes[side]), scale)
    for event, test in tests.items():
        for target in (0, 1):
            other = 1 - target
            hits = sum(not test(r, target) for r in releases[other])
            own = sum(not test(r, target) for r in releases[target])
            counts[f"{event}:not-{target}"] = [hits, own]
            bounds[f"{event}:not-{target}"] = event_lower_bound(hits, own, draws, ALPHA_EPS)
    return {"counts": counts, "bounds": bounds, "lower_bound": max(bounds.values())}


def test_count_level_releases_lie_on_their_public_lattice_and_a_float_count_release_is_caught():
    """dp-counts draws integers: no fixed event separates neighbours; the same counts with float noise are caught."""
    safe = _count_campaign(FAST_DRAWS // 2, seed=21, float_control=False)
    print(json.dumps(safe))
    assert safe["counts"]["lattice:not-0"] == [0, 0] and safe["counts"]["lattice:not-1"] == [0, 0]
    assert safe["lower_bound"] <= 1.0
    control = _count_campaign(FAST_DRAWS, seed=22, float_control=True)
    print(json.dumps(control))
    assert control["counts"]["float:not-0"][1] == 0 and control["counts"]["float:not-1"][1] == 0  # exact replay
    assert control["lower_bound"] > 1.0 + CAUGHT_MARGIN
