"""Unit tests for parley.protocols.metrics: hand-computed values, vectorised == per-model loop,
error messages (matched on the module's templates) and a cross-check against fairlearn
on the real Adult data."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from parley.protocols.errors import EmptyGroupError, QueryError
from parley.protocols.metrics import (
    EMPTY_AUDIT,
    EMPTY_GROUP,
    LABELS_REQUIRED,
    LENGTH_MISMATCH,
    METRICS,
    NOT_BINARY,
    UNKNOWN_METRIC,
    MetricInfo,
    abs_equal_opportunity_difference,
    abs_statistical_parity_difference,
    covariance,
    equal_opportunity_difference,
    equalized_odds_difference,
    evaluate,
    group_sizes,
    predictive_equality_difference,
    predictive_rate_parity_difference,
    statistical_parity_difference,
)

TIGHT = dict(rel=1e-12, abs=1e-15)

# Tiny audit set: N1 = 3 (indices 0-2), N0 = 2 (indices 3-4).
A = np.array([1, 1, 1, 0, 0], dtype=np.int8)
Y = np.array([1, 0, 1, 1, 0], dtype=np.int8)
H_SOFT = np.array([0.2, 0.4, 0.9, 0.1, 0.5])
ALL_KEYS = ("sp", "abs_sp", "eo", "abs_eo", "pe", "eodds", "prp", "cov")


def one_hot(j: int, n: int = 5) -> np.ndarray:
    h = np.zeros(n)
    h[j] = 1.0
    return h


def raises_exactly(exc_type, message: str):
    """pytest.raises that demands the whole message equals ``message``."""
    return pytest.raises(exc_type, match=rf"\A{re.escape(message)}\Z")


# -- hand-computed examples -------------------------------------------------------------


class TestHandComputed:
    def test_sp_example_1_sign(self):
        # Example 1 of the query-leakage paper: accept one individual only.
        H = np.vstack([one_hot(0), one_hot(3)])
        assert statistical_parity_difference(H, A) == pytest.approx([1 / 3, -1 / 2], **TIGHT)
        assert abs_statistical_parity_difference(H, A) == pytest.approx([1 / 3, 1 / 2], **TIGHT)

    def test_sp_soft(self):
        # mean over a=1: (0.2+0.4+0.9)/3 = 0.5 ; over a=0: (0.1+0.5)/2 = 0.3
        assert statistical_parity_difference(H_SOFT, A) == pytest.approx(0.2, **TIGHT)

    def test_eo_sign_and_value(self):
        # y=1 slice: a=1 -> {0, 2} (N11 = 2), a=0 -> {3} (N10 = 1)
        H = np.vstack([one_hot(0), one_hot(3), one_hot(1), H_SOFT])
        eo = equal_opportunity_difference(H, A, Y)
        # individual 1 has y=0, so EO ignores it (Remark 5)
        assert eo == pytest.approx([1 / 2, -1.0, 0.0, (0.2 + 0.9) / 2 - 0.1], **TIGHT)
        assert abs_equal_opportunity_difference(H, A, Y) == pytest.approx(np.abs(eo), **TIGHT)

    def test_pe_value(self):
        # y=0 slice: a=1 -> {1}, a=0 -> {4}
        H = np.vstack([one_hot(1), one_hot(4), H_SOFT])
        pe = predictive_equality_difference(H, A, Y)
        assert pe == pytest.approx([1.0, -1.0, 0.4 - 0.5], **TIGHT)

    def test_eodds_is_worst_case(self):
        # H_SOFT: EO = 0.45, PE = -0.1 -> 0.45 ; one_hot(4): EO = 0, PE = -1 -> 1
        H = np.vstack([H_SOFT, one_hot(4)])
        assert equalized_odds_difference(H, A, Y) == pytest.approx([0.45, 1.0], **TIGHT)

    def test_prp_soft_and_binary(self):
        # soft: a=1 -> (0.2+0.9)/1.5 = 11/15 ; a=0 -> 0.1/0.6 = 1/6
        # binary h = [1,1,0,1,1]: a=1 precision 1/2, a=0 precision 1/2 -> 0
        # binary h = [1,0,0,0,1]: a=1 precision 1,   a=0 precision 0   -> 1
        H = np.vstack([H_SOFT, [1, 1, 0, 1, 1], [1, 0, 0, 0, 1]])
        expected = [11 / 15 - 1 / 6, 0.0, 1.0]
        assert predictive_rate_parity_difference(H, A, Y) == pytest.approx(expected, **TIGHT)

    def test_covariance_value_and_lemma_2_identity(self):
        # mean(h a) = 1.5/5 = 0.3, mean(h) = 2.1/5 = 0.42, mean(a) = 0.6 -> 0.3 - 0.252
        assert covariance(H_SOFT, A) == pytest.approx(0.048, **TIGHT)
        n0, n1 = group_sizes(A)
        assert covariance(H_SOFT, A) == pytest.approx(n0 * n1 / 25 * 0.2, **TIGHT)
        assert covariance(H_SOFT, A) == pytest.approx(np.cov(H_SOFT, A, bias=True)[0, 1], **TIGHT)

    def test_covariance_of_constant_a_is_zero(self):
        assert covariance(H_SOFT, np.ones(5, dtype=int)) == 0.0

    def test_group_sizes(self):
        assert group_sizes(A) == (2, 3)
        assert group_sizes([0, 0, 0]) == (3, 0)
        assert all(type(v) is int for v in group_sizes(A))

    @pytest.mark.parametrize("key", ALL_KEYS)
    def test_shapes_and_dtypes(self, key):
        H = np.vstack([H_SOFT, 1 - H_SOFT, one_hot(0) + one_hot(3)])
        out = evaluate(key, H, A, Y)
        assert out.shape == (3,) and out.dtype == np.float64
        single = evaluate(key, H_SOFT, A, Y)
        assert isinstance(single, np.float64) and np.ndim(single) == 0
        # one model goes through a BLAS dot instead of gemv: equal up to rounding
        assert single == pytest.approx(out[0], **TIGHT)
        # integer and list inputs are accepted and give the same float64 result
        np.testing.assert_array_equal(evaluate(key, H.tolist(), A.tolist(), Y.tolist()), out)


# -- vectorised == per-model loop -------------------------------------------------------


def loop_reference(key: str, H: np.ndarray, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Straightforward per-model implementation with boolean masks."""
    out = []
    for h in H:
        def gap(mask, h=h):
            return h[mask & (a == 1)].mean() - h[mask & (a == 0)].mean()

        every = np.ones_like(a, dtype=bool)
        sp, eo, pe = gap(every), gap(y == 1), gap(y == 0)
        prec = [np.sum(h[a == g] * y[a == g]) / np.sum(h[a == g]) for g in (0, 1)]
        out.append({
            "sp": sp, "abs_sp": abs(sp), "eo": eo, "abs_eo": abs(eo), "pe": pe,
            "eodds": max(abs(eo), abs(pe)), "prp": prec[1] - prec[0],
            "cov": np.mean(h * a) - np.mean(h) * np.mean(a),
        }[key])
    return np.array(out)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("key", ALL_KEYS)
def test_vectorised_equals_loop(key, seed, binary):
    rng = np.random.default_rng(seed)
    m, n = 13, 200
    H = rng.random((m, n))
    if binary:
        H = (H < 0.4).astype(np.float64)
    a = (rng.random(n) < 0.3).astype(np.int8)
    y = (rng.random(n) < 0.5).astype(np.int8)
    got = evaluate(key, H, a, y)
    assert got == pytest.approx(loop_reference(key, H, a.astype(float), y), rel=1e-12, abs=1e-14)
    lo, hi = METRICS[key].range
    assert np.all((got >= lo) & (got <= hi))


@pytest.mark.parametrize("seed", range(3))
def test_covariance_matches_numpy_cov_and_sp(seed):
    rng = np.random.default_rng(seed)
    H = rng.random((9, 300))
    a = (rng.random(300) < 0.7).astype(np.int8)
    want = [np.cov(h, a, bias=True)[0, 1] for h in H]
    assert covariance(H, a) == pytest.approx(want, rel=1e-12, abs=1e-15)
    n0, n1 = group_sizes(a)
    sp = statistical_parity_difference(H, a)
    assert covariance(H, a) == pytest.approx(n0 * n1 / 300**2 * sp, rel=1e-12)


# -- registry ---------------------------------------------------------------------------


def test_registry_entries():
    assert tuple(METRICS) == ALL_KEYS
    needs = {"eo", "abs_eo", "pe", "eodds", "prp"}
    for key, info in METRICS.items():
        assert isinstance(info, MetricInfo) and info.key == key
        assert info.needs_labels == (key in needs)
        assert info.description and info.range[0] < info.range[1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        METRICS["sp"].key = "x"
    with pytest.raises(TypeError):
        METRICS["new"] = METRICS["sp"]


def test_evaluate_dispatches_to_the_registered_function():
    H = np.vstack([H_SOFT, 1 - H_SOFT])
    for key, info in METRICS.items():
        args = (H, A, Y) if info.needs_labels else (H, A)
        np.testing.assert_array_equal(evaluate(key, H, A, Y), info.function(*args))


# -- errors -----------------------------------------------------------------------------


class TestErrors:
    def test_unknown_metric_lists_known_keys(self):
        msg = UNKNOWN_METRIC.format(metric="dp", known=", ".join(ALL_KEYS))
        with raises_exactly(QueryError, msg):
            evaluate("dp", H_SOFT, A)
        assert all(k in msg for k in ALL_KEYS)

    @pytest.mark.parametrize("key", ["eo", "abs_eo", "pe", "eodds", "prp"])
    def test_labels_required(self, key):
        with raises_exactly(QueryError, LABELS_REQUIRED.format(metric=key)):
            evaluate(key, H_SOFT, A)
        with raises_exactly(QueryError, LABELS_REQUIRED.format(metric=key)):
            METRICS[key].function(H_SOFT, A, None)

    @pytest.mark.parametrize(
        ("key", "slice_"),
        [("sp", ""), ("abs_sp", ""), ("eo", " among y=1"), ("abs_eo", " among y=1"),
         ("pe", " among y=0"), ("eodds", " among y=1"), ("prp", "")],
    )
    def test_empty_group(self, key, slice_):
        a = np.ones(5, dtype=int)
        with raises_exactly(EmptyGroupError, EMPTY_GROUP.format(metric=key, group=0, slice=slice_)):
            evaluate(key, H_SOFT, a, Y)

    def test_empty_advantaged_group(self):
        with raises_exactly(EmptyGroupError, EMPTY_GROUP.format(metric="sp", group=1, slice="")):
            statistical_parity_difference(H_SOFT, np.zeros(5, dtype=int))

    def test_empty_slice_y1(self):
        # nobody with a=1 has y=1
        y = np.array([0, 0, 0, 1, 1])
        msg = EMPTY_GROUP.format(metric="abs_eo", group=1, slice=" among y=1")
        with raises_exactly(EmptyGroupError, msg):
            abs_equal_opportunity_difference(H_SOFT, A, y)

    def test_empty_slice_y0_in_eodds(self):
        # both groups have y=1 members, but a=0 has no y=0 member
        y = np.array([1, 0, 1, 1, 1])
        msg = EMPTY_GROUP.format(metric="eodds", group=0, slice=" among y=0")
        with raises_exactly(EmptyGroupError, msg):
            equalized_odds_difference(H_SOFT, A, y)

    def test_prp_zero_acceptance_is_rate_zero_not_a_refusal(self):
        """zero_division=0: a group the model accepts nobody in has precision 0 (no A-dependent refusal)."""
        H = np.vstack([H_SOFT, [0.3, 0.0, 0.5, 0.0, 0.0], [0, 0, 0, 1, 1]])
        values = predictive_rate_parity_difference(H, A, Y)
        for row, h in enumerate(H):
            rates = []
            for group in (0, 1):
                members = np.equal(A, group)
                mass = h[members].sum()
                rates.append(0.0 if mass == 0 else float((h * Y)[members].sum() / mass))
            assert values[row] == pytest.approx(rates[1] - rates[0])
        assert 0.0 in {float((H[1] * (A == 0)).sum()), float((H[2] * (A == 1)).sum())}  # the case is exercised

    def test_empty_group_text_names_no_group(self):
        """Which group is empty is a fact about A: the two cases read the same."""
        texts = set()
        for a in (np.ones(5, dtype=int), np.zeros(5, dtype=int)):
            with pytest.raises(EmptyGroupError) as info:
                statistical_parity_difference(H_SOFT, a)
            texts.add(str(info.value))
        assert texts == {EMPTY_GROUP.format(metric="sp", slice="")}

    def test_empty_audit(self):
        with raises_exactly(EmptyGroupError, EMPTY_AUDIT.format(metric="cov")):
            covariance(np.zeros((3, 0)), np.zeros(0, dtype=int))

    def test_length_mismatch_a(self):
        msg = LENGTH_MISMATCH.format(metric="sp", name="a", length=4, n=5)
        with raises_exactly(QueryError, msg):
            statistical_parity_difference(H_SOFT, A[:4])
        assert "4" in msg and "5" in msg

    def test_length_mismatch_y(self):
        msg = LENGTH_MISMATCH.format(metric="eo", name="y", length=6, n=5)
        with raises_exactly(QueryError, msg):
            equal_opportunity_difference(np.vstack([H_SOFT, H_SOFT]), A, np.append(Y, 1))

    def test_non_binary_attribute(self):
        with raises_exactly(QueryError, NOT_BINARY.format(metric="cov", name="a", value=2)):
            covariance(H_SOFT, np.array([1, 1, 2, 0, 0]))

    def test_empty_group_error_is_a_query_error(self):
        assert issubclass(EmptyGroupError, QueryError)


# -- cross-check against fairlearn on Adult ---------------------------------------------


@pytest.fixture(scope="module")
def adult_predictions():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from parley.scenarios.datasets import AdultParams, load_split

    split = load_split(AdultParams(name="adult", protected="race", audit_size=2000),
                       np.random.default_rng(0))
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    clf.fit(split.X_train, split.y_train)
    y_pred = clf.predict(split.X_audit).astype(np.int64)
    y_true = np.asarray(split.y_audit).astype(np.int64)
    a = np.asarray(split.a_audit).astype(np.int64)
    # a model that accepts nobody or everybody in a group would make precision undefined
    assert 0 < y_pred.sum() < y_pred.size
    return y_true, y_pred, a


def test_against_fairlearn_on_adult(adult_predictions):
    import fairlearn.metrics as flm
    from sklearn.metrics import precision_score

    y_true, y_pred, a = adult_predictions
    h = y_pred.astype(np.float64)
    H = np.vstack([h, 1 - h])  # two models, so the 2-D path is exercised too

    sp = statistical_parity_difference(h, a)
    assert abs(sp) == pytest.approx(
        flm.demographic_parity_difference(y_true, y_pred, sensitive_features=a), **TIGHT)
    rates = flm.MetricFrame(metrics=flm.selection_rate, y_true=y_true, y_pred=y_pred,
                            sensitive_features=a).by_group
    assert sp == pytest.approx(rates[1] - rates[0], **TIGHT)  # sign: a=1 minus a=0
    assert evaluate("sp", H, a) == pytest.approx([sp, -sp], **TIGHT)

    assert abs(equal_opportunity_difference(h, a, y_true)) == pytest.approx(
        flm.true_positive_rate_difference(y_true, y_pred, sensitive_features=a), **TIGHT)
    assert abs(predictive_equality_difference(h, a, y_true)) == pytest.approx(
        flm.false_positive_rate_difference(y_true, y_pred, sensitive_features=a), **TIGHT)
    assert equalized_odds_difference(h, a, y_true) == pytest.approx(
        flm.equalized_odds_difference(y_true, y_pred, sensitive_features=a), **TIGHT)

    prec = flm.MetricFrame(metrics=precision_score, y_true=y_true, y_pred=y_pred,
                           sensitive_features=a).by_group
    prp = predictive_rate_parity_difference(h, a, y_true)
    assert abs(prp) == pytest.approx(abs(prec[1] - prec[0]), **TIGHT)
    assert prp == pytest.approx(prec[1] - prec[0], **TIGHT)

    assert covariance(H, a) == pytest.approx(
        [np.cov(row, a, bias=True)[0, 1] for row in H], **TIGHT)
