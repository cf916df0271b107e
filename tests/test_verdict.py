"""verdict.py: every branch of the DESIGN §5 rule, its boundaries, and the reason sentence."""

from __future__ import annotations

import pytest
import scipy.stats as sps
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionlens.verdict import decide, judge

DECODE = [60.4, 65.5, 50.9, 61.5, 59.5]  # the seed's runs (candidate: decode attention mode)
PREFILL = [59.8, 60.9, 61.2, 59.1, 60.5]  # a prefill-mode config (baseline)
TPS = "throughput_tok_s"

# Binary fractions keep the boundary cases exact: e == δ and hi == δ really are equal.


@pytest.mark.parametrize(
    ("change", "lo", "hi", "direction", "delta", "expected"),
    [
        # increase
        (0.5, 0.25, 0.75, "increase", 0.25, ("supported", "supported")),
        (0.25, 0.125, 0.375, "increase", 0.25, ("supported", "supported")),  # e == δ counts
        (0.5, 0.0, 1.0, "increase", 0.25, ("inconclusive", "straddles")),  # lo == 0 is not > 0
        (0.125, -0.125, 0.25, "increase", 0.25, ("inconclusive", "straddles")),  # hi == δ
        (0.125, -0.125, 0.1875, "increase", 0.25, ("rejected", "smaller-than-claimed")),
        (0.125, 0.0625, 0.375, "increase", 0.25, ("inconclusive", "below-claim")),
        (-0.25, -0.375, -0.125, "increase", 0.25, ("rejected", "opposite")),
        (-0.25, -0.375, 0.0, "increase", 0.25, ("rejected", "smaller-than-claimed")),
        (0.0, 0.0, 0.0, "increase", 0.0, ("inconclusive", "no-change")),
        (0.125, 0.125, 0.125, "increase", 0.25, ("rejected", "smaller-than-claimed")),
        # decrease: e = −r, [lo, hi] = [−ci_high, −ci_low]
        (-0.5, -0.75, -0.25, "decrease", 0.25, ("supported", "supported")),
        (-0.25, -0.375, -0.125, "decrease", 0.25, ("supported", "supported")),  # e == δ
        (-0.5, -1.0, 0.0, "decrease", 0.25, ("inconclusive", "straddles")),
        (-0.125, -0.1875, 0.125, "decrease", 0.25, ("rejected", "smaller-than-claimed")),
        (-0.125, -0.375, -0.0625, "decrease", 0.25, ("inconclusive", "below-claim")),
        (0.25, 0.125, 0.375, "decrease", 0.25, ("rejected", "opposite")),
    ],
)
def test_rule_branches_and_boundaries(change, lo, hi, direction, delta, expected):
    assert decide(change, lo, hi, direction, delta) == expected


@settings(derandomize=True, max_examples=300)
@given(
    st.floats(-2, 2),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_rule_is_symmetric_in_direction(change, below, above, delta):
    lo, hi = change - below, change + above
    up = decide(change, lo, hi, "increase", delta)
    assert decide(-change, -hi, -lo, "decrease", delta) == up
    if up[0] == "supported":
        assert lo > 0
        assert change >= delta
    elif up[0] == "rejected":
        assert hi < delta
    else:
        assert hi >= delta
        assert lo <= 0 or change < delta


def test_seed_comparison_is_rejected_for_35_and_20_percent():
    mean_a = sum(PREFILL) / 5
    ci = sps.ttest_ind(DECODE, PREFILL, equal_var=False).confidence_interval(0.95)
    for delta in (0.35, 0.20):
        j = judge(PREFILL, DECODE, "increase", delta, metric=TPS)
        assert j.verdict == "rejected"
        assert j.basis == "smaller-than-claimed"
        assert j.change == pytest.approx((sum(DECODE) / 5 - mean_a) / mean_a)
        assert j.ci_low == pytest.approx(ci.low / mean_a)
        assert j.ci_high == pytest.approx(ci.high / mean_a)
        assert (j.n_baseline, j.n_candidate) == (5, 5)
        assert j.runs_needed is None  # only for inconclusive verdicts
        assert j.outliers_candidate == (2,)  # 50.9
        assert j.outliers_baseline == ()
        assert j.verdict_without_outliers == "rejected"
        assert j.warnings == ("outlier",)
    assert j.reason == (
        "throughput_tok_s changed by -1.2 % (60.3 tok/s → 59.6 tok/s, 95 % CI -12.2 % to "
        "+9.7 %): even the largest increase in the interval is below the 20.0 % increase "
        "the claim needs."
    )


def test_supported_reason():
    j = judge([10.0, 11.0, 10.5, 10.2], [12.0, 13.0, 11.0, 12.5], "increase", 0.1, metric=TPS)
    assert j.verdict == "supported"
    assert j.runs_needed is None
    assert j.verdict_without_outliers is None  # nothing flagged
    assert j.reason == (
        "throughput_tok_s changed by +16.3 % (10.4 tok/s → 12.1 tok/s, 95 % CI +4.0 % to "
        "+28.6 %): the interval excludes no change and the estimate reaches the 10.0 % "
        "increase the claim needs."
    )


def test_decrease_reason_uses_r_but_judges_minus_r():
    base, cand = [100.0, 102.0, 98.0, 101.0], [70.0, 72.0, 69.0, 71.0]
    j = judge(base, cand, "decrease", 0.2, metric="ttft_ms_mean")
    assert j.verdict == "supported"
    assert j.change == pytest.approx(70.5 / 100.25 - 1)
    assert j.ci_low < j.change < j.ci_high < 0  # r and its interval, not turned by direction
    assert j.reason == (
        "ttft_ms_mean changed by -29.7 % (100.2 ms → 70.50 ms, 95 % CI -32.3 % to -27.0 %): "
        "the interval excludes no change and the estimate reaches the 20.0 % decrease the "
        "claim needs."
    )
    opposite = judge(cand, base, "decrease", 0.2, metric="ttft_ms_mean")
    assert (opposite.verdict, opposite.basis) == ("rejected", "opposite")
    assert opposite.reason.endswith(
        ": the whole interval is an increase, the opposite of the claimed decrease."
    )


def test_inconclusive_straddle_with_runs_needed_by_hand():
    base = [100.0, 110.0, 90.0, 105.0, 95.0]
    cand = [120.0, 100.0, 135.0, 95.0, 125.0]
    j = judge(base, cand, "increase", 0.2, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "straddles")
    # pooled variance = (4·62.5 + 4·287.5)/8 = 175; z = 1.959964 + 0.841621 = 2.801585
    # 2·(2.801585·√175/(0.2·100))² = 6.87 -> 7
    assert j.pooled_sd == pytest.approx(175**0.5)
    assert j.runs_needed == 7
    assert j.reason.endswith(
        ": the interval includes both no change and the 20.0 % increase the claim needs."
    )


def test_claims_without_a_size():
    j = judge(PREFILL, DECODE, "decrease", 0.0, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "straddles")
    assert j.runs_needed is None  # δ·mean_A = 0: the formula says nothing
    assert j.reason.endswith(
        "+9.7 %): the interval includes no change, so the claimed decrease is not shown."
    )
    j = judge([10.0, 11.0, 10.5, 10.2], [12.0, 13.0, 11.0, 12.5], "increase", 0.0, metric=TPS)
    assert j.verdict == "supported"
    assert j.reason.endswith(
        "+28.6 %): the interval excludes no change, as the claimed increase needs."
    )


def test_inconclusive_below_claim():
    j = judge([10.0, 11.0, 10.5, 10.2], [12.0, 13.0, 11.0, 12.5], "increase", 0.19, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "below-claim")
    assert j.reason.endswith(
        ": a real increase, but the estimate is below the 19.0 % increase the claim needs "
        "and the interval still reaches it."
    )
    # 2·(2.801585·0.67762/(0.19·10.425))² = 1.84 -> 2
    assert j.runs_needed == 2


def test_one_sample_is_always_inconclusive():
    j = judge([10.0], [11.0, 12.0, 13.0], "increase", 0.2, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "few-samples")
    assert j.change == pytest.approx(0.2)
    assert (j.ci_low, j.ci_high, j.p_welch) == (None, None, None)
    # pooled SD from the candidate alone: 1; 2·(2.801585·1/(0.2·10))² = 3.92 -> 4
    assert j.runs_needed == 4
    assert j.reason == (
        "throughput_tok_s has 1 baseline sample and 3 candidate samples: a verdict needs at "
        "least 2 on each side."
    )
    assert j.warnings == ("few-samples",)


def test_non_positive_baseline_is_inconclusive_with_that_reason():
    j = judge([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], "increase", 0.2, metric=TPS)
    assert (j.verdict, j.basis) == ("inconclusive", "undefined-baseline")
    assert (j.change, j.ci_low, j.ci_high, j.runs_needed) == (None, None, None, None)
    assert j.reason == (
        "throughput_tok_s has a baseline mean of 0.0 tok/s, so a relative change is undefined."
    )
    assert "undefined-change" in j.warnings


def test_zero_variance_is_judged_on_the_point():
    up = judge([10.0, 10.0], [12.0, 12.0], "increase", 0.1, metric="ttft_ms_mean")
    assert (up.verdict, up.change, up.ci_low, up.ci_high) == ("supported", 0.2, 0.2, 0.2)
    assert (up.p_welch, up.p_mannwhitney, up.hedges_g) == (None, None, None)
    assert up.reason == (
        "ttft_ms_mean changed by +20.0 % (10.00 ms → 12.00 ms, every value equal within each "
        "config): the interval excludes no change and the estimate reaches the 10.0 % increase "
        "the claim needs."
    )
    down = judge([10.0, 10.0], [8.0, 8.0], "increase", 0.1, metric="ttft_ms_mean")
    assert (down.verdict, down.basis) == ("rejected", "opposite")
    assert down.reason.endswith("config): a decrease, the opposite of the claimed increase.")
    same = judge([10.0, 10.0], [10.0, 10.0], "increase", 0.0, metric="ttft_ms_mean")
    assert (same.verdict, same.basis, same.runs_needed) == ("inconclusive", "no-change", None)


def test_reason_shows_enough_decimals_to_tell_the_change_from_the_claim():
    j = judge([100.0, 100.0], [119.96, 119.96], "increase", 0.2, metric=TPS)
    assert j.verdict == "rejected"
    assert j.reason == (
        "throughput_tok_s changed by +19.96 % (100.0 tok/s → 120.0 tok/s, every value equal "
        "within each config): below the 20.00 % increase the claim needs."
    )


def test_alpha_sets_the_confidence_level_in_the_reason():
    j = judge(PREFILL, DECODE, "increase", 0.2, alpha=0.1, metric=TPS)
    assert "90 % CI" in j.reason
    ci = sps.ttest_ind(DECODE, PREFILL, equal_var=False).confidence_interval(0.90)
    assert j.ci_high == pytest.approx(ci.high / (sum(PREFILL) / 5))


def test_verdict_without_outliers_can_differ():
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    cand = [130.0, 131.0, 129.0, 130.5, 60.0]  # MAD 1: 60.0 scores 47, flagged
    j = judge(base, cand, "increase", 0.2, metric=TPS)
    assert j.outliers_candidate == (4,)
    assert j.verdict == "inconclusive"
    assert j.verdict_without_outliers == "supported"
    assert j.warnings == ("outlier", "outlier-sensitive")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="direction must be 'increase' or 'decrease', not 'up'"):
        judge([1.0, 2.0], [1.0, 2.0], "up", 0.2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"min_effect must be a finite fraction >= 0, not -0\.1"):
        judge([1.0, 2.0], [1.0, 2.0], "increase", -0.1)
