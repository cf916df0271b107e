"""specmath.py: the DESIGN §6 worked example, each formula by hand, and round trips."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionlens.metrics import format_number, format_percent, format_value
from sessionlens.specmath import (
    accept_len_for,
    break_even_accept_len,
    ceiling_tok_s,
    chain_length,
    economics,
    efficiency,
    estimate_cycle_ms,
    estimate_cycle_ms_mean,
    estimate_cycle_ms_mean_columns,
    p_chain,
    p_unbounded,
    reachable,
)

GOLDEN = (math.sqrt(5) - 1) / 2  # 1 + p + p² = 2


def test_worked_example_of_design_6():
    # c = 29.5 ms (verify alone), L = 2.0, T₀ = 83, T = 150, k = 2
    e = economics(29.5, 2.0, 2, baseline_tok_s=83, target_tok_s=150)
    assert e.ceiling_tok_s == pytest.approx(2000 / 29.5)
    assert format_value("throughput_tok_s", e.ceiling_tok_s) == "67.8 tok/s"
    assert e.break_even_accept_len == pytest.approx(2.4485)
    assert format_number(e.break_even_accept_len, 2) == "2.45"
    assert e.target_accept_len == pytest.approx(4.425)
    assert e.reachable is False  # at most k + 1 = 3
    assert e.p_needed_chain is None
    assert e.p_needed_unbounded == pytest.approx(1 - 1 / 4.425)
    assert format_percent(e.p_needed_unbounded) == "77.4 %"
    assert e.p_current_unbounded == 0.5
    assert e.p_current_chain == pytest.approx(GOLDEN)
    assert format_percent(e.p_current_chain) == "61.8 %"
    assert (e.measured_tok_s, e.efficiency) == (None, None)
    assert e.warnings == ()


def test_worked_example_with_the_cycle_from_the_phase_lines():
    # 29.5 ms of verify at 97 % of the cycle -> c ≈ 30.4 ms
    c = 29.5 / 0.97
    e = economics(c, 2.0, 2, measured_tok_s=59.6, baseline_tok_s=82.5, target_tok_s=150)
    assert format_value("throughput_tok_s", e.ceiling_tok_s) == "65.8 tok/s"
    assert format_percent(e.p_needed_unbounded) == "78.1 %"
    # the JSON example of DESIGN §7
    assert format_number(e.efficiency, 2) == "0.91"
    assert format_number(e.break_even_accept_len, 2) == "2.51"
    assert format_number(e.target_accept_len, 2) == "4.56"
    assert e.efficiency == pytest.approx(59.6 / (2000 / c))


def test_formulas_by_hand():
    assert ceiling_tok_s(25.0, 2.5) == 100.0
    assert ceiling_tok_s(0.0, 2.0) is None
    assert efficiency(80.0, 100.0) == 0.8
    assert efficiency(80.0, 0.0) is None
    assert break_even_accept_len(80.0, 25.0) == 2.0
    assert accept_len_for(120.0, 25.0) == 3.0
    assert reachable(3.0, 2) is True  # exactly k + 1
    assert reachable(3.0000001, 2) is False


def test_chain_acceptance_p():
    assert chain_length(0.5, 2) == 1.75
    assert chain_length(1.0, 3) == 4.0
    assert p_chain(2.0, 2) == pytest.approx(GOLDEN, abs=1e-12)
    assert p_chain(1.75, 1) == pytest.approx(0.75, abs=1e-12)  # k = 1: L = 1 + p
    assert p_chain(1.0, 2) == 0.0
    assert p_chain(3.0, 2) == 1.0
    assert p_chain(3.01, 2) is None  # above k + 1
    assert p_chain(0.9, 2) is None  # below one token per cycle
    assert p_chain(1.5, 0) is None  # no draft steps, no p


def test_unbounded_acceptance_p():
    assert p_unbounded(4.0) == 0.75
    assert p_unbounded(1.0) == 0.0
    assert p_unbounded(0.8) is None


@settings(derandomize=True, max_examples=200)
@given(st.floats(min_value=0, max_value=1), st.integers(min_value=1, max_value=8))
def test_p_chain_inverts_chain_length(p, k):
    length = chain_length(p, k)
    assert length <= k + 1
    assert chain_length(p_chain(length, k), k) == pytest.approx(length, abs=1e-9)


@settings(derandomize=True, max_examples=100)
@given(
    st.floats(min_value=1, max_value=9),
    st.floats(min_value=1, max_value=9),
    st.integers(min_value=1, max_value=8),
)
def test_p_chain_rises_with_the_length_and_exceeds_the_unbounded_p(l1, l2, k):
    lo, hi = sorted((l1, l2))
    if hi > k + 1:
        return
    assert p_chain(lo, k) <= p_chain(hi, k) + 1e-12
    # a short chain needs a higher per-token acceptance than an unbounded one
    assert p_chain(hi, k) >= p_unbounded(hi) - 1e-12


def test_cycle_estimate_from_decode_intervals():
    # 4 running requests, 2 tokens per cycle each, 263 tok/s overall: 30.42 ms per cycle
    assert estimate_cycle_ms(2.0, 4, 263.0) == pytest.approx(8000 / 263)
    assert estimate_cycle_ms(2.0, 0, 263.0) is None  # idle interval
    assert estimate_cycle_ms(2.0, 4, 0.0) is None
    assert estimate_cycle_ms_mean([(2.0, 4, 250.0), (2.0, 0, 0.0), (2.0, 2, 100.0)]) == (
        pytest.approx((32.0 + 40.0) / 2)
    )
    assert estimate_cycle_ms_mean([]) is None


_ANY = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e308, 5e-324, -3.0]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ANY, _ANY, _ANY), max_size=40))
def test_cycle_estimate_in_columns_is_the_scalar_one_bit_for_bit(rows):
    import numpy as np

    cols = [np.array([r[i] for r in rows], np.float64) for i in range(3)]
    got = estimate_cycle_ms_mean_columns(*cols)
    want = estimate_cycle_ms_mean(rows)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == want or (math.isnan(got) and math.isnan(want))


def test_economics_warnings():
    assert economics(30.0, 0.8, 2).warnings == ("accept-len-below-one",)
    assert economics(30.0, 3.5, 2).warnings == ("accept-len-above-steps",)
    assert economics(30.0, 2.0, 2, measured_tok_s=80.0).warnings == ("above-ceiling",)


def test_economics_with_missing_inputs():
    e = economics(None, 2.0, None, measured_tok_s=60.0, baseline_tok_s=83, target_tok_s=150)
    assert e.p_current_unbounded == 0.5
    assert (e.p_current_chain, e.ceiling_tok_s, e.efficiency) == (None, None, None)
    assert (e.break_even_accept_len, e.target_accept_len, e.reachable) == (None, None, None)
    e = economics(30.0, None, 4, target_tok_s=150)
    assert e.target_accept_len == 4.5
    assert e.reachable is True
    assert chain_length(e.p_needed_chain, 4) == pytest.approx(4.5)
    assert (e.ceiling_tok_s, e.p_current_unbounded) == (None, None)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.7, 0.999, 0.999999, 1.0])
def test_chain_length_of_many_steps_by_its_closed_form(p: float) -> None:
    """A log's absurd `speculative_num_steps` (1e11) must not sum 1e11 terms 200 times: past
    1024 steps the closed form, equal to the direct sum within rounding."""
    assert chain_length(p, 2000) == pytest.approx(math.fsum(p**i for i in range(2001)), rel=1e-12)


def test_chain_acceptance_p_at_a_hundred_billion_steps() -> None:
    assert p_chain(2.0, 10**11) == pytest.approx(0.5, rel=1e-12)
    assert p_chain(1e6, 10**11) == pytest.approx(1 - 1e-6, rel=1e-12)
