"""The two-level privacy audit (seeded): the mechanism level draws the protocols' own laws, its bounds sit under
the claims, and the wiring level catches a compliance party that leaks (the broken-wiring control).

Every test is seeded (split, pair, run seeds, the parties' secrets, the mechanism's draws): its outcome is a
fixed function of the code, never of timing or luck at test time.
"""

from __future__ import annotations

import numpy as np
import pytest

from parley.protocols import get_protocol
from parley.protocols.audit.mechanism import answer_loop, draw_answers
from parley.protocols.audit.privacy_audit import audit_epsilon_samples
from parley.protocols.base import AuditSet, MetricQuery
from parley.scenarios.compare.audit import WIRING_ALPHA, audit_scenario, wiring_test, worst_case_attributes
from tests.fixed_secrets import run_secrets

N = 50
DATASET = {"name": "adult", "protected": "race", "audit_size": 20, "train_size": 100}
PROTOCOLS = [("laplace", {"epsilon": 1.0}), ("smooth-cauchy", {"epsilon": 1.0}),
             ("smooth-laplace", {"epsilon": 0.5, "delta": 1e-6}), ("dp-counts", {"epsilon": 1.0}),
             ("dp-counts", {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-6})]


def _probe(flip: bool = False) -> tuple[MetricQuery, AuditSet]:
    """The audit's probe (a model accepting only person 0) on the worst-case audit set, or its neighbour."""
    a = worst_case_attributes(N, 0)
    if flip:
        a[0] = 1 - a[0]
    predictions = np.zeros((1, N))
    predictions[0, 0] = 1.0
    return MetricQuery("sp", predictions, "probe"), AuditSet(a, (np.arange(N) % 2).astype(np.int64))


@pytest.mark.parametrize(("name", "params"), PROTOCOLS)
@pytest.mark.parametrize("flip", [False, True])
def test_vectorised_release_follows_the_protocols_own_answers(name, params, flip):
    """10^5 vectorised draws against 1,000 answers of the protocol's own ``answer``: the wiring test passes."""
    protocol = get_protocol(name)(get_protocol(name).Params(**params))
    query, audit = _probe(flip)
    drawn = draw_answers(protocol, query, audit, np.random.default_rng(1), 100_000)[:, 0]
    answered = answer_loop(protocol, query, audit, np.random.default_rng(2), 1000)[:, 0]
    assert wiring_test(answered, drawn) >= WIRING_ALPHA


def test_wiring_test_finds_half_the_noise_and_none():
    """The test's power where the control needs it: 100 releases with half the Laplace noise, or none."""
    protocol = get_protocol("laplace")(get_protocol("laplace").Params(epsilon=1.0))
    query, audit = _probe()
    rng = np.random.default_rng(3)
    drawn = draw_answers(protocol, query, audit, rng, 100_000)[:, 0]
    exact = float(audit.answer(query)[0])
    fair = draw_answers(protocol, query, audit, rng, 100)[:, 0]
    half = exact + (draw_answers(protocol, query, audit, rng, 100)[:, 0] - exact) / 2
    assert wiring_test(fair, drawn) >= WIRING_ALPHA
    assert wiring_test(half, drawn) < WIRING_ALPHA
    assert wiring_test(np.full(20, exact), drawn) < 1e-6


@pytest.mark.parametrize(("name", "params"), [("laplace", {"epsilon": 1.0}), ("dp-counts", {"epsilon": 1.0})])
def test_mechanism_level_bound_is_under_the_claim_and_close_to_it(name, params):
    """10^5 draws per neighbour and half: the bound stays at or below epsilon = 1 and is not vacuous."""
    protocol = get_protocol(name)(get_protocol(name).Params(**params))
    rng = np.random.default_rng(4)
    sides = [draw_answers(protocol, *_probe(flip), rng, 200_000)[:, 0] for flip in (False, True)]
    result = audit_epsilon_samples(sides[0][:100_000], sides[1][:100_000], sides[0][100_000:], sides[1][100_000:],
                                   alpha=0.05)
    assert 0.8 < result.epsilon_lower <= 1.0, result


def test_raw_mechanism_level_bound_is_large():
    protocol = get_protocol("raw")()
    rng = np.random.default_rng(5)
    sides = [draw_answers(protocol, *_probe(flip), rng, 20_000)[:, 0] for flip in (False, True)]
    result = audit_epsilon_samples(sides[0][:10_000], sides[1][:10_000], sides[0][10_000:], sides[1][10_000:],
                                   alpha=0.05)
    assert (result.p, result.p_prime) == (1.0, 0.0)
    assert result.epsilon_lower > 7.0  # ln of two Clopper-Pearson limits at 10,000 draws: 7.73


def _leaky_laplace(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """The compliance party's Laplace release keeps ``share`` of its noise (0: it releases the exact value).

    Only the party's sampler is patched (``laplace_lattice`` as the protocol module calls it); the mechanism
    level draws the law from the protocol's public plan, so it still draws the full noise.
    """
    from parley.protocols.mechanisms import laplace

    real = laplace.laplace_lattice

    def leaky(exact, sensitivity, epsilon, n, rng):
        noisy, notes = real(exact, sensitivity, epsilon, n, rng)
        return np.asarray(exact) + share * (noisy - np.asarray(exact)), notes

    monkeypatch.setattr(laplace, "laplace_lattice", leaky)


def _two_level(wiring_runs: int):
    return audit_scenario({"name": "laplace", "epsilon": 1.0}, DATASET, runs=0, alpha=0.05, seed=3,
                          secrets=run_secrets(3), mode="two-level", draws=20_000, wiring_runs=wiring_runs)


def test_broken_wiring_control_a_party_releasing_the_exact_value_is_caught(monkeypatch):
    """The control: the parties release the exact answer; the mechanism level alone would not see it."""
    _leaky_laplace(monkeypatch, 0.0)
    audit = _two_level(10)
    assert audit.epsilon_lower <= 1.0  # the mechanism level audits the protocol's law, which is fine
    assert audit.wiring_ok is False and audit.wiring_p is not None and audit.wiring_p < 1e-6, audit


@pytest.mark.system  # 400 whole-scenario runs, about 45 CPU-s
def test_broken_wiring_control_half_the_noise_is_caught_and_the_correct_party_passes(monkeypatch):
    correct = _two_level(100)
    assert correct.wiring_ok is True, correct
    _leaky_laplace(monkeypatch, 0.5)
    leaky = _two_level(100)
    assert leaky.wiring_ok is False, leaky


def test_a_two_level_audit_table_is_reused_only_at_the_same_draws_and_wiring_runs(tmp_path):
    import pandas as pd

    from parley.scenarios.compare.audit import MECHANISM_DRAWS
    from parley.scenarios.compare.plan import plan
    from parley.scenarios.compare.run import WIRING_RUNS, _saved_audits, code_digest

    p = plan("adult", quick=True)
    path = tmp_path / "audit.csv"
    rows = [{"protocol": label, "runs": MECHANISM_DRAWS, "audit_size": p.audit_dataset["audit_size"],
             "epsilon_lower": 0.1, "mode": "two-level", "mechanism_draws": MECHANISM_DRAWS,
             "wiring_runs": 1 if label.startswith("cov-threshold") else WIRING_RUNS[1], "wiring_p": 0.5,
             "code": code_digest()} for label in p.audit_rows]
    pd.DataFrame(rows).to_csv(path, index=False)
    assert _saved_audits(p, path) is not None
    pd.DataFrame([{**r, "wiring_runs": 7} for r in rows]).to_csv(path, index=False)
    assert _saved_audits(p, path) is None  # other wiring runs: audit again
    pd.DataFrame([{**r, "mechanism_draws": 10} for r in rows]).to_csv(path, index=False)
    assert _saved_audits(p, path) is None  # other draws: audit again
