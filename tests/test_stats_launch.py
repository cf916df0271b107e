"""stats.py, DESIGN §5 v0.2: launches, launch noise, Fieller, Holm, runs needed.

Checked against scipy, a brute-force search, published values and simulation (fixed seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from sessionlens import stats


def _ar1(rng: np.random.Generator, n: int, phi: float, sd: float = 1.0) -> np.ndarray:
    e = rng.normal(0, sd * math.sqrt(1 - phi * phi), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


# ---------------------------------------------------------------- Fieller


def _brute(
    ma: float, va: float, mb: float, vb: float, t: float, lo: float, hi: float
) -> tuple[float, float, float]:
    """The Fieller set found by scanning ρ on a fine grid over [lo − w, hi + w], w = hi − lo:
    its first and last points, and the grid step."""
    w = hi - lo
    grid = np.linspace(lo - w, hi + w, 3_000_001)
    inside = grid[(mb - grid * ma) ** 2 <= t * t * (vb + grid * grid * va)]
    assert (mb - grid[0] * ma) ** 2 > t * t * (vb + grid[0] ** 2 * va)  # the window's edges
    assert (mb - grid[-1] * ma) ** 2 > t * t * (vb + grid[-1] ** 2 * va)  # are outside
    return float(inside[0]), float(inside[-1]), float(grid[1] - grid[0])


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    st.floats(5, 200),
    st.floats(0.01, 0.3),
    st.floats(5, 200),
    st.floats(0.01, 0.3),
    st.floats(1.5, 3.5),
)
def test_fieller_is_the_set_a_brute_force_search_finds(ma, cva, mb, cvb, t):
    va, vb = (cva * ma) ** 2, (cvb * mb) ** 2
    got = stats.fieller(ma, va, mb, vb, t)
    if t * t * va / (ma * ma) >= 1:
        assert got is None
        return
    assert got is not None
    lo, hi, step = _brute(ma, va, mb, vb, t, *got)
    assert got[0] == pytest.approx(lo, abs=2 * step)
    assert got[1] == pytest.approx(hi, abs=2 * step)


def test_fieller_worked_by_hand():
    # means 1.0 (baseline) and 2.0 with standard errors 0.1 and 0.2, t = 1.96:
    # g = t²·v_A/m_A² = 0.038416; ρ = (2 ± 1.96·√(0.04·(1 − g) + 4·0.01)) / (1 − g)
    got = stats.fieller(1.0, 0.1**2, 2.0, 0.2**2, 1.96)
    assert got is not None
    g = 1.96**2 * 0.01
    half = 1.96 * math.sqrt(0.04 * (1 - g) + 4 * 0.01)
    assert got[0] == pytest.approx((2 - half) / (1 - g), rel=1e-12)
    assert got[1] == pytest.approx((2 + half) / (1 - g), rel=1e-12)
    assert got == pytest.approx((1.5090, 2.6508), abs=1e-4)
    # not symmetric about the ratio, as the delta method's 2 ± 0.55 would be
    assert 2 - got[0] < got[1] - 2


def test_fieller_unbounded_when_the_denominator_is_not_clearly_away_from_zero():
    assert stats.fieller(1.0, 0.3, 2.0, 0.1, 1.96) is None  # g = 1.15
    assert stats.fieller(0.0, 0.1, 2.0, 0.1, 1.96) is None


def test_fieller_covers_a_ratio_of_normal_means_at_its_level():
    # the old interval (Welch / mean_A) ignored the baseline's own error: 77 % at n = 5 for
    # a true doubling. Fieller on each side's mean and variance: close to 95 %.
    rng = np.random.default_rng(11)
    hits = 0
    n, trials = 5, 3000
    for _ in range(trials):
        a = rng.normal(50, 15, n)
        b = rng.normal(100, 30, n)
        va, vb = a.var(ddof=1) / n, b.var(ddof=1) / n
        df = (vb + 4 * va) ** 2 / (vb**2 / (n - 1) + (4 * va) ** 2 / (n - 1))
        got = stats.fieller(a.mean(), va, b.mean(), vb, float(sps.t.ppf(0.975, df)))
        hits += got is not None and got[0] <= 2 <= got[1]
    assert 0.93 <= hits / trials <= 0.97


# ---------------------------------------------------------------- launches


def test_print_step_is_the_finest_decimal_the_values_need():
    assert stats.print_step([60.0, 61.5, 59.9]) == pytest.approx(0.1)
    assert stats.print_step([82.0, 83.0]) == 1.0
    assert stats.print_step([29.47, 29.5]) == pytest.approx(0.01)
    assert stats.print_step([1 / 3]) is None  # more decimals than any log prints
    assert stats.print_step([math.nan]) is None


def test_mser_drops_a_warm_up_and_never_more_than_half():
    rng = np.random.default_rng(3)
    steady = 100 + rng.normal(0, 1, 300)
    warm = steady.copy()
    warm[:40] -= np.linspace(40, 0, 40)  # a slow start: 40 intervals climbing to the level
    drop = stats.mser_truncation(warm)
    assert 25 <= drop <= 60
    assert drop % 5 == 0
    assert stats.mser_truncation(steady) <= 30
    assert stats.mser_truncation(warm[:49]) == 0  # too short to truncate
    ramp = np.linspace(0, 100, 400)  # a trend: the minimum is at the bound, half
    assert stats.mser_truncation(ramp) <= 200


def test_series_variance_of_independent_values_is_s2_over_n():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 2, 400)
    var_mean, n_eff = stats.series_variance(x)
    iid = x.var(ddof=1) / 400
    assert iid <= var_mean <= 1.5 * iid
    assert n_eff >= 260


@pytest.mark.parametrize(
    ("n", "phi", "floor"), [(100, 0.9, 0.88), (300, 0.9, 0.9), (300, 0.5, 0.93)]
)
def test_series_variance_covers_the_mean_of_an_ar1_series(n, phi, floor):
    # lag-1 0.9: 132 intervals carry the information of about 7; the naive s²/n covers 50 %
    rng = np.random.default_rng(7)
    hits = naive = 0
    trials = 600
    for _ in range(trials):
        x = _ar1(rng, n, phi)
        var_mean, n_eff = stats.series_variance(x)
        t = sps.t.ppf(0.975, max(n_eff - 1, 1))
        hits += abs(x.mean()) <= t * math.sqrt(var_mean)
        naive += abs(x.mean()) <= 1.96 * x.std(ddof=1) / math.sqrt(n)
    assert floor <= hits / trials <= 0.99
    assert naive / trials < floor - 0.1


def test_series_variance_of_a_long_series_reads_batch_means():
    rng = np.random.default_rng(9)
    x = _ar1(rng, 200_000, 0.9)
    var_mean, n_eff = stats.series_variance(x)
    true = (1 + 0.9) / (1 - 0.9) / 200_000  # σ²·τ/n with σ = 1
    assert 0.7 * true <= var_mean <= 1.4 * true
    assert 200_000 / 30 <= n_eff <= 200_000 / 12


def test_launch_stat_floors_the_variance_at_the_print_resolution():
    s = stats.launch_stat([60.0, 60.0, 60.0], series=False, step=0.1)
    assert s.var == pytest.approx(0.01 / 12)
    assert s.var_mean == pytest.approx(0.01 / 12 / 3)
    assert s.df == 2
    assert stats.launch_stat([60.0, 60.0], series=False).var == 0  # no step known: no floor


def test_launch_stat_of_a_series_drops_its_warm_up_but_counts_every_sample():
    rng = np.random.default_rng(2)
    x = 1000 + 20 * _ar1(rng, 300, 0.9)
    x[:30] -= np.linspace(300, 0, 30)
    s = stats.launch_stat(x, series=True, step=0.01)
    assert s.n == 300
    assert s.warmup >= 20
    assert s.mean == pytest.approx(float(x[s.warmup :].mean()))
    assert s.n_eff < (300 - s.warmup) / 5  # strongly correlated


def test_launch_noise_measured_from_repeated_launches():
    # 6 configs × 4 launches, σ_L 3 %, within-launch error small: the estimate is near 3 %
    rng = np.random.default_rng(4)
    cells = []
    for c in range(6):
        level = 80 + 10 * c
        launches = []
        for _ in range(4):
            m = level * (1 + 0.03 * rng.normal())
            launches.append(stats.launch_stat(m * (1 + 0.005 * rng.normal(size=5)), False))
        cells.append(launches)
    noise = stats.launch_noise(cells)
    assert noise.source == "measured"
    assert (noise.df, noise.cells, noise.launches) == (18, 6, 24)
    assert 0.02 <= noise.cv <= 0.04
    assert noise.within_cv == pytest.approx(0.005, rel=0.3)


def test_launch_noise_takes_off_the_within_launch_part():
    # no launch-to-launch noise at all, noisy launches: the estimate stays near 0
    rng = np.random.default_rng(8)
    cells = [
        [stats.launch_stat(100 * (1 + 0.05 * rng.normal(size=5)), False) for _ in range(5)]
        for _ in range(4)
    ]
    noise = stats.launch_noise(cells)
    assert noise.cv < 0.02
    assert noise.pooled_var is not None
    assert noise.pooled_var > noise.cv**2  # s_p² holds the within part too


def test_launch_noise_given_or_assumed_when_nothing_is_launched_twice():
    one = [[stats.launch_stat([1.0, 2.0], False)], [stats.launch_stat([3.0, 4.0], False)]]
    given = stats.launch_noise(one, given=0.03)
    assert (given.cv, given.source, given.df) == (0.03, "given", math.inf)
    assumed = stats.launch_noise(one)
    assert (assumed.cv, assumed.source) == (0.02, "assumed")


def test_level_with_one_launch_adds_the_launch_noise():
    runs = [60.0, 61.0, 59.0, 60.5, 59.5]
    noise = stats.launch_noise([], None)
    lv = stats.level([stats.launch_stat(runs, False)], noise, "a")
    within = float(np.var(runs, ddof=1)) / 5
    assert lv.var == pytest.approx(within + (0.02 * 60) ** 2)
    assert lv.unit == "sample"
    # Satterthwaite: the noise part is known exactly, the within part has 4 df
    assert lv.df == pytest.approx(lv.var**2 / (within**2 / 4))


def test_level_with_launches_uses_the_pooled_variance_of_launch_means():
    launches = [stats.launch_stat([m, m + 0.2, m - 0.2], False) for m in (100.0, 104.0, 98.0)]
    noise = stats.launch_noise([launches])
    lv = stats.level(launches, noise, "a")
    rel = np.array([100.0, 104.0, 98.0]) / np.mean([100.0, 104.0, 98.0])
    assert lv.mean == pytest.approx(np.mean([100.0, 104.0, 98.0]))
    assert lv.var == pytest.approx(float(np.var(rel, ddof=1)) * lv.mean**2 / 3)
    assert (lv.df, lv.unit, lv.launches) == (2, "launch", 3)


def test_satterthwaite_adds_each_estimate_once():
    a = stats.Component(1.0, 4, "x")
    b = stats.Component(2.0, 9, "y")
    assert stats.satterthwaite([a, b]) == pytest.approx(9 / (1 / 4 + 4 / 9))
    # two parts of one estimate: its df, not more
    assert stats.satterthwaite([stats.Component(1.0, 4, "p"), stats.Component(3.0, 4, "p")]) == 4
    assert stats.satterthwaite([stats.Component(1.0, math.inf, "n")]) == math.inf


@settings(derandomize=True, max_examples=80, deadline=None)
@given(st.floats(50, 150), st.floats(50, 150), st.floats(0.0, 0.3), st.sampled_from([0.05, 0.1]))
def test_min_effect_p_is_below_alpha_half_exactly_outside_the_interval(ma, mb, delta, alpha):
    noise = stats.launch_noise([], 0.02)
    a = stats.level([stats.launch_stat([ma - 1, ma, ma + 1], False)], noise, "a")
    b = stats.level([stats.launch_stat([mb - 2, mb, mb + 2], False)], noise, "b")
    r = stats.ratio(a, b, alpha)
    assert r.bounded
    assert r.ci_low is not None
    assert r.ci_high is not None
    ps = stats.min_effect_p(a, b, 1 + delta)
    assert ps is not None
    greater, less = ps
    assert greater + less == pytest.approx(1)
    if abs(r.ci_low - delta) > 1e-9:
        assert (greater <= alpha / 2) == (r.ci_low > delta)
    if abs(r.ci_high - delta) > 1e-9:
        assert (less <= alpha / 2) == (r.ci_high < delta)


def test_launches_needed_is_more_than_the_current_count_and_none_at_the_threshold():
    noise = stats.launch_noise([], None)
    a = [stats.launch_stat([100.0, 101.0, 99.0], False)]
    b = [stats.launch_stat([108.0, 109.0, 107.0], False)]
    n = stats.launches_needed(a, b, noise, 0.08, 0.02)
    assert n is not None
    assert 2 <= n <= 100
    # more launches never make the expected interval wider: the next count is at most as wide
    assert stats.launches_needed(a, b, noise, 0.08, 0.02, most=n - 1) is None
    assert stats.launches_needed(a, b, noise, 0.02, 0.02) is None  # e = δ
    assert stats.launches_needed(a, b, noise, 0.0201, 0.02) is None  # beyond 100


def test_min_detectable_effect_of_one_launch_a_side_is_about_eight_percent():
    noise = stats.launch_noise([], None)
    levels = [stats.level([stats.launch_stat([60.0, 60.1, 59.9, 60.0], False)], noise, "a")] * 2
    mde = stats.min_detectable_effect(levels)
    assert mde is not None
    # (1.96 + 0.84)·√2·2 % ≈ 7.9 %, a little more for the within part
    assert 0.079 <= mde <= 0.085


def test_judging_three_million_samples_a_side_stays_on_arrays():
    # the arrays are never turned into Python lists: a launch of 3 M values is one pass each
    rng = np.random.default_rng(1)
    x = 1000 + _ar1(rng, 20_000, 0.9, 10)
    big = np.tile(x, 150)
    s = stats.launch_stat(big, series=True, step=0.01)
    assert s.n == 3_000_000
    assert s.n_eff < 3_000_000 / 5
