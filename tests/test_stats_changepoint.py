"""Change points of DESIGN §10 (stats.e_divisive and the regime intervals).

The energy statistic by hand, the best split against a brute-force search, series with a
known answer, determinism, the windowed reading of long series, Apache Otava's locations on
the same series (tests/reference/), and the Fieller intervals of shifts and of the newest
session against its regime.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from sessionlens import stats

REFERENCE = Path(__file__).parent / "reference" / "otava_change_points.json"


def test_energy_statistic_by_hand():
    # X = [0, 1], Y = [3, 5]: between 3+5+2+4 = 14, so 2/(2·2)·14 = 7; within X 1/C(2,2) = 1,
    # within Y 2/1 = 2; Ê = 7 − 1 − 2 = 4 and Q̂ = 2·2/(2+2)·4 = 4.
    assert stats.energy_statistic([0, 1], [3, 5]) == pytest.approx(4.0)
    # X = [1, 2, 3], Y = [10, 11]: between 9+10+8+9+7+8 = 51, 2/6·51 = 17; within X 4/3;
    # within Y 1; Ê = 17 − 4/3 − 1 = 44/3; Q̂ = 6/5 · 44/3 = 17.6.
    assert stats.energy_statistic([1, 2, 3], [10, 11]) == pytest.approx(17.6)
    # the same distribution on both sides: Ê is small, and it is symmetric
    assert stats.energy_statistic([1, 2, 3], [3, 2, 1]) == pytest.approx(
        stats.energy_statistic([3, 2, 1], [1, 2, 3])
    )
    with pytest.raises(ValueError, match="at least 2 values"):
        stats.energy_statistic([1], [2, 3])


def test_energy_statistic_is_the_energy_distance_scaled():
    # For α = 1 in one dimension, the V-statistic form of Ê is twice the integral of the
    # squared difference of the empirical CDFs (scipy's energy_distance is its square root
    # over √2). Our Ê uses unbiased within terms, so compare on the V-statistic form.
    rng = np.random.default_rng(3)
    x, y = rng.normal(0, 1, 9), rng.normal(0.7, 1.3, 7)
    n, m = len(x), len(y)
    between = np.abs(x[:, None] - y[None, :]).mean()
    within_x = np.abs(x[:, None] - x[None, :]).sum() / (n * n)
    within_y = np.abs(y[:, None] - y[None, :]).sum() / (m * m)
    v_stat = 2 * between - within_x - within_y
    assert v_stat == pytest.approx(2 * sps.energy_distance(x, y) ** 2 / 2)
    # the U-statistic form used by Matteson & James: within sums over C(n, 2) pairs
    unbiased = 2 * between - within_x * n / (n - 1) - within_y * m / (m - 1)
    assert stats.energy_statistic(x, y) == pytest.approx(n * m / (n + m) * unbiased)


@pytest.mark.parametrize("min_size", [2, 3, 4])
@pytest.mark.parametrize("seed", range(6))
def test_best_split_is_the_brute_force_maximum(min_size, seed):
    rng = np.random.default_rng(seed)
    z = np.round(rng.normal(10, 2, int(rng.integers(2 * min_size, 19))), 2)
    best = None
    for tau, kappa in itertools.product(range(len(z) + 1), repeat=2):
        if tau < min_size or kappa - tau < min_size:
            continue
        q = stats.energy_statistic(z[:tau], z[tau:kappa])
        if best is None or q > best[1] + 1e-9:
            best = (tau, q)
    got = stats._best_split(z, min_size)
    assert got is not None
    assert best is not None
    assert got[0] == best[0]
    assert got[1] == pytest.approx(best[1])


def test_best_split_needs_two_regimes_of_min_size():
    assert stats._best_split(np.arange(5.0), 3) is None
    assert stats._best_split(np.arange(6.0), 3) == (
        3,
        pytest.approx(stats.energy_statistic([0, 1, 2], [3, 4, 5])),
    )


def _regimes(seed: int, *parts: tuple[int, float, float]) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(v) for n, mu, sd in parts for v in rng.normal(mu, sd, n)]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (((6, 100, 1), (6, 110, 1)), [6]),  # one step
        (((10, 100, 1), (10, 95, 1), (10, 102, 1)), [10, 20]),  # two
        (((12, 0, 1), (6, 5, 1), (12, 0, 1)), [12, 18]),  # a bump: κ finds it
        (((24, 50, 1),), []),  # flat
    ],
    ids=["step", "two-steps", "bump", "flat"],
)
def test_known_answers(parts, expected):
    found = stats.e_divisive(_regimes(11, *parts))
    assert [c.index for c in found.change_points] == expected
    assert not found.windowed
    for c in found.change_points:
        assert 1 / 200 <= c.p_value <= 0.05
        assert c.permutations == 199


def test_a_change_of_spread_not_of_level():
    # e-divisive compares distributions, not means: a calm regime then a noisy one
    found = stats.e_divisive(_regimes(11, (20, 50, 0.2), (20, 50, 3)))
    assert found.change_points[0].index == 20
    assert all(c.index >= 20 for c in found.change_points)


def test_deterministic_and_seeded():
    z = _regimes(5, (8, 100, 1), (8, 101.2, 1))
    a, b = stats.e_divisive(z), stats.e_divisive(z)
    assert a == b
    # a non-significant test stops early with the sequential p-value h/r
    flat = stats.e_divisive(_regimes(2, (20, 50, 1)))
    assert flat.change_points == ()


def test_early_stop_gives_the_sequential_p():
    draws = iter([5.0] * 10 + [0.0] * 500)
    p, done = stats._monte_carlo_p(1.0, lambda: next(draws), 199, 0.05)
    assert (p, done) == (1.0, 10)  # ten of ten exceed: h/r = 1
    p, done = stats._monte_carlo_p(1.0, lambda: 0.0, 199, 0.05)
    assert (p, done) == (1 / 200, 199)
    draws = iter([2.0] * 9 + [0.0] * 500)  # nine exceed: still significant at 10/200
    assert stats._monte_carlo_p(1.0, lambda: next(draws), 199, 0.05) == (10 / 200, 199)


def test_short_series_and_bad_input():
    assert stats.e_divisive([1.0, 2.0]).change_points == ()
    assert stats.e_divisive([]).change_points == ()
    with pytest.raises(ValueError, match="finite"):
        stats.e_divisive([1.0, math.nan, 2.0, 3.0, 4.0, 5.0])
    with pytest.raises(ValueError, match="at least 2"):
        stats.e_divisive([1.0] * 10, min_size=1)


def test_long_series_are_read_in_windows():
    z = _regimes(4, (150, 100, 1), (150, 103, 1))
    found = stats.e_divisive(z)
    assert found.windowed
    assert found.window == stats.CP_WINDOW
    assert [c.index for c in found.change_points] == [150]
    for seed in range(3):  # flat: Bonferroni over the windows keeps false alarms away
        flat = stats.e_divisive(_regimes(seed, (400, 100, 1)))
        assert flat.change_points == ()


def test_windows_find_changes_anywhere():
    z = _regimes(8, (70, 10, 0.2), (90, 11, 0.2), (40, 10, 0.2))
    assert [c.index for c in stats.e_divisive(z).change_points] == [70, 160]


def test_same_locations_as_otava():
    """Otava 0.8.0's e-divisive (`compute_change_points_orig`) and Hunter's windowed
    detection on the same series (run outside our environment: tests/reference/)."""
    ref = json.loads(REFERENCE.read_text())
    assert ref["cases"]
    for name, case in ref["cases"].items():
        ours = [c.index for c in stats.e_divisive(case["series"]).change_points]
        assert ours == case["e_divisive"], name
        # Hunter's windowed t-tests at 0.001 miss the bump (it returns to its level) and the
        # first of the two steps; where they see the change, it is where e-divisive sees it
        if name not in ("bump", "two-steps"):
            assert ours == case["hunter"], name


def test_regime_noise_pools_relative_variances():
    noise = stats.regime_noise([99, 101, 100, 200, 204, 196], [3])
    # regime 1: (−0.01)² + 0.01² + 0 over 2; regime 2: 0 + 0.02² + 0.02² over 2 → pooled /4
    assert noise.df == 4
    assert noise.cv2 == pytest.approx((2e-4 + 8e-4) / 4)
    assert stats.regime_noise([5.0], []).cv2 is None


def test_shift_is_fieller_on_regime_means():
    before, after = [99.0, 101.0, 100.0], [104.0, 106.0, 105.0, 105.0]
    noise = stats.RegimeNoise(0.01**2, 5)
    r = stats.shift_ratio(before, after, noise)
    a, b = 100.0, 105.0
    va, vb = 1e-4 * a * a / 3, 1e-4 * b * b / 4
    t = sps.t.ppf(0.975, 5)
    # Fieller by hand: the roots of (b − ρa)² = t²(vb + ρ²va)
    qa = a * a - t * t * va
    qb = -2 * a * b
    qc = b * b - t * t * vb
    roots = sorted(np.roots([qa, qb, qc]).real)
    assert r.change == pytest.approx(0.05)
    assert r.ci_low == pytest.approx(roots[0] - 1)
    assert r.ci_high == pytest.approx(roots[1] - 1)
    assert r.df == 5
    no_df = stats.shift_ratio(before, after, stats.RegimeNoise(None, 0))
    assert no_df.change == pytest.approx(0.05)
    assert no_df.ci_low is None


def test_prediction_interval_counts_one_whole_session():
    regime = [100.0, 101.0, 99.0, 100.0]
    noise = stats.RegimeNoise(0.01**2, 3)
    r = stats.predict_ratio(regime, 100.0, noise)
    # at the regime's mean the half-width is t·cv·√(1 + 1/k) to first order
    half = sps.t.ppf(0.975, 3) * 0.01 * math.sqrt(1 + 1 / 4)
    assert r.change == pytest.approx(0.0)
    assert r.ci_low == pytest.approx(-half, rel=0.05)
    assert r.ci_high == pytest.approx(half, rel=0.05)
    # wider than the shift of two regimes' means (one session, not a mean of many)
    shift = stats.shift_ratio(regime, [100.0] * 4, noise)
    assert r.ci_high - r.ci_low > shift.ci_high - shift.ci_low


def test_pooled_cv():
    assert stats.pooled_cv([]) is None
    assert stats.pooled_cv([(0.02, 0.0)]) is None
    cv, df = stats.pooled_cv([(0.02, 2.0), (0.04, 6.0)])
    assert df == 8.0
    assert cv == pytest.approx(math.sqrt((2 * 0.0004 + 6 * 0.0016) / 8))


def test_split_test_statistic_is_the_energy_statistic():
    rng = np.random.default_rng(12)
    z = rng.normal(0, 1, 40)
    z[25:] += 1.5
    got = stats._split_test(z, 25, 0.05, 199, 1)
    assert got.index == 25
    assert got.q == pytest.approx(stats.energy_statistic(z[:25], z[25:]))
    assert got.p_value == pytest.approx(1 / 200)
    xs = np.sort(rng.normal(0, 1, 17))
    brute = sum(abs(a - b) for i, a in enumerate(xs) for b in xs[i + 1 :])
    assert stats._pair_sum(xs) == pytest.approx(brute)
