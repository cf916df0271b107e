"""`_codes` gives what `np.unique` gives, for every code dtype the fast paths hand it
(layouts as int64, int32 and int8; launches as int64; categorical numbers as uint32), by its
lookup table (codes close together) and by its sort (codes far apart, or negative)."""

from __future__ import annotations

import numpy as np
import pytest

from sessionlens._codes import numbered, present_codes


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_present_codes_are_the_sorted_distinct_codes(dtype: type) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 50))
        codes = rng.integers(0, int(rng.integers(1, 40)), n).astype(dtype)
        got = present_codes(codes)
        assert got == np.unique(codes).tolist()
        assert all(type(c) is int for c in got)


def test_present_codes_of_nothing_and_of_one_code() -> None:
    assert present_codes(np.zeros(0, np.int64)) == []
    assert present_codes(np.full(5, 3, np.int64)) == [3]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint32])
@pytest.mark.parametrize("spread", [40, 1 << 20])  # the lookup table's span, and beyond it
def test_numbered_is_unique_with_its_inverse(dtype: type, spread: int) -> None:
    rng = np.random.default_rng(11)
    info = np.iinfo(dtype)
    low = max(int(info.min), -spread)
    high = min(int(info.max), spread)
    for _ in range(100):
        codes = rng.integers(low, high, int(rng.integers(1, 60))).astype(dtype)
        uniq, inverse = numbered(codes)
        want, want_inverse = np.unique(codes, return_inverse=True)
        assert uniq.tolist() == want.tolist()
        assert inverse.tolist() == want_inverse.ravel().tolist()
        assert present_codes(codes) == want.tolist()
