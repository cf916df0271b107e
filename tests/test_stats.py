"""stats.py against scipy, against hand computation, and by property."""

from __future__ import annotations

import itertools
import math
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as sps
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionlens import diagnostics, specmath, stats, verdict
from sessionlens.stats import compare, holm, mannwhitney_min_p, min_samples, runs_needed, summarize

# The seed's decode-mode runs (bench-stdout) and a prefill-mode config like our fixtures'.
DECODE = [60.4, 65.5, 50.9, 61.5, 59.5]
PREFILL = [59.8, 60.9, 61.2, 59.1, 60.5]

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "sessions" / "eagle3-attention-mode"

T_975_4 = 2.7764451051977987  # t quantile 0.975 at 4 degrees of freedom (tables)

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1.0, max_value=1e4, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------- summarize


def test_summary_of_the_seed_runs():
    s = summarize(DECODE)
    assert s.n == 5
    assert s.mean == pytest.approx(59.56)
    assert s.median == 60.4
    assert s.stdev == pytest.approx(statistics.stdev(DECODE))
    assert s.cv == pytest.approx(statistics.stdev(DECODE) / 59.56)
    lo, hi = sps.t.interval(0.95, 4, loc=np.mean(DECODE), scale=sps.sem(DECODE))
    assert (s.ci_low, s.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert (s.min, s.max) == (50.9, 65.5)
    assert s.warnings == ("outlier",)


def test_outlier_rule_flags_50_9_alone():
    # median 60.4; |deviations| 0, 5.1, 9.5, 1.1, 0.9 -> MAD 1.1.
    # 50.9: 0.6745·9.5/1.1 = 5.83 > 3.5; 65.5: 0.6745·5.1/1.1 = 3.13, kept unflagged.
    out = stats.outliers(DECODE)
    assert out.indices == (2,)
    assert out.median == 60.4
    assert out.mad == pytest.approx(1.1)
    assert summarize(DECODE).outliers == (2,)
    assert summarize(PREFILL).outliers == ()


def test_no_outliers_when_mad_is_zero():
    # Three of four values equal: MAD = 0, so the rule is silent (DESIGN §5).
    assert stats.outliers([5.0, 5.0, 5.0, 9.0]).indices == ()
    assert summarize([5.0, 5.0, 5.0, 9.0]).outliers == ()


def test_outlier_indices_point_at_the_input_despite_non_finite_values():
    s = summarize([10.0, 10.1, float("nan"), 9.9, 10.0, 50.0, float("inf")])
    assert s.n == 5
    assert s.outliers == (5,)
    assert s.warnings == ("non-finite-value", "outlier")
    assert s.max == 50.0


def test_summary_of_one_value():
    s = summarize([42.0])
    assert (s.n, s.mean, s.median, s.min, s.max) == (1, 42.0, 42.0, 42.0, 42.0)
    assert (s.stdev, s.cv, s.ci_low, s.ci_high) == (None, None, None, None)
    assert s.warnings == ("few-samples",)


def test_summary_of_nothing_is_data_not_an_exception():
    s = summarize([float("nan")])
    assert s.n == 0
    assert s.mean is None
    assert s.warnings == ("non-finite-value", "few-samples")


def test_summary_with_zero_variance_has_a_point_interval():
    s = summarize([7.0, 7.0, 7.0])
    assert (s.stdev, s.cv, s.ci_low, s.ci_high) == (0.0, 0.0, 7.0, 7.0)
    assert s.warnings == ("zero-variance",)


def test_summary_alpha_sets_the_interval_level():
    s = summarize(PREFILL, alpha=0.1)
    lo, hi = sps.t.interval(0.90, 4, loc=np.mean(PREFILL), scale=sps.sem(PREFILL))
    assert (s.ci_low, s.ci_high) == (pytest.approx(lo), pytest.approx(hi))


def test_bad_alpha_is_refused():
    with pytest.raises(ValueError, match=r"alpha must lie strictly between 0 and 1, not 1\.5"):
        summarize([1.0, 2.0], alpha=1.5)


@settings(derandomize=True, max_examples=200)
@given(st.lists(finite, min_size=2, max_size=30))
def test_summary_properties(values):
    s = summarize(values)
    assert None not in (s.min, s.max, s.median, s.mean, s.ci_low, s.ci_high)
    assert s.min <= s.median <= s.max
    assert s.ci_low <= s.mean <= s.ci_high
    assert set(s.outliers) <= set(range(len(values)))
    assert s.stdev == pytest.approx(statistics.stdev(values), rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------- compare


def test_seed_comparison_against_scipy():
    c = compare(PREFILL, DECODE)
    res = sps.ttest_ind(DECODE, PREFILL, equal_var=False)
    ci = res.confidence_interval(0.95)
    mean_a = float(np.mean(PREFILL))
    assert c.change == pytest.approx((np.mean(DECODE) - mean_a) / mean_a)
    assert c.change == pytest.approx(-0.01227, abs=1e-5)
    assert c.ci_low == pytest.approx(ci.low / mean_a)
    assert c.ci_high == pytest.approx(ci.high / mean_a)
    assert c.p_welch == pytest.approx(res.pvalue)
    assert c.df == pytest.approx(res.df)
    mw = sps.mannwhitneyu(DECODE, PREFILL, alternative="two-sided", method="exact")
    assert c.mannwhitney_method == "exact"
    assert c.p_mannwhitney == pytest.approx(mw.pvalue)
    assert c.warnings == ()
    assert c.min_samples == 4


def test_welch_by_hand():
    # a = 1,2,3 and b = 3,4,5: variances 1, se = √(2/3), df = (2/3)²/(2·(1/3)²/2) = 4.
    c = compare([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])
    half = T_975_4 * math.sqrt(2 / 3)
    assert c.diff == 2.0
    assert c.df == pytest.approx(4.0)
    assert (c.diff_ci_low, c.diff_ci_high) == (pytest.approx(2 - half), pytest.approx(2 + half))
    assert c.change == 1.0  # mean_A = 2
    assert (c.ci_low, c.ci_high) == (pytest.approx((2 - half) / 2), pytest.approx((2 + half) / 2))
    # t = 2/√(2/3) = √6 on 4 df: p = 0.0705 (tables)
    assert c.p_welch == pytest.approx(0.070484, abs=1e-6)


def test_hedges_g_by_hand():
    # pooled SD 1, difference 2, J = 1 − 3/(4·6 − 9) = 0.8 -> g = 1.6
    c = compare([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])
    assert c.pooled_sd == pytest.approx(1.0)
    assert c.hedges_g == pytest.approx(1.6)
    # The seed: s_p = √((4·var_A + 4·var_B)/8), J = 1 − 3/31
    sp = math.sqrt((statistics.variance(PREFILL) + statistics.variance(DECODE)) / 2)
    g = (statistics.mean(DECODE) - statistics.mean(PREFILL)) / sp * (1 - 3 / 31)
    assert compare(PREFILL, DECODE).hedges_g == pytest.approx(g)


def test_zero_variance_on_both_sides():
    c = compare([5.0, 5.0, 5.0], [6.0, 6.0, 6.0])
    assert c.change == pytest.approx(0.2)
    assert c.ci_low == c.ci_high == c.change
    assert (c.p_welch, c.p_mannwhitney, c.hedges_g, c.df) == (None, None, None, None)
    assert c.pooled_sd == 0.0
    assert c.warnings == ("few-samples", "zero-variance")


# scipy's moment check warns about the constant side; the Welch figures are still exact.
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
def test_zero_variance_on_one_side_against_scipy():
    a, b = [5.0, 5.0, 5.0, 5.0], [5.0, 6.0, 7.0, 6.5]
    c = compare(a, b)
    res = sps.ttest_ind(b, a, equal_var=False)
    ci = res.confidence_interval(0.95)
    assert c.df == pytest.approx(3.0)  # only B's variance counts: n_B − 1
    assert (c.ci_low, c.ci_high) == (pytest.approx(ci.low / 5), pytest.approx(ci.high / 5))
    assert c.p_welch == pytest.approx(res.pvalue)
    assert "zero-variance" not in c.warnings


def test_one_sample_on_a_side():
    c = compare([5.0], [5.0, 6.0, 7.0])
    assert c.change == pytest.approx(0.2)
    assert (c.ci_low, c.ci_high, c.p_welch, c.df) == (None, None, None, None)
    # Pooled SD from B alone: √(2·1/2) = 1; J = 1 − 3/(16 − 9) = 4/7
    assert c.pooled_sd == pytest.approx(1.0)
    assert c.hedges_g == pytest.approx(4 / 7)
    # Mann–Whitney is defined: B ranks 1.5..4 against a tie at 5 (permutation, exact)
    assert c.mannwhitney_method == "permutation"
    assert c.p_mannwhitney == pytest.approx(_enumerated_mwu_p([5.0], [5.0, 6.0, 7.0]))
    assert c.p_mannwhitney == 1.0  # the lone 5.0 ranks 1.5 of 4: the middle of the null
    assert c.warnings == ("few-samples",)


def test_empty_side():
    c = compare([], [1.0, 2.0])
    assert (c.n_a, c.mean_a, c.change, c.p_mannwhitney, c.hedges_g) == (0, None, None, None, None)
    assert c.warnings == ("few-samples",)


def test_non_positive_baseline_leaves_the_change_undefined():
    a, b = [-1.0, 0.0, 1.0, 0.0], [1.0, 2.0, 3.0, 2.0]
    c = compare(a, b)
    assert (c.change, c.ci_low, c.ci_high) == (None, None, None)
    assert c.warnings == ("undefined-change",)
    # The tests do not need mean_A > 0 and are still given.
    assert c.p_welch == pytest.approx(sps.ttest_ind(b, a, equal_var=False).pvalue)
    assert c.diff == 2.0


def test_mann_whitney_fully_separated_reaches_the_minimum_p():
    c = compare([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0])
    assert c.p_mannwhitney == pytest.approx(2 / 70)
    assert mannwhitney_min_p(4, 4) == pytest.approx(2 / 70)


def _enumerated_mwu_p(a, b):
    """Two-sided permutation p of U, by listing every split (independent of scipy)."""
    pool = a + b

    def u(bs, as_):
        return sum((x > y) + 0.5 * (x == y) for x in bs for y in as_)

    u0 = u(b, a)
    ge = le = total = 0
    for chosen in itertools.combinations(range(len(pool)), len(b)):
        bs = [pool[i] for i in chosen]
        as_ = [pool[i] for i in range(len(pool)) if i not in chosen]
        ui = u(bs, as_)
        total += 1
        ge += ui >= u0
        le += ui <= u0
    return min(1.0, 2 * min(ge, le) / total)


def test_mann_whitney_with_ties_enumerates_every_split():
    a, b = [60.4, 60.4, 61.0, 59.9, 60.4], [60.4, 62.0, 61.0, 63.1, 62.2]
    c = compare(a, b)
    assert c.mannwhitney_method == "permutation"
    assert c.p_mannwhitney == pytest.approx(_enumerated_mwu_p(a, b))
    assert c.p_mannwhitney == pytest.approx(18 / 252)
    perm = sps.mannwhitneyu(b, a, method=sps.PermutationMethod(n_resamples=np.inf))
    assert c.p_mannwhitney == pytest.approx(perm.pvalue)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([2.0, 2.0], [1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 2.0, 7.0, 8.0]),  # A the smaller side
        ([1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 2.0, 7.0, 8.0], [2.0, 9.0, 9.0]),  # B smaller
    ],
)
def test_mann_whitney_enumerates_the_smaller_side(a, b):
    c = compare(a, b)
    assert c.mannwhitney_method == "permutation"
    assert c.p_mannwhitney == pytest.approx(_enumerated_mwu_p(a, b))


def test_mann_whitney_large_samples_use_the_normal_approximation():
    rng = np.random.default_rng(7)
    a = [round(x, 1) for x in rng.normal(60, 2, 60)]
    b = [round(x, 1) for x in rng.normal(61, 2, 60)]
    c = compare(a, b)
    assert c.mannwhitney_method == "asymptotic"
    expected = sps.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic").pvalue
    assert c.p_mannwhitney == pytest.approx(expected)


def test_few_samples_warning_like_benchstat():
    assert min_samples(0.05) == 4  # "need >= 4 samples to detect a difference at alpha 0.05"
    assert min_samples(0.01) == 5  # 2/C(8,4) = 0.029 > 0.01; 2/C(10,5) = 0.0079
    assert mannwhitney_min_p(3, 3) == pytest.approx(0.1)
    assert mannwhitney_min_p(1, 1) == 1.0
    assert "few-samples" in compare([1.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0]).warnings
    assert "few-samples" not in compare([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0]).warnings


@settings(derandomize=True, max_examples=150)
@given(st.lists(positive, min_size=2, max_size=12), st.lists(positive, min_size=2, max_size=12))
def test_compare_properties(a, b):
    c = compare(a, b)
    assert None not in (c.change, c.ci_low, c.ci_high)
    assert c.ci_low <= c.change <= c.ci_high
    swapped = compare(b, a)
    assert swapped.diff == pytest.approx(-c.diff, abs=1e-9)
    if c.hedges_g is not None:
        assert swapped.hedges_g == pytest.approx(-c.hedges_g, abs=1e-9)
    for p in (c.p_welch, c.p_mannwhitney):
        assert p is None or 0.0 <= p <= 1.0


# ---------------------------------------------------------------- holm


def test_holm_by_hand():
    # sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 -> kept at 0.06 (monotone)
    got = holm([0.01, 0.04, 0.03, 0.005])
    assert got == [pytest.approx(0.03), pytest.approx(0.06), pytest.approx(0.06), 0.02]


def test_holm_keeps_none_and_caps_at_one():
    assert holm([0.2, None, 0.01]) == [0.2, None, 0.02]  # m = 2: None does not count
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert holm([]) == []
    assert holm([0.03]) == [0.03]


def test_holm_refuses_p_values_out_of_range():
    with pytest.raises(ValueError, match=r"p-value out of \[0, 1\]: 1\.2"):
        holm([0.1, 1.2])


@settings(derandomize=True, max_examples=200)
@given(st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=1)), max_size=12))
def test_holm_properties(ps):
    adj = holm(ps)
    assert [a is None for a in adj] == [p is None for p in ps]
    pairs = [(p, a) for p, a in zip(ps, adj, strict=True) if p is not None and a is not None]
    for p, a in pairs:
        assert p <= a <= 1.0
    for (p1, a1), (p2, a2) in itertools.product(pairs, repeat=2):
        if p1 < p2:
            assert a1 <= a2


# ---------------------------------------------------------------- runs needed


def test_runs_needed_by_hand():
    # z(0.975) + z(0.8) = 1.959964 + 0.841621 = 2.801585; 2·(2.801585·2/1)² = 62.79 -> 63
    assert runs_needed(2.0, 1.0) == 63
    assert runs_needed(2.0, -1.0) == 63
    # alpha 0.1: 1.644854 + 0.841621 = 2.486475; 2·(2.486475·2)² = 49.46 -> 50
    assert runs_needed(2.0, 1.0, alpha=0.1) == 50


def test_runs_needed_undefined_cases():
    assert runs_needed(None, 1.0) is None
    assert runs_needed(0.0, 1.0) is None
    assert runs_needed(1.0, 0.0) is None


def test_every_warning_code_is_catalogued():
    codes = [
        stats.W_FEW,
        stats.W_ZERO_VAR,
        stats.W_OUTLIER,
        stats.W_NON_FINITE,
        stats.W_UNDEFINED,
        verdict.W_OUTLIER_SENSITIVE,
        specmath.W_ACCEPT_BELOW_ONE,
        specmath.W_ACCEPT_ABOVE_STEPS,
        specmath.W_ABOVE_CEILING,
    ]
    assert [c for c in codes if c not in diagnostics.CODES] == []


def test_importing_the_statistics_layer_loads_no_heavy_module():
    code = (
        "import sys, sessionlens.stats, sessionlens.verdict, sessionlens.specmath\n"
        "print(sorted(m for m in ('scipy', 'numpy', 'polars', 'pydantic', 'jinja2')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- large inputs on arrays


def _big_samples() -> list[list[float]]:
    rng = np.random.default_rng(7)
    n = stats._ARRAY_FROM
    gauss = (rng.normal(60, 5, n + 1)).tolist()
    return [
        gauss,  # odd length
        gauss[:-1],  # even length
        np.round(rng.normal(60, 5, n + 500), 1).tolist(),  # one decimal: many ties
        [60.0] * (n - 3) + [1.0, 2.0, 300.0],  # MAD 0: nothing flagged
        [60.0 + (i % 7) for i in range(n)] + [500.0, -400.0],  # two far values flagged
        rng.choice([1.5, 2.5, math.nan, math.inf, -math.inf, 3.0], n + 7).tolist(),
        rng.lognormal(0, 3, n + 3).tolist(),  # heavy tail, large magnitudes
        [math.nan] * n,  # nothing finite
    ]


@pytest.mark.parametrize("values", _big_samples())
def test_large_inputs_give_the_list_paths_results_bit_for_bit(values, monkeypatch):
    on_arrays = summarize(values), summarize(np.array(values)), stats.outliers(values)
    monkeypatch.setattr(stats, "_ARRAY_FROM", 10**9)  # force the list path
    on_lists = summarize(values), stats.outliers(values)
    assert on_arrays[0] == on_lists[0]
    assert on_arrays[1] == on_lists[0]
    assert on_arrays[2] == on_lists[1]


@pytest.mark.parametrize("n", [1, 65536, 65537, 200_003])
def test_fsum_of_an_array_in_pieces_is_fsum_of_its_list(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.normal(size=n) * 10.0 ** rng.integers(-200, 200, n)
    assert stats._fsum_array(x) == math.fsum(x.tolist())
    x[n // 2] = math.inf
    assert stats._fsum_array(x) == math.inf
    x[n - 1] = -math.inf
    if n > 1:
        with pytest.raises(ValueError, match="inf"):  # -inf + inf, as fsum says
            stats._fsum_array(x)


def _sum_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    x = rng.normal(size=3000)
    return [
        rng.normal(size=5000) * 10.0 ** rng.integers(-300, 300, 5000),  # every exponent
        np.round(rng.uniform(-1e4, 1e4, 70_000), 2),  # printed values, more than a block
        rng.permutation(np.concatenate([x, -x])),  # cancels to exactly 0
        rng.choice([5e-324, -5e-324, 1e-310, 2.2e-308, -1e-320, 0.0, -0.0], 4000),  # subnormal
        rng.normal(size=4000) * 1e300,  # large, yet no partial sum overflows
        (rng.normal(size=4000) + 1e16) * rng.choice([1.0, -1.0], 4000),  # ties to even
        np.array([-0.0, -0.0]),
        np.array([0.0, -0.0]),
        np.array([0.1] * 10),
    ]


@pytest.mark.parametrize("x", _sum_cases())
def test_exact_sum_in_integers_is_fsum_bit_for_bit(
    x: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = math.fsum(x.tolist())
    if np.any(x):  # the integer path itself, not fsum behind it

        def no_fsum(xs: np.ndarray) -> float:
            raise AssertionError("fsum called")

        monkeypatch.setattr(stats, "_fsum_floats", no_fsum)
    got = stats._fsum_array(x)
    assert got == want
    assert math.copysign(1.0, got) == math.copysign(1.0, want)


@pytest.mark.parametrize(("block", "flush"), [(7, 35), (1000, 2500)])
def test_exact_sum_over_blocks_and_flushes(
    block: int, flush: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values are read a block at a time and the float buckets go to integers every `flush`
    values (2**25 in use: more values than a test holds); a flush need not be whole blocks."""
    monkeypatch.setattr(stats, "_XSUM_BLOCK", block)
    monkeypatch.setattr(stats, "_XSUM_FLUSH", flush)
    rng = np.random.default_rng(block)
    x = rng.normal(size=10_007) * 10.0 ** rng.integers(-30, 30, 10_007)
    for view in (x, x[::3], x[::-2]):  # strided views too
        assert stats._fsum_array(view) == math.fsum(view.tolist())


@pytest.mark.parametrize("x", _sum_cases())
def test_both_exact_sums_are_fsum_bit_for_bit(
    x: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The split sums (the fast way) and the integer buckets (where splitting takes too
    many rounds) each give fsum's result, and the split is taken where it can be."""
    want = math.fsum(x.tolist())
    parts = stats._split_sums(x)
    if parts is not None:
        assert math.fsum(parts) == want or (want == 0 and math.fsum(parts) == 0)
    assert stats._bucket_sum(x) == want or (want == 0 and stats._bucket_sum(x) == 0)
    monkeypatch.setattr(stats, "_SPLIT_ROUNDS", 0)  # every block to the buckets
    got = stats._fsum_array(x)
    assert got == want
    assert math.copysign(1.0, got) == math.copysign(1.0, want)


def test_exact_sum_splits_printed_values_in_few_rounds() -> None:
    """Values as logs print them take the split, and every split part is exact: the parts
    summed as Python fractions are the values summed as fractions."""
    from fractions import Fraction

    rng = np.random.default_rng(5)
    cases = [
        np.round(rng.normal(1000, 200, 300_001), 2),  # throughputs, over three blocks
        np.round(rng.random(50_000), 2),  # usages
        rng.integers(0, 100, 50_000).astype(np.float64),  # counts: one round
        np.round(rng.normal(0, 1, 20_000), 4) * 10.0 ** rng.integers(-8, 8, 20_000),
    ]
    for x in cases:
        parts = stats._split_sums(x)
        assert parts is not None
        assert sum(map(Fraction, parts)) == sum(map(Fraction, x.tolist()))
        assert stats._fsum_array(x) == math.fsum(x.tolist())
    assert len(stats._split_sums(cases[2]) or []) == 1  # integers: the first round is all


@pytest.mark.parametrize("seed", range(30))
def test_exact_sum_by_property(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random arrays of random spreads, lengths and blocks: fsum's result bit for bit, by
    the split and by the buckets; a spread beyond the split's rounds goes to the buckets."""
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 3000))
    spread = int(rng.choice([0, 3, 30, 120, 300]))
    x = rng.normal(size=n) * 10.0 ** rng.integers(-spread, spread + 1, n)
    if seed % 3 == 0:
        x = np.round(x, int(rng.integers(0, 6)))
    if seed % 5 == 0:
        x = np.concatenate([x, -x[: n // 2]])  # cancellation
    monkeypatch.setattr(stats, "_XSUM_BLOCK", int(rng.choice([5, 64, 1000, 1 << 17])))
    want = math.fsum(x.tolist())
    got = stats._fsum_array(x)
    assert got == want
    assert math.copysign(1.0, got) == math.copysign(1.0, want)
    nonzero = np.abs(x[x != 0])
    if len(nonzero) and np.log2(nonzero.max()) - np.log2(nonzero.min()) > 53 * stats._SPLIT_ROUNDS:
        # a round takes at most 53 bits of the spread: more rounds than a block may take
        assert stats._split_sums(x) is None


@pytest.mark.parametrize("seed", range(12))
def test_variance_of_a_long_array_squares_a_block_at_a_time_as_before(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long array's squares are summed a block at a time: the variance is bit for bit
    the sum of the whole array of squares, also where values are near the float limit or
    spread too far for the split (both then take the whole array)."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(stats, "_XSUM_BLOCK", int(rng.choice([7, 100, 1000])))
    n = int(rng.integers(1001, 20_000))
    kind = seed % 4
    if kind == 0:
        x = np.round(rng.normal(1000, 200, n), 2)  # printed values
    elif kind == 1:
        x = rng.integers(0, 5, n).astype(np.float64)  # mostly equal
    elif kind == 2:
        x = rng.normal(size=n) * 1e153  # squares near the limit: the whole array's way
    else:
        x = rng.normal(size=n) * 10.0 ** rng.integers(-150, 150, n)  # too wide to split
    mean = stats.fmean(x)
    try:
        want = stats._fsum(stats._squares(x, mean, 1.0)) / (n - 1)
    except OverflowError:
        want = stats._fsum(stats._squares(x, mean, stats._DOWN_HALF)) / (n - 1) / stats._DOWN
    got = stats._var(x, mean)
    assert got == want or (math.isnan(got) and math.isnan(want))
    assert got == stats._var(x.tolist(), mean) or math.isinf(got)


def test_median_of_an_array_it_owns_is_partitioned_in_place() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 10, 1001):
        x = rng.integers(0, 4, n).astype(np.float64)
        want = stats._median_array(x)
        before = x.copy()
        assert np.array_equal(x, before)  # not owned: left as it was
        mine = x.copy()
        assert stats._median_array(mine, own=True) == want == stats._median(x.tolist())


def test_exact_sum_leaves_what_fsum_could_overflow_on_to_fsum() -> None:
    x = np.array([1e308, 1e308, -1e308])  # fsum's partials overflow: it raises, so do we
    with pytest.raises(OverflowError):
        stats._fsum_array(x)


def test_large_input_summary_against_numpy_and_scipy():
    values = _big_samples()[4]
    s = summarize(np.array(values))
    x = np.array(values)
    assert s.n == len(values)
    assert s.mean == pytest.approx(float(x.mean()), rel=1e-15)
    assert s.stdev == pytest.approx(float(x.std(ddof=1)), rel=1e-12)
    assert s.median == float(np.median(x))
    half = sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    assert s.ci_high - s.mean == pytest.approx(half, rel=1e-9)
    assert s.outliers == (len(values) - 2, len(values) - 1)
    assert stats.W_OUTLIER in s.warnings


def test_large_comparison_matches_the_list_path(monkeypatch):
    rng = np.random.default_rng(3)
    a = np.round(rng.normal(60, 5, 3000), 1)
    b = np.round(rng.normal(61, 5, 2500), 1)
    on_arrays = compare(a, b)
    monkeypatch.setattr(stats, "_ARRAY_FROM", 10**9)
    on_lists = compare(a.tolist(), b.tolist())
    assert on_arrays == on_lists
    assert on_arrays.mannwhitney_method == "asymptotic"
    ref = sps.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic")
    assert on_arrays.p_mannwhitney == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("df", [1.0, 2.5, 4.0, 9.0, 37.3, 1e3, 378_320.0])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.975, 0.995])
def test_t_quantile_and_tail_equal_scipy_stats(df, q):
    assert stats._t_ppf(q, df) == float(sps.t.ppf(q, df))
    x = 1 + 10 * (q - 0.5)
    assert stats._t_sf(x, df) == float(sps.t.sf(x, df))


@pytest.mark.parametrize(
    ("n_b", "n_a"), [(1, 1), (1, 7), (3, 4), (5, 5), (8, 9), (12, 30), (50, 50)]
)
def test_exact_mann_whitney_equals_scipy(n_b, n_a):
    rng = np.random.default_rng(n_b * 100 + n_a)
    for shift in (0.0, 0.5, 3.0):
        a = rng.normal(0, 1, n_a)
        b = rng.normal(shift, 1, n_b)
        p, method = stats._mannwhitney(b.tolist(), a.tolist())
        ref = sps.mannwhitneyu(b, a, alternative="two-sided", method="exact").pvalue
        assert method == "exact"
        assert p == pytest.approx(ref, rel=1e-12, abs=1e-300)


def test_exact_mann_whitney_tail_by_hand():
    # sizes 2 and 2: U takes 0,1,2,2,3,4 over the C(4,2) = 6 splits
    assert stats._mwu_exact_sf(4, 2, 2) == 1 / 6
    assert stats._mwu_exact_sf(3, 2, 2) == 2 / 6
    assert stats._mwu_exact_sf(2, 2, 2) == 4 / 6
    assert stats._mwu_exact_sf(0, 2, 2) == 1.0


@pytest.mark.parametrize("decimals", [0, 1, 2])
def test_asymptotic_mann_whitney_is_scipys_bit_for_bit(decimals):
    rng = np.random.default_rng(decimals)
    a = np.round(rng.normal(60, 5, 300), decimals)
    b = np.round(rng.normal(61, 5, 250), decimals)
    ref = sps.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic").pvalue
    for side_b, side_a in ((b.tolist(), a.tolist()), (b, a)):
        p, method = stats._mannwhitney(side_b, side_a)
        assert method == "asymptotic"
        assert p == ref


def test_a_report_never_imports_scipy_stats():
    """scipy.stats takes ~0.5 s to import; the report needs only scipy.special."""
    code = (
        "import sys\n"
        "from sessionlens.session import load_session\n"
        "from sessionlens.analysis import analyze\n"
        f"a = analyze(load_session({str(EXAMPLE)!r}))\n"
        "assert a.comparisons and a.hypotheses\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _exact_mean(xs: list[float]) -> float:
    from fractions import Fraction

    return float(sum(Fraction(x) for x in xs) / len(xs))


@pytest.mark.parametrize("n", [3, 2049])  # the list path and the array path
def test_values_near_the_float_limit_are_summarised_not_raised_on(n: int) -> None:
    """A log may print absurd values (a counter gone wild, digits glued together): sums
    beyond float range (math.fsum raises) give the mean and median of the values, a sum of
    squares beyond it an infinite spread; never an exception, never a numpy warning (every
    warning fails a test: `filterwarnings = ["error"]` in pyproject.toml)."""
    rng = np.random.default_rng(n)
    xs = rng.uniform(1.0e308, 1.7e308, n).tolist()
    s = summarize(xs)
    same = summarize([1.5e308] * n)
    spread = summarize([1.7e308, -1.7e308] * (n // 2) + [0.0])
    assert s.mean == pytest.approx(_exact_mean(xs), rel=1e-15)
    assert s.min <= s.mean <= s.max
    assert math.isfinite(s.median)
    assert same.mean == same.median == 1.5e308
    assert same.stdev == 0.0
    assert spread.median == 0.0
    assert spread.stdev == math.inf
    assert math.isfinite(spread.mean)
    c = compare(xs, [x / 2 for x in xs])
    assert c.change == pytest.approx(-0.5, rel=1e-12)


def test_an_overflowing_sum_gives_the_mean_within_an_ulp_and_the_exact_midpoint() -> None:
    """Scaled by a power of two, values near the limit sum as exactly as any (fsum rounds
    once, the division by n once more); a median's midpoint is halved before it is summed
    when the sum would overflow."""
    from fractions import Fraction

    xs = [1.7e308, 1.7e308, 1.0e308, 3.0]
    assert summarize(xs).mean == pytest.approx(_exact_mean(xs), rel=2.0**-52)
    assert summarize(np.array(xs * 600)).mean == pytest.approx(_exact_mean(xs), rel=2.0**-52)
    a, b = 1.7e308, 1.6e308
    assert stats._midpoint(a, b) == float((Fraction(a) + Fraction(b)) / 2)  # (a + b) / 2: inf
    assert summarize([a, b]).median == stats._midpoint(a, b)
    assert stats._midpoint(1.0, 2.0) == 1.5


def test_welch_with_variances_whose_squares_leave_float_range() -> None:
    """var/n of 1e155 squares beyond float range (scipy's own df overflows there): the df is
    taken relative to the larger side, as exactly as by hand in fractions; a side whose
    variance is itself beyond float range gives no interval and no p rather than nan."""
    from fractions import Fraction

    a, b = [1.0, 1e78, 5.0], [1.0, 2.0, 3.0]

    def var_n(xs: list[float]) -> Fraction:
        m = sum(Fraction(x) for x in xs) / len(xs)
        return sum((Fraction(x) - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs)

    sa, sb = var_n(a), var_n(b)
    df = float((sa + sb) ** 2 / (sa**2 / 2 + sb**2 / 2))
    t = (sum(a) / 3 - sum(b) / 3) / math.sqrt(float(sa + sb))
    c = compare(a, b)
    assert c.df == pytest.approx(df, rel=1e-12)
    assert c.p_welch == pytest.approx(2 * sps.t.sf(t, df), rel=1e-9)
    wild = compare([1.7e308, -1.7e308, 1.0], b)
    assert wild.pooled_sd == math.inf
    assert (wild.df, wild.p_welch, wild.ci_low, wild.ci_high, wild.hedges_g) == (None,) * 5
    assert wild.p_mannwhitney is not None  # ranks do not care


def test_sample_counts_at_extreme_alphas_and_spreads() -> None:
    """alpha near 0 (a manifest may say 1e-17, or 1e-320): 1 - alpha/2 rounds to 1.0, and
    C(2n, n) leaves float range before 2/C(2n, n) drops below alpha; a count beyond float
    range is no count."""
    assert min_samples(1e-320) == 535  # 2/C(1070, 535) < 1e-320 <= 2/C(1068, 534)
    assert mannwhitney_min_p(535, 535) < 1e-320 <= mannwhitney_min_p(534, 534)
    z = -statistics.NormalDist().inv_cdf(0.5e-17) + statistics.NormalDist().inv_cdf(0.8)
    assert runs_needed(3.0, 0.1, alpha=1e-17) == math.ceil(round(2 * (z * 30) ** 2, 9))
    assert runs_needed(1e150, 1e-150) is None
    assert runs_needed(1.0, 0.5) == 63  # the usual path, as before


@pytest.mark.parametrize("holes", [False, True])
def test_a_summary_without_outliers_is_the_summary_with_them_less_the_outliers(holes: bool) -> None:
    rng = np.random.default_rng(7)
    xs = rng.normal(60.0, 3.0, 10_000)
    xs[::997] = 500.0  # outliers to flag
    if holes:
        xs[5::1013] = np.nan
        xs[9::2011] = np.inf
    flagged = summarize(xs)
    plain = summarize(xs, flag=False)
    assert plain.outliers == ()
    assert len(flagged.outliers) >= 10
    assert (plain.n, plain.mean, plain.median, plain.stdev, plain.min, plain.max) == (
        flagged.n,
        flagged.mean,
        flagged.median,
        flagged.stdev,
        flagged.min,
        flagged.max,
    )
    assert plain.n == int(np.isfinite(xs).sum())
    assert (plain.n < 10_000) == holes
    assert plain.warnings == tuple(w for w in flagged.warnings if w != stats.W_OUTLIER)


@pytest.mark.parametrize("n", [0, 1, 2, 50, 2047, 2048, 10_000])
def test_finite_mean_is_the_summary_mean(n: int) -> None:
    rng = np.random.default_rng(n)
    xs = rng.normal(60.0, 3.0, n)
    for values in (xs, xs.tolist()):
        assert stats.finite_mean(values) == summarize(values).mean
    if n:
        holed = xs.copy()
        holed[:: max(n // 7, 1)] = np.nan
        holed[1::9] = -np.inf
        for values in (holed, holed.tolist()):
            assert stats.finite_mean(values) == summarize(values).mean
    assert stats.finite_mean([math.nan] * max(n, 1)) is None
    assert summarize([math.nan] * max(n, 1)).mean is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e300, -7.0]), min_size=1, max_size=60),
    st.lists(finite, max_size=20),
)
def test_the_median_of_an_array_is_statistics_median(
    common: list[float], rest: list[float]
) -> None:
    """`_median_array`, which always partitions at two places (one place crawls on values
    that are mostly one number), is the median of the values, odd counts and even."""
    values = common + rest
    arr = np.array(values, np.float64)
    got = stats._median_array(arr.copy())
    assert got == stats._median(values)  # the list's median, `_midpoint` of the middle two
    if all(abs(v) < 1e200 for v in values):
        assert math.isclose(got, statistics.median(values), rel_tol=1e-12, abs_tol=1e-12)


def test_the_median_of_many_equal_values_and_its_outliers() -> None:
    """3.75 million values of a mostly-zero metric (a day-long log's `#queue-req`): the
    median and MAD-fallback outliers as a sort gives them, each flagged position the
    input's (non-finite values left out)."""
    rng = np.random.default_rng(7)
    n = 375_001
    x = np.where(rng.random(n) < 0.97, 0.0, rng.integers(1, 50, n).astype(np.float64))
    x[[5, 17]] = [math.nan, math.inf]
    assert stats._median_array(x[np.isfinite(x)]) == float(np.sort(x[np.isfinite(x)])[n // 2 - 1])
    s = stats.launch_stat(x, series=False)
    finite_at = np.flatnonzero(np.isfinite(x))
    xs = x[finite_at]
    dev = np.abs(xs - np.median(xs))
    mean_ad = dev.mean()
    want = finite_at[np.abs(dev / (1.2533 * mean_ad)) > 3.5]
    assert len(want) > 0
    assert s.outliers == tuple(want.tolist())


def _print_step_whole(values: list[float]) -> float | None:
    """`print_step` as it was: every finite value checked at once."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if len(arr) == 0:
        return None
    for d in range(10):
        scaled = arr * 10.0**d
        if np.all(np.abs(scaled - np.rint(scaled)) <= 1e-6 + 1e-12 * np.abs(scaled)):
            return 10.0**-d
    return None


def _outliers_whole(values: list[float]) -> tuple[int, ...]:
    """`outlier_indices` as it was: each step a new array."""
    xs = np.asarray(values, dtype=np.float64)
    if len(xs) < 3:
        return ()
    med = float(np.median(xs))
    with np.errstate(over="ignore", invalid="ignore"):
        dev = np.abs(xs - med)
        mad = float(np.median(dev))
        if mad > 0:
            score = 0.6745 * dev / mad
        else:
            mean_ad = float(dev.mean())
            if not mean_ad > 0:
                return ()
            score = dev / (1.253314 * mean_ad)
        return tuple(np.flatnonzero(score > 3.5).tolist())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(-5000, 5000).map(lambda i: i / 100),
            st.integers(-50, 50).map(float),
            st.sampled_from([math.nan, math.inf, -math.inf, 1e-12, 0.1 + 0.2]),
        ),
        max_size=80,
    ),
    st.integers(1, 9),
)
def test_print_step_a_block_at_a_time_and_outliers_in_place_are_as_before(
    values: list[float], block: int
) -> None:
    """`print_step` checks the values a block at a time (blocks of 1 to 9 values here),
    `outlier_indices` works on one array in place, and `launch_stat` maps outliers to the
    input's positions only where a value was left out: the results are those of each
    step on the whole column."""
    import unittest.mock

    with (
        unittest.mock.patch.object(stats, "_STEP_BLOCK", block),
        unittest.mock.patch.object(stats, "_STEP_HEAD", block // 2),
    ):
        assert stats.print_step(values) == _print_step_whole(values)
    finite_vals = [v for v in values if math.isfinite(v)]
    assert stats.outlier_indices(finite_vals) == _outliers_whole(finite_vals)
    if finite_vals:
        at = [i for i, v in enumerate(values) if math.isfinite(v)]
        want = tuple(at[i] for i in _outliers_whole(finite_vals))
        assert stats.launch_stat(values, series=False).outliers == want
        assert stats.launch_stat(np.array(values), series=True).outliers == want
