"""verdict.py: the symmetric rule of DESIGN §5 (v0.2), Holm in the decisions, the reasons."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionlens import stats
from sessionlens.verdict import decide, family, judge, side, weigh

DECODE = [60.4, 65.5, 50.9, 61.5, 59.5]  # the seed's runs (candidate: decode attention mode)
PREFILL = [59.8, 60.9, 61.2, 59.1, 60.5]  # a prefill-mode config (baseline)
TPS = "throughput_tok_s"

# Binary fractions keep the boundary cases exact: lo == δ and hi == δ really are equal.


@pytest.mark.parametrize(
    ("change", "lo", "hi", "direction", "delta", "expected"),
    [
        # increase
        (0.5, 0.25, 0.75, "increase", 0.25, ("supported", "supported")),  # lo == δ counts
        (0.5, 0.125, 0.75, "increase", 0.25, ("inconclusive", "below-claim")),  # e ≥ δ, lo < δ
        (0.5, 0.0, 1.0, "increase", 0.25, ("inconclusive", "straddles")),  # lo == 0: no change
        (0.125, -0.125, 0.25, "increase", 0.25, ("inconclusive", "straddles")),  # hi == δ
        (0.125, -0.125, 0.1875, "increase", 0.25, ("rejected", "smaller-than-claimed")),
        (0.125, 0.0625, 0.375, "increase", 0.25, ("inconclusive", "below-claim")),
        (-0.25, -0.375, -0.125, "increase", 0.25, ("rejected", "opposite")),
        (-0.25, -0.375, 0.0, "increase", 0.25, ("rejected", "smaller-than-claimed")),
        (0.0, 0.0, 0.0, "increase", 0.0, ("supported", "supported")),  # lo == δ == 0
        (0.125, 0.125, 0.125, "increase", 0.25, ("rejected", "smaller-than-claimed")),
        # decrease: e = −r, [lo, hi] = [−ci_high, −ci_low]
        (-0.5, -0.75, -0.25, "decrease", 0.25, ("supported", "supported")),
        (-0.25, -0.375, -0.125, "decrease", 0.25, ("inconclusive", "below-claim")),
        (-0.5, -1.0, 0.0, "decrease", 0.25, ("inconclusive", "straddles")),
        (-0.125, -0.1875, 0.125, "decrease", 0.25, ("rejected", "smaller-than-claimed")),
        (-0.125, -0.375, -0.0625, "decrease", 0.25, ("inconclusive", "below-claim")),
        (0.25, 0.125, 0.375, "decrease", 0.25, ("rejected", "opposite")),
    ],
)
def test_rule_branches_and_boundaries(change, lo, hi, direction, delta, expected):
    assert decide(change, lo, hi, direction, delta) == expected


@settings(derandomize=True, max_examples=300)
@given(st.floats(-2, 2), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_rule_is_symmetric_and_holds_both_verdicts_to_one_standard(change, below, above, delta):
    lo, hi = change - below, change + above
    up = decide(change, lo, hi, "increase", delta)
    assert decide(-change, -hi, -lo, "decrease", delta) == up
    # supported needs the whole interval at or above δ, rejected the whole interval below it
    assert (up[0] == "supported") == (lo >= delta)
    assert (up[0] == "rejected") == (hi < delta)


def test_seed_comparison_is_rejected_with_the_launch_noise_stated():
    for delta in (0.35, 0.20):
        j = judge(PREFILL, DECODE, "increase", delta, metric=TPS)
        assert (j.verdict, j.verdict_raw, j.basis) == (
            "rejected",
            "rejected",
            "smaller-than-claimed",
        )
        assert j.change == pytest.approx(sum(DECODE) / sum(PREFILL) - 1)
        assert (j.unit, j.n_baseline, j.n_candidate) == ("sample", 5, 5)
        assert (j.launch_noise, j.launch_noise_source) == (0.02, "assumed")
        assert j.holm_level == 0.05  # a family of one: decided at the raw level
        assert j.runs_needed is None  # only for inconclusive verdicts
        assert j.verdict_without_outliers == "rejected"  # 50.9 flagged, nothing changes
        assert j.warnings == ("outlier", "assumed-launch-noise")
    assert j.reason == (
        "throughput_tok_s changed by -1.2 % (60.3 tok/s → 59.6 tok/s, 95 % CI -12.1 % to "
        "+10.0 %): even the largest increase in the interval is below the 20.0 % increase "
        "the claim needs. Judged on one launch a side (5 vs 5 values) plus launch noise "
        "assumed 2.0 % (no config was launched twice). Relaunch each config at least twice "
        "to measure it."
    )


def test_the_interval_is_never_narrower_than_the_launch_noise_allows():
    # two perfectly steady runs a side: v0.1 called this certain; the launch noise does not
    j = judge([60.0, 60.0], [60.1, 60.1], "increase", 0.0, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "straddles")
    assert j.ci_low is not None
    assert j.ci_high is not None
    # ±1.96·√2·2 % on r: about ±5.5 %
    assert j.ci_low == pytest.approx(0.1 / 60 - 0.0554, abs=0.002)
    assert j.ci_high == pytest.approx(0.1 / 60 + 0.0554, abs=0.002)
    wide = judge([60.0, 60.0], [60.1, 60.1], "increase", 0.0, metric=TPS, launch_noise=0.05)
    assert wide.ci_high - wide.ci_low > 2.4 * (j.ci_high - j.ci_low)
    assert (wide.launch_noise, wide.launch_noise_source) == (0.05, "given")


def test_supported_on_launch_means():
    base = [[100.0, 101.0, 99.0], [103.0, 104.0, 102.0], [98.0, 97.0, 99.0]]
    cand = [[130.0, 131.0, 129.0], [134.0, 133.0, 135.0], [128.0, 129.0, 127.0]]
    j = judge(base, cand, "increase", 0.1, metric=TPS)
    assert (j.verdict, j.unit, j.n_baseline, j.n_candidate) == ("supported", "launch", 3, 3)
    assert (j.samples_baseline, j.samples_candidate) == (9, 9)
    assert j.launch_noise_source == "measured"
    assert j.reason.endswith(
        ": the whole interval is at least the 10.0 % increase the claim needs. Judged on 3 vs "
        "3 launch means, with launch noise 2.4 %, measured from 6 launches of 2 configs."
    )


def test_a_real_change_below_the_claim_says_so_and_how_many_launches_would_decide():
    base = [[100.0, 101.0, 99.0], [103.0, 104.0, 102.0], [98.0, 97.0, 99.0]]
    cand = [[110.0, 111.0, 109.0], [113.0, 112.0, 114.0], [108.0, 109.0, 107.0]]
    j = judge(base, cand, "increase", 0.05, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "below-claim")
    assert "a real increase, +4.1 % to +16.1 %, but ≥ 5.0 % is not shown." in j.reason
    # more than the 3 launches a side there are, at the current noise
    assert j.runs_needed is not None
    assert j.runs_needed > 3
    assert j.runs_needed_note is None


def test_runs_needed_is_null_with_a_note_at_the_threshold_and_beyond_100():
    flat = judge([60.0, 60.0], [60.1, 60.1], "increase", 0.0, metric=TPS)
    assert flat.runs_needed is None
    assert flat.runs_needed_note == (
        "more than 100 launches a side would be needed: the estimate (+0.2 %) is close to "
        "the claim's threshold (0.0 %)"
    )
    at = judge([100.0, 100.0], [110.0, 110.0], "increase", 0.1, metric=TPS)
    assert at.change == pytest.approx(0.1)
    assert at.verdict == "inconclusive"
    if at.change == 0.1:
        assert at.runs_needed_note is not None
        assert "threshold" in at.runs_needed_note


def test_one_sample_is_always_inconclusive():
    j = judge([10.0], [11.0, 12.0, 13.0], "increase", 0.2, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "few-samples")
    assert (j.ci_low, j.ci_high, j.runs_needed) == (None, None, None)
    assert j.reason.startswith(
        "throughput_tok_s has 1 baseline sample and 3 candidate samples: a verdict needs at "
        "least 2 on each side."
    )


def test_non_positive_baseline_is_inconclusive_with_that_reason():
    j = judge([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], "increase", 0.2, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "undefined-baseline")
    assert (j.change, j.ci_low, j.ci_high, j.runs_needed) == (None, None, None, None)
    assert j.reason.startswith(
        "throughput_tok_s has a baseline level of 0.0 tok/s, so a relative change is undefined."
    )


def test_a_baseline_not_clearly_above_zero_gives_an_unbounded_ratio():
    j = judge([0.1, 5.0, 0.2, 9.0], [3.0, 4.0, 5.0, 6.0], "increase", 0.2, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "unbounded")
    assert j.change is not None
    assert j.ci_low is None
    assert "the interval of the ratio is unbounded (Fieller)" in j.reason
    assert "unbounded-ratio" in j.warnings


def test_decrease_claims_judge_minus_r():
    base = [[100.0, 102.0, 98.0], [101.0, 99.0, 100.0]]
    cand = [[70.0, 72.0, 69.0], [71.0, 70.0, 72.0]]
    j = judge(base, cand, "decrease", 0.2, metric="ttft_ms_mean")
    assert j.verdict == "supported"
    assert j.ci_low is not None
    assert j.ci_high is not None
    assert j.ci_low < j.change < j.ci_high < 0  # r and its interval, not turned by direction
    opposite = judge(cand, base, "decrease", 0.2, metric="ttft_ms_mean")
    assert (opposite.verdict, opposite.basis) == ("rejected", "opposite")
    assert "the whole interval is an increase, the opposite of the claimed decrease." in (
        opposite.reason
    )


def test_outliers_are_scored_within_their_launch_and_mad_zero_falls_back():
    # more than half the values equal: MAD = 0, the mean absolute deviation flags 70.0
    s = side([[60.0, 60.0, 60.0, 60.0, 70.0], [80.0, 80.0, 80.0]])
    assert [st_.outliers for st_ in s.launches] == [(4,), ()]
    # 80.0 is no outlier within its own launch, however far from the other launch
    assert s.clean is not None
    assert [st_.n for st_ in s.clean] == [4, 3]


def test_outlier_sensitive_verdicts_are_marked():
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    cand = [130.0, 131.0, 129.0, 130.5, 60.0]  # MAD 1: 60.0 scores 47, flagged
    j = judge(base, cand, "increase", 0.2, metric=TPS)
    assert j.verdict == "inconclusive"
    assert j.verdict_without_outliers == "supported"
    assert "outlier-sensitive" in j.warnings


def _evidence(delta: float) -> object:
    noise = stats.launch_noise([], 0.01)
    a = side([[100.0, 100.2, 99.8, 100.1, 99.9]])
    b = side([[103.0, 103.2, 102.8, 103.1, 102.9]])
    return weigh(a, b, noise, "increase", delta, 0.05, TPS)


def test_holm_decides_the_family_and_names_what_it_changed():
    # three claims, each shown alone at 95 % (one-sided p ≈ 0.02 > 0.025/3 for the first)
    members = [_evidence(0.0), _evidence(0.0), _evidence(0.0)]
    alone = family(members[:1])[0]
    assert alone.verdict == "supported"
    p = members[0].p  # type: ignore[attr-defined]
    assert p is not None
    assert 0.025 / 3 < p < 0.025
    judged = family(members)
    assert [j.verdict for j in judged] == ["inconclusive"] * 3
    assert [j.verdict_raw for j in judged] == ["supported"] * 3
    assert [j.holm_level for j in judged] == [None] * 3
    assert all("holm-changed" in j.warnings for j in judged)
    assert "supported at the raw 95 % level, but with 3 claims Holm's step-down" in judged[0].reason


def test_holm_levels_step_down():
    assert stats.holm_levels([0.001, 0.02, 0.004], 0.05) == [0.05 / 3, 0.05, 0.025]
    assert stats.holm_levels([0.001, 0.03, 0.004], 0.05) == [0.05 / 3, None, 0.025]
    assert stats.holm_levels([0.02, None], 0.05) == [None, None]
    assert stats.holm_levels([0.001, 0.0124], 0.05) == [0.025, 0.05]
    assert stats.test_levels([0.3, 0.1, 0.2], 0.05) == [0.05, 0.05 / 3, 0.025]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="direction must be 'increase' or 'decrease', not 'up'"):
        judge([1.0, 2.0], [1.0, 2.0], "up", 0.2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"min_effect must be a finite fraction >= 0, not -0\.1"):
        judge([1.0, 2.0], [1.0, 2.0], "increase", -0.1)
    assert math.isfinite(stats.ASSUMED_LAUNCH_CV)
