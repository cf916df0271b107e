"""Statistics of DESIGN §5 as pure functions: numbers in, frozen dataclasses out.

Owns `summarize` (Summary, with Iglewicz–Hoaglin outliers), `compare` (Comparison: Welch
interval of the relative change, Welch and Mann–Whitney p, Hedges' g), `holm`, the
benchstat-like minimum-sample check and the sample-size formula. Caveats are machine codes in
`warnings`; nothing here words anything for humans, and polars/pydantic/jinja2 stay out.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Comparison",
    "MannWhitneyMethod",
    "Outliers",
    "Summary",
    "compare",
    "finite_mean",
    "fmean",
    "holm",
    "mannwhitney_min_p",
    "min_samples",
    "outliers",
    "runs_needed",
    "summarize",
    "t_quantile",
]

# Warning codes (catalogued in diagnostics.CODES, "statistics codes" section).
W_FEW = "few-samples"  # fewer samples than a difference at alpha can ever be detected with
W_ZERO_VAR = "zero-variance"  # all values equal (Summary), or on both sides (Comparison)
W_OUTLIER = "outlier"  # at least one value flagged (kept)
W_NON_FINITE = "non-finite-value"  # nan/inf left out of the statistics
W_UNDEFINED = "undefined-change"  # baseline mean <= 0: no relative change

# Iglewicz & Hoaglin (1993): modified z-score 0.6745·(x − median)/MAD, flagged above 3.5.
_MZ_FACTOR = 0.6745
_MZ_THRESHOLD = 3.5

# Limits of the Mann–Whitney methods (see `_mannwhitney`): exact null distribution of U
# without ties up to this many pairs; exact enumeration of the permutations with ties up to
# this many splits; beyond both, the normal approximation.
_MWU_EXACT_MAX_PAIRS = 2500
_MWU_PERMUTATION_MAX_SPLITS = 5000

# From this many values on, the one-sample arithmetic runs on numpy arrays: the same IEEE
# operations per element (exact sums equal to `math.fsum`'s, medians from a sort), so the results
# are bit-identical to the list path (tested), at a fraction of the time for the millions of
# interval samples of a day-long server log. Below it numpy is not imported.
_ARRAY_FROM = 2048

MannWhitneyMethod = Literal["exact", "permutation", "asymptotic"]

# Values as a sequence of floats or a float64 array (a `group.PointList` column).
if TYPE_CHECKING:
    Values: TypeAlias = Sequence[float] | npt.NDArray[np.float64]
else:
    Values = Sequence[float]


@dataclass(frozen=True, slots=True)
class Outliers:
    """Values flagged by |0.6745·(x − median)/MAD| > 3.5: indices into the input."""

    indices: tuple[int, ...]
    median: float | None
    mad: float | None
    threshold: float = _MZ_THRESHOLD


@dataclass(frozen=True, slots=True)
class Summary:
    """One config × metric: location, spread, t interval of the mean, flagged outliers.

    `n` counts the finite values used; `outliers` are indices into the input sequence (nan and
    inf are skipped, so indices still point at the caller's rows).
    """

    n: int
    mean: float | None
    median: float | None
    stdev: float | None
    cv: float | None
    ci_low: float | None
    ci_high: float | None
    min: float | None
    max: float | None
    outliers: tuple[int, ...]
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Candidate B against baseline A.

    `change` is r = (mean_B − mean_A)/mean_A and `ci_low`/`ci_high` its interval: the Welch
    t-interval of mean_B − mean_A (`diff_ci_low`/`diff_ci_high`, Welch–Satterthwaite `df`)
    divided by mean_A. `pooled_sd` feeds Hedges' g and the sample-size formula.
    """

    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    diff_ci_low: float | None
    diff_ci_high: float | None
    change: float | None
    ci_low: float | None
    ci_high: float | None
    df: float | None
    p_welch: float | None
    p_mannwhitney: float | None
    mannwhitney_method: MannWhitneyMethod | None
    hedges_g: float | None
    pooled_sd: float | None
    alpha: float
    min_samples: int
    warnings: tuple[str, ...]


# ---------------------------------------------------------------- helpers


def _check_alpha(alpha: float) -> None:
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")


def _finite(values: Values) -> tuple[list[int], list[float], bool]:
    """Indices and values of the finite entries, and whether any entry was dropped."""
    idx = [i for i, v in enumerate(values) if math.isfinite(v)]
    return idx, [float(values[i]) for i in idx], len(idx) != len(values)


def _finite_array(values: Values) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], bool]:
    """`_finite` on numpy arrays: indices and values of the finite entries, any dropped."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(arr)
    if bool(ok.all()):
        return np.arange(len(arr), dtype=np.int64), arr, False
    idx = np.flatnonzero(ok).astype(np.int64)
    return idx, arr[idx], True


def _finite_only(values: Values) -> tuple[npt.NDArray[np.float64], bool]:
    """`_finite_array` without the indices (8 bytes a value less, for who needs none)."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(arr)
    if bool(ok.all()):
        return arr, False
    return arr[ok], True


def finite_mean(values: Values) -> float | None:
    """The mean of the finite values, as `summarize(values).mean` (None when there is none),
    without the median, the variance and the outliers."""
    if len(values) >= _ARRAY_FROM:
        arr, _ = _finite_only(values)
        return fmean(arr) if len(arr) else None
    _idx, xs, _ = _finite(values)
    return fmean(xs) if xs else None


def fmean(xs: Values) -> float:
    """The mean of finite values, `math.fsum(xs) / len(xs)`, also where the sum is beyond
    float range (values near 1e308: fsum raises)."""
    try:
        return _fsum(xs) / len(xs)
    except OverflowError:  # a sum beyond float range: values near 1e308
        return _fsum(_scaled(xs, _DOWN)) / len(xs) / _DOWN


# Values times this sum far inside float range (bit for bit their sum times it, unless one
# is below 2**-422, far under the ulp of a sum that overflowed unscaled).
_DOWN = 2.0**-600


def _fsum(xs: Values) -> float:
    """`math.fsum` of a list or of an array (which `_fsum_array` sums exactly the same)."""
    return math.fsum(xs) if isinstance(xs, Sequence) else _fsum_array(xs)


def _scaled(xs: Values, k: float) -> Values:
    return [x * k for x in xs] if isinstance(xs, Sequence) else xs * k


_FSUM_PIECE = 1 << 16
_XSUM_BLOCK = 1 << 17  # values per numpy pass of `_fsum_array` (they stay in the cache)
_XSUM_FLUSH = 1 << 25  # values whose bucket sums are exact in float64 (below 2**53)
_XSUM_BIAS = 1100  # frexp's exponents lie in [-1073, 1024]
_XSUM_SAFE = 2.0**1020  # n * max|x| below this: no partial sum of fsum's can overflow


def _fsum_array(xs: npt.NDArray[np.float64]) -> float:
    """`math.fsum` of an array's values, bit for bit, summed exactly by numpy.

    The exact sum is split into float sums that are themselves exact (`_split_sums`, or
    where that takes too many rounds, `_bucket_sum`), and rounded once, correctly, like
    fsum. Faster than fsum over Python floats, and numpy lets go of the GIL, so two
    summaries run at once. Arrays holding non-finite values, or large enough for fsum to
    overflow on the way, go to fsum itself."""
    import numpy as np

    n = len(xs)
    # the largest magnitude without a copy of the array (np.maximum keeps a nan)
    if n == 0 or not float(np.maximum(xs.max(), -xs.min())) * n < _XSUM_SAFE:  # nan, inf
        return _fsum_floats(xs)
    parts = _split_sums(xs)
    total = math.fsum(parts) if parts is not None else _bucket_sum(xs)
    if total == 0:  # the sign of a zero sum: of negative zeros only, as fsum gives it
        return _fsum_floats(xs[:1]) if not np.any(xs) and np.signbit(xs).all() else 0.0
    return total


def _split_sums(
    xs: npt.NDArray[np.float64], square_from: float | None = None
) -> list[float] | None:
    """Floats whose exact sum is the exact sum of `xs` (finite, `n * max|x|` below
    `_XSUM_SAFE`); None when a block needs more than `_SPLIT_ROUNDS` rounds (then
    `_bucket_sum` sums them).

    A block of m values is split round by round (Rump, Ogita and Oishi, "Accurate
    floating-point summation", SIAM J. Sci. Comput. 31, 2008, ExtractVector): with
    sigma = 2**(e + b), max|x| < 2**e and 2**b > m + 2, each x is q + r exactly, where
    q = (sigma + x) - sigma is a multiple of 2**-53 * sigma with |q| <= 2**e and
    r = x - q; every partial sum of the block's q's is then such a multiple of magnitude
    below sigma, so numpy's sum of them is exact in any order. The r's are split again
    until they are all 0: a round takes about 53 - b bits of the values' spread. Among
    subnormals (sigma one too) every sum is exact: the rule holds there as well.

    With `square_from`, the values split are each x's `(x - square_from) ** 2`, made a
    block at a time (as `_squares` makes them), not as an array as long as `xs`."""
    import numpy as np

    n = len(xs)
    size = min(n, _XSUM_BLOCK)
    high, rest = np.empty(size), np.empty(size)
    squares = np.empty(size if square_from is not None else 0)
    parts: list[float] = []
    for at in range(0, n, _XSUM_BLOCK):
        cur = xs[at : at + _XSUM_BLOCK]
        m = len(cur)
        q, r = high[:m], rest[:m]
        if square_from is not None:
            cur = np.subtract(cur, square_from, out=squares[:m])
            cur *= cur
        b = (m + 2).bit_length()
        top = float(np.maximum(cur.max(), -cur.min()))
        rounds = 0
        while top != 0.0:
            e = math.frexp(top)[1]  # top < 2**e
            if rounds == _SPLIT_ROUNDS:
                return None
            sigma = math.ldexp(1.0, e + b)
            np.add(cur, sigma, out=q)
            q -= sigma
            parts.append(float(q.sum()))
            np.subtract(cur, q, out=r)
            cur = r
            top = float(np.maximum(r.max(), -r.min()))
            rounds += 1
    return parts


# Rounds of `_split_sums` a block may take (a round takes 35 to 51 bits of the spread)
_SPLIT_ROUNDS = 6


def _bucket_sum(xs: npt.NDArray[np.float64]) -> float:
    """The exact sum of `xs` (as `_split_sums` takes them) correctly rounded, summed in
    integers: each value is m * 2**(e - 53) with m an integer of 53 bits (`frexp`); the
    two halves of m are summed per exponent with `bincount` (float sums of integers stay
    exact below 2**53), the buckets joined as Python integers, and the one rounding is
    Python's integer division, correctly rounded like fsum. For any spread of values."""
    import numpy as np

    n = len(xs)
    total = 0
    half = (1 << 26) - 1
    buckets = 2 * _XSUM_BIAS
    for start in range(0, n, _XSUM_FLUSH):
        end = min(start + _XSUM_FLUSH, n)
        hi = np.zeros(buckets)  # |hi| <= 2**27 a value: sums exact for _XSUM_FLUSH values
        lo = np.zeros(buckets)
        for at in range(start, end, _XSUM_BLOCK):
            frac, exp = np.frexp(xs[at : min(at + _XSUM_BLOCK, end)])
            m = np.ldexp(frac, 53).astype(np.int64)
            exp += _XSUM_BIAS
            hi += np.bincount(exp, weights=(m >> 26).astype(np.float64), minlength=buckets)
            lo += np.bincount(exp, weights=(m & half).astype(np.float64), minlength=buckets)
        for k in np.flatnonzero((hi != 0) | (lo != 0)).tolist():
            # value of bucket k: (hi * 2**26 + lo) * 2**(k - bias - 53); in units of 2**-1200
            total += ((int(hi[k]) << 26) + int(lo[k])) << (k - _XSUM_BIAS - 53 + 1200)
    return total / (1 << 1200)


def _fsum_floats(xs: npt.NDArray[np.float64]) -> float:
    """`math.fsum` of an array's values, in order, made Python floats a piece at a time (a
    list of millions of floats would take ~32 bytes per value)."""
    if len(xs) <= _FSUM_PIECE:
        return math.fsum(xs.tolist())
    pieces = (xs[i : i + _FSUM_PIECE].tolist() for i in range(0, len(xs), _FSUM_PIECE))
    return math.fsum(itertools.chain.from_iterable(pieces))


def _var(xs: Values, mean: float) -> float:
    # Two-pass sum of squares with fsum: exact enough for millions of interval samples,
    # and far cheaper than statistics.variance's Fractions. `d * d`, not `d ** 2`: the
    # product is correctly rounded (C's pow is not always), and numpy computes the same.
    if not isinstance(xs, Sequence) and len(xs) > _XSUM_BLOCK:
        # a long array's squares a block at a time (no array of them as long as it), where
        # no square nor sum can overflow: the same exact sum, the same rounding
        far = max(abs(float(xs.max()) - mean), abs(float(xs.min()) - mean))
        if far * far * len(xs) < _XSUM_SAFE:
            parts = _split_sums(xs, square_from=mean)
            if parts is not None:
                return math.fsum(parts) / (len(xs) - 1)
    try:
        return _fsum(_squares(xs, mean, 1.0)) / (len(xs) - 1)
    except OverflowError:  # a sum of squares beyond float range: the variance may be inf
        return _fsum(_squares(xs, mean, _DOWN_HALF)) / (len(xs) - 1) / _DOWN


_DOWN_HALF = 2.0**-300  # squared: _DOWN


def _squares(xs: Values, mean: float, k: float) -> Values:
    """Each value's squared distance from the mean, of the distances times `k`."""
    if isinstance(xs, Sequence):
        return [((x - mean) * k) * ((x - mean) * k) for x in xs]
    import numpy as np

    with np.errstate(over="ignore"):  # an inf, as Python's floats give it, not a warning
        d = xs - mean
        if k != 1.0:
            d *= k
        d *= d
    return d


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else _midpoint(s[mid - 1], s[mid])


def _midpoint(a: float, b: float) -> float:
    """(a + b) / 2, as `statistics.median` takes it; halved first when the sum overflows."""
    m = (a + b) / 2
    return a / 2 + b / 2 if math.isinf(m) else m


def _t_ppf(q: float, df: float) -> float:
    # scipy.special, not scipy.stats: the same function `stats.t.ppf` calls (equal results,
    # tested), for a third of the import time. Lazy: `import sessionlens` must stay fast.
    from scipy import special

    return float(special.stdtrit(df, q))


def _t_sf(x: float, df: float) -> float:
    from scipy import special

    return float(special.stdtr(df, -x))


def _dedupe(codes: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(codes))


def _none_if_nan(x: Any) -> float | None:
    f = float(x)
    return None if math.isnan(f) else f


# ---------------------------------------------------------------- one sample


def outliers(values: Values) -> Outliers:
    """Iglewicz–Hoaglin outliers of the finite values; none when MAD is 0 or n < 3."""
    if len(values) >= _ARRAY_FROM:
        idx_a, arr, _ = _finite_array(values)
        return _outliers_array(idx_a, arr)
    idx, xs, _ = _finite(values)
    if not xs:
        return Outliers((), None, None)
    med = _median(xs)
    mad = _median([abs(x - med) for x in xs])
    if mad == 0:
        # More than half the values are equal: every other value would score infinite.
        return Outliers((), med, mad)
    flagged = tuple(
        i for i, x in zip(idx, xs, strict=True) if abs(_MZ_FACTOR * (x - med) / mad) > _MZ_THRESHOLD
    )
    return Outliers(flagged, med, mad)


def _outliers_array(idx: npt.NDArray[np.int64], xs: npt.NDArray[np.float64]) -> Outliers:
    """`outliers` of the finite values `xs` found at input indices `idx`."""
    import numpy as np

    if len(xs) == 0:
        return Outliers((), None, None)
    med = _median_array(xs)
    with np.errstate(over="ignore", invalid="ignore"):  # inf and nan as the list path's
        mad = _median_array(np.abs(xs - med), own=True)  # its own array: no copy
        if mad == 0:
            return Outliers((), med, mad)
        hit = np.abs(_MZ_FACTOR * (xs - med) / mad) > _MZ_THRESHOLD
    return Outliers(tuple(idx[hit].tolist()), med, mad)


def _median_array(xs: npt.NDArray[np.float64], own: bool = False) -> float:
    """The median as `_median` computes it: the middle order statistics are exact (a
    partition, not a sort), and their mean is taken the same way.

    The partition is always asked for two places, even for an odd count: numpy's partition
    at one place takes another algorithm, which crawls on values that are mostly one
    number (a 1 GB log's `#queue-req`, 97 % zeros: 610 ms for 3.75 million values against
    10 ms at two places; benchmarks/RESULTS.md). An array the caller `own`s is
    partitioned in place (its order is lost), no copy made."""
    import numpy as np

    n = len(xs)
    mid = n // 2
    if n == 1:
        return float(xs[0])
    if own:
        xs.partition([mid - 1, mid])
        part = xs
    else:
        part = np.partition(xs, [mid - 1, mid])
    if n % 2:
        return float(part[mid])
    return _midpoint(float(part[mid - 1]), float(part[mid]))


def summarize(values: Values, alpha: float = 0.05, flag: bool = True) -> Summary:
    """n, mean, median, sample stdev, CV, t interval of the mean at 1 − alpha, min, max, outliers.

    stdev and the interval are None for n < 2; the interval is the point mean when stdev is 0.
    Non-finite values are left out with a `non-finite-value` warning; an empty input gives
    n = 0 and None everywhere rather than an exception (bad input is data). Large inputs
    (a list or a float64 array) are computed on numpy arrays with bit-identical results.
    """
    _check_alpha(alpha)
    if len(values) >= _ARRAY_FROM:
        if flag:
            idx_a, arr, dropped = _finite_array(values)
        else:  # no outliers looked for: no indices made
            arr, dropped = _finite_only(values)
        n = len(arr)
        if n == 0:
            return _summary(0, 0.0, 0.0, None, dropped, alpha, None)
        mean = fmean(arr)
        var = _var(arr, mean) if n >= 2 else None
        out = _outliers_array(idx_a, arr) if flag else Outliers((), _median_array(arr), None)
        assert out.median is not None  # n > 0; for mypy
        lo, hi = float(arr.min()), float(arr.max())
        return _summary(n, mean, out.median, var, dropped, alpha, out, lo, hi)
    _idx, xs, dropped = _finite(values)
    n = len(xs)
    if n == 0:
        return _summary(0, 0.0, 0.0, None, dropped, alpha, None)
    mean = fmean(xs)
    var_l = _var(xs, mean) if n >= 2 else None
    med = _median(xs)
    out_l = outliers(values) if flag else Outliers((), med, None)
    return _summary(n, mean, med, var_l, dropped, alpha, out_l, min(xs), max(xs))


def _summary(
    n: int,
    mean: float,
    median: float,
    var: float | None,
    dropped: bool,
    alpha: float,
    out: Outliers | None,
    lo: float = 0.0,
    hi: float = 0.0,
) -> Summary:
    warnings: list[str] = [W_NON_FINITE] if dropped else []
    if n == 0 or out is None:
        return Summary(0, None, None, None, None, None, None, None, None, (), (*warnings, W_FEW))
    stdev: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    if var is not None:
        stdev = math.sqrt(var)
        if stdev == 0:
            ci_low = ci_high = mean
            warnings.append(W_ZERO_VAR)
        else:
            half = _t_ppf(1 - alpha / 2, n - 1) * stdev / math.sqrt(n)
            ci_low, ci_high = mean - half, mean + half
    else:
        warnings.append(W_FEW)
    # CV against |mean| so a negative-valued metric still gets a positive spread ratio.
    cv = stdev / abs(mean) if stdev is not None and mean != 0 else None
    if out.indices:
        warnings.append(W_OUTLIER)
    return Summary(
        n=n,
        mean=mean,
        median=median,
        stdev=stdev,
        cv=cv,
        ci_low=ci_low,
        ci_high=ci_high,
        min=lo,
        max=hi,
        outliers=out.indices,
        warnings=_dedupe(warnings),
    )


# ---------------------------------------------------------------- minimum samples


def mannwhitney_min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided exact Mann–Whitney p-value reachable with these sizes.

    It is reached when the samples do not overlap at all: 2 of the C(n_a+n_b, n_a) equally
    likely rank splits are that extreme (capped at 1).
    """
    if n_a <= 0 or n_b <= 0:
        return 1.0
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))  # int division: no float overflow


def min_samples(alpha: float = 0.05) -> int:
    """Smallest n per side with which a two-sided Mann–Whitney test can reach p < alpha.

    As benchstat's "need >= 4 samples to detect a difference at alpha level 0.05": n = 4
    gives 2/C(8,4) ≈ 0.029, n = 3 only 2/C(6,3) = 0.1.
    """
    _check_alpha(alpha)
    n = 1
    while mannwhitney_min_p(n, n) >= alpha:
        n += 1
    return n


# ---------------------------------------------------------------- two samples


def _midranks(values: Sequence[float]) -> list[float]:
    """1-based ranks with ties given their mean rank (multiples of 0.5, exact in floats)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _permutation_p(b: list[float], a: list[float]) -> float:
    """Two-sided p of the rank sum over every split of the pooled values into |B| and |A|.

    Exact given the ties. Only the smaller side is enumerated: its rank sum fixes the other
    side's (they add up to n(n+1)/2), and orders the splits as U does.
    """
    ranks = _midranks(b + a)
    small = ranks[: len(b)] if len(b) <= len(a) else ranks[len(b) :]
    observed = sum(small)
    low = high = total = 0
    for chosen in itertools.combinations(ranks, len(small)):
        r = sum(chosen)
        total += 1
        low += r <= observed
        high += r >= observed
    return min(1.0, 2 * min(low, high) / total)


def _splits(n_a: int, n_b: int) -> int:
    """C(n_a + n_b, min side), without building a huge integer for two large sides."""
    k = min(n_a, n_b)
    # C(2k, k) > 5000 from k = 8 on, so larger sides can never be enumerated anyway.
    return math.comb(n_a + n_b, k) if k <= 16 else _MWU_PERMUTATION_MAX_SPLITS + 1


def _mannwhitney(b: Values, a: Values) -> tuple[float | None, MannWhitneyMethod]:
    """Two-sided Mann–Whitney U p of B against A, and the method used.

    Chosen deliberately rather than by scipy's "auto" (exact only below 9 per side):
    - no ties and at most 2500 pairs: the exact null distribution of U;
    - ties (common: logs print one decimal) and at most 5000 splits: every split of the
      pooled ranks enumerated here — exact given the ties and deterministic, where the normal
      approximation is poor for small tied samples (scipy's own permutation method also
      refuses a side of one value);
    - otherwise the normal approximation with tie and continuity corrections.
    The first and last are scipy's `mannwhitneyu` methods, computed here (tested against
    it) so that a report needs only `scipy.special`, not the slow import of `scipy.stats`.
    """
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        ties = len(set(a) | set(b)) < len(a) + len(b)
    else:
        import numpy as np

        ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    method: MannWhitneyMethod
    if not ties and len(a) * len(b) <= _MWU_EXACT_MAX_PAIRS:
        u = _u_statistic(b, a)[0]
        p, method = 2 * _mwu_exact_sf(u, len(b), len(a)), "exact"
    elif ties and _splits(len(a), len(b)) <= _MWU_PERMUTATION_MAX_SPLITS:
        p, method = _permutation_p(list(b), list(a)), "permutation"
    else:
        p, method = _mwu_asymptotic_p(b, a), "asymptotic"
    return (None if math.isnan(p) else min(1.0, max(0.0, p))), method


def _u_statistic(b: Values, a: Values) -> tuple[float, list[int]]:
    """max(U_B, U_A) from the pooled midranks, and the sizes of the groups of tied values."""
    if isinstance(a, Sequence) and isinstance(b, Sequence) and len(a) + len(b) < _ARRAY_FROM:
        ranks = _midranks([*b, *a])
        r_b = math.fsum(ranks[: len(b)])  # multiples of 0.5 below 2**52: exact in any order
        tied = list(collections.Counter([*b, *a]).values())
    else:
        import numpy as np

        pooled = np.concatenate([np.asarray(b, np.float64), np.asarray(a, np.float64)])
        order = np.argsort(pooled, kind="stable")
        s = pooled[order]
        new = np.concatenate(([True], s[1:] != s[:-1]))
        edges = np.flatnonzero(np.concatenate((new, [True])))
        mid = (edges[:-1] + edges[1:] - 1) / 2 + 1  # the mean rank of each tie group
        ranks_a = np.empty(len(pooled))
        ranks_a[order] = mid[np.cumsum(new) - 1]
        r_b = float(ranks_a[: len(b)].sum())
        tied = np.diff(edges).tolist()
    n_b, n_a = len(b), len(a)
    u_b = r_b - n_b * (n_b + 1) / 2
    return max(u_b, n_b * n_a - u_b), tied


def _mwu_exact_sf(u: float, n1: int, n2: int) -> float:
    """P(U ≥ u) under the null without ties: counts of U are the coefficients of the
    Gaussian binomial [n1+n2 choose n1]_q, built exactly in integers."""
    m, n = min(n1, n2), max(n1, n2)
    top = m * n
    poly = [1] + [0] * top
    for i in range(1, m + 1):
        step = n + i
        for k in range(top, step - 1, -1):  # times (1 - q^(n+i))
            poly[k] -= poly[k - step]
        for k in range(i, top + 1):  # divided by (1 - q^i)
            poly[k] += poly[k - i]
    return sum(poly[math.ceil(u) :]) / math.comb(m + n, m)


def _mwu_asymptotic_p(b: Values, a: Values) -> float:
    """Two-sided p of the normal approximation, as scipy's `mannwhitneyu(b, a,
    method="asymptotic")`: tie-corrected variance, continuity correction."""
    from scipy import special

    u, tied = _u_statistic(b, a)
    n1, n2 = len(b), len(a)
    n = n1 + n2
    tie_term = float(sum(t**3 - t for t in tied))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    if sd == 0:
        return math.nan
    z = (u - n1 * n2 / 2 - 0.5) / sd
    return 2 * float(special.ndtr(-z))


def _welch_df(sa: float, sb: float, n_a: int, n_b: int) -> float | None:
    """Welch–Satterthwaite degrees of freedom of the two sides' var/n; a constant side
    contributes nothing to either sum. Where the squares leave float range (variances near
    its limits) the sums are taken relative to the larger side, which cancels; None when a
    side's var/n is itself beyond it."""
    try:
        df = (sa + sb) ** 2 / (sa**2 / (n_a - 1) + sb**2 / (n_b - 1))
    except (OverflowError, ZeroDivisionError):
        top = max(sa, sb)
        if not 0 < top < math.inf:
            return None
        ra, rb = sa / top, sb / top
        df = (ra + rb) ** 2 / (ra * ra / (n_a - 1) + rb * rb / (n_b - 1))
    return df if math.isfinite(df) else None


def compare(a: Values, b: Values, alpha: float = 0.05) -> Comparison:
    """Candidate B against baseline A (DESIGN §5); what the data cannot give is None.

    n < 2 on a side: no Welch interval or p (a side's variance is unknown). Zero variance on
    both sides: the interval is the point r, p-values and Hedges' g are None. mean_A ≤ 0:
    the relative change and its interval are None (`undefined-change`). Hedges' g uses the
    pooled SD and J = 1 − 3/(4(n_a+n_b) − 9); it needs n_a + n_b ≥ 3.
    """
    _check_alpha(alpha)
    xa: Values
    xb: Values
    if max(len(a), len(b)) >= _ARRAY_FROM:
        _, xa, dropped_a = _finite_array(a)
        _, xb, dropped_b = _finite_array(b)
    else:
        _, xa, dropped_a = _finite(a)
        _, xb, dropped_b = _finite(b)
    n_a, n_b = len(xa), len(xb)
    need = min_samples(alpha)
    warnings: list[str] = [W_NON_FINITE] if dropped_a or dropped_b else []
    if min(n_a, n_b) < need:
        warnings.append(W_FEW)

    mean_a = fmean(xa) if n_a else None
    mean_b = fmean(xb) if n_b else None
    var_a = _var(xa, mean_a) if mean_a is not None and n_a >= 2 else None
    var_b = _var(xb, mean_b) if mean_b is not None and n_b >= 2 else None
    diff = mean_b - mean_a if mean_a is not None and mean_b is not None else None

    pooled_sd: float | None = None
    if mean_a is not None and mean_b is not None and n_a + n_b >= 3:
        ss = (var_a or 0.0) * (n_a - 1) + (var_b or 0.0) * (n_b - 1)
        pooled_sd = math.sqrt(ss / (n_a + n_b - 2))

    both_constant = var_a == 0 and var_b == 0
    if both_constant:
        warnings.append(W_ZERO_VAR)

    diff_lo = diff_hi = df = p_welch = None
    if diff is not None and var_a is not None and var_b is not None:
        if both_constant:
            diff_lo = diff_hi = diff
        else:
            sa, sb = var_a / n_a, var_b / n_b
            se = math.sqrt(sa + sb)
            df = _welch_df(sa, sb, n_a, n_b)
            if math.isfinite(se) and df is not None:  # else variances beyond float range
                half = _t_ppf(1 - alpha / 2, df) * se
                diff_lo, diff_hi = diff - half, diff + half
                p_welch = min(1.0, 2 * _t_sf(abs(diff) / se, df))

    change = ci_low = ci_high = None
    if mean_a is not None and mean_a <= 0:
        warnings.append(W_UNDEFINED)
    elif mean_a is not None and diff is not None:
        change = diff / mean_a
        if diff_lo is not None and diff_hi is not None:
            ci_low, ci_high = diff_lo / mean_a, diff_hi / mean_a

    hedges_g = None
    if diff is not None and pooled_sd is not None and 0 < pooled_sd < math.inf:
        hedges_g = diff / pooled_sd * (1 - 3 / (4 * (n_a + n_b) - 9))

    p_mw: float | None = None
    mw_method: MannWhitneyMethod | None = None
    if n_a and n_b and not both_constant:
        p_mw, mw_method = _mannwhitney(xb, xa)

    return Comparison(
        n_a=n_a,
        n_b=n_b,
        mean_a=mean_a,
        mean_b=mean_b,
        diff=diff,
        diff_ci_low=diff_lo,
        diff_ci_high=diff_hi,
        change=change,
        ci_low=ci_low,
        ci_high=ci_high,
        df=df,
        p_welch=p_welch,
        p_mannwhitney=p_mw,
        mannwhitney_method=mw_method,
        hedges_g=hedges_g,
        pooled_sd=pooled_sd,
        alpha=alpha,
        min_samples=need,
        warnings=_dedupe(warnings),
    )


# ---------------------------------------------------------------- several comparisons


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values, in input order; None (and nan) stay None.

    The i-th smallest of m p-values becomes max over j ≤ i of min(1, (m − j + 1)·p_(j)), so
    the adjusted values keep the order of the raw ones.
    """
    present = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    for i in present:
        p = pvalues[i]
        if p is not None and not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value out of [0, 1]: {p!r}")
    order = sorted(present, key=lambda i: (pvalues[i], i))
    m = len(order)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        p = pvalues[i]
        assert p is not None  # filtered above; for mypy
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def runs_needed(
    sd: float | None, difference: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Runs per config for a two-sided test at alpha to detect `difference` with `power`.

    ⌈2·((z₁₋α/₂ + z_power)·sd/difference)²⌉ (normal approximation, equal group sizes).
    None when sd is None or 0 or the difference is 0, or when the count is beyond float
    range (a spread of 1e150 against a 5 % effect): the formula says nothing then.
    """
    _check_alpha(alpha)
    if sd is None or not math.isfinite(sd) or sd <= 0:
        return None
    if difference == 0 or not math.isfinite(difference):
        return None
    upper = 1 - alpha / 2  # 1.0 itself below alpha ~1e-16: then by symmetry
    z_alpha = NormalDist().inv_cdf(upper) if upper < 1 else -NormalDist().inv_cdf(alpha / 2)
    ratio = (z_alpha + NormalDist().inv_cdf(power)) * sd / difference
    runs = 2 * ratio * ratio
    if not math.isfinite(runs):
        return None
    # round() first: 8.000000000001 from float noise must not become 9.
    return max(2, math.ceil(round(runs, 9)))


# ---------------------------------------------------------------- launches (DESIGN §5, v0.2)
#
# The unit of replication is the launch. A config's level on a metric is the mean of its
# launch means; its uncertainty combines the launch-to-launch noise σ_L (a CV: measured from
# configs launched at least twice, given by the manifest, or assumed) with each launch's own
# error, which for a server's interval series must allow for autocorrelation.

LaunchUnit = Literal["launch", "sample"]
NoiseSource = Literal["measured", "given", "assumed"]

ASSUMED_LAUNCH_CV = 0.02  # DESIGN §5: σ_L when no config has two launches and none is given
_MSER_BATCH = 5  # MSER-5: warm-up found on means of batches of 5 values
_MSER_MIN = 50  # series shorter than this keep every value
_ACF_MAX = 1 << 16  # longer series are read through this many batch means for their ACF
_STEP_DECIMALS = 9  # a print step is looked for down to 1e-9
_STEP_BLOCK = 1 << 16  # values `print_step` checks at once
_STEP_HEAD = 4096  # values it checks first (most columns need more decimals than their head)

# Warning codes of the launch statistics (catalogued in diagnostics.CODES).
W_UNBOUNDED = "unbounded-ratio"  # the baseline level is not clearly above 0: no interval of r
W_ASSUMED_NOISE = "assumed-launch-noise"  # σ_L is the assumed 2 %


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a variance: its size, its degrees of freedom (inf when known exactly),
    and the estimate it comes from (parts with one key are one estimate: their degrees of
    freedom are not added up as if independent)."""

    var: float
    df: float
    key: str


@dataclass(frozen=True, slots=True)
class LaunchStat:
    """One launch's values of a metric: its mean and that mean's own error.

    Client runs are repeated measurements (`series` False): the mean's variance is s²/n.
    A server's interval series (`series` True) first loses its warm-up (MSER-5, `warmup`
    values), then the mean's variance allows for autocorrelation (`n_eff`). Variances are
    never below the print resolution, q²/12 per value.
    """

    n: int
    warmup: int
    mean: float
    var: float | None
    var_mean: float | None
    df: float
    n_eff: float
    series: bool
    outliers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Noise:
    """σ_L of one metric: the launch-to-launch CV, where it comes from, and what it is
    measured from (configs — or sweep cells — with at least two launches)."""

    cv: float
    source: NoiseSource
    df: float  # inf unless measured
    pooled_var: float | None  # relative variance of launch means, pooled (measured only)
    pooled_df: float
    within_cv: float | None  # within-launch CV of the values, pooled over every launch
    cells: int  # configs (cells) it was measured from
    launches: int  # their launches


@dataclass(frozen=True, slots=True)
class Level:
    """A config's level on a metric: the mean of its launch means, and its variance as a sum
    of components (σ_L and the launches' own errors)."""

    mean: float | None
    var: float | None
    df: float | None
    components: tuple[Component, ...]
    launches: int
    n: int
    n_eff: float
    warmup: int
    unit: LaunchUnit  # what the level's variance is estimated from
    means: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Ratio:
    """r = level_B / level_A − 1 and its Fieller interval at 1 − alpha (None: unbounded)."""

    change: float | None
    ci_low: float | None
    ci_high: float | None
    df: float | None
    alpha: float
    bounded: bool


def print_step(values: Values) -> float | None:
    """The print resolution q = 10^-d of values read from a log: d the fewest decimals (0–9)
    that write every finite value exactly. The log printed at least d decimals, so q is never
    finer than the true step (the variance floor q²/12 never too small). None where values
    carry more than 9 decimals, or without a finite value."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)

    def written(xs: npt.NDArray[np.float64], d: int) -> bool:
        scaled = xs * 10.0**d
        return bool(np.all(np.abs(scaled - np.rint(scaled)) <= 1e-6 + 1e-12 * np.abs(scaled)))

    def all_written(d: int) -> bool:
        """`written` of every finite value, a block at a time: the temporaries of a block,
        not of the whole column (five arrays as long as it: 160 MB for a 1 GB log's key)."""
        return all(
            written(_finite_only(arr[at : at + _STEP_BLOCK])[0], d)
            for at in range(0, len(arr), _STEP_BLOCK)
        )

    if not any(
        bool(np.isfinite(arr[at : at + _STEP_BLOCK]).any())
        for at in range(0, len(arr), _STEP_BLOCK)
    ):
        return None
    # the decimals a head of the values needs first (the whole needs at least as many)
    head = _finite_only(arr[:_STEP_HEAD])[0]
    for d in range(_STEP_DECIMALS + 1):
        if written(head, d) and all_written(d):
            return 10.0**-d
    return None


def mser_truncation(values: Values) -> int:
    """Values to drop at the start of a series as warm-up: MSER-5 (White, 1997).

    The means of batches of 5 values z_1..z_b; the truncation d* (in batches) minimises
    Σ_{j>d}(z_j − z̄_d)² / (b − d)² over d ≤ b/2, so never more than half the series goes.
    Series shorter than 50 values keep everything.
    """
    import numpy as np

    n = len(values)
    if n < _MSER_MIN:
        return 0
    b = n // _MSER_BATCH
    arr = np.asarray(values, dtype=np.float64)[: b * _MSER_BATCH]
    z = arr.reshape(b, _MSER_BATCH).mean(axis=1)
    z = z - z.mean()  # centred: the suffix sums below lose no digits to a large level
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    k = np.arange(b, 0, -1, dtype=np.float64)  # batches left after dropping d
    keep = b // 2 + 1  # d = 0 .. b // 2
    ss = s2[:keep] - s1[:keep] ** 2 / k[:keep]
    score = np.maximum(ss, 0.0) / k[:keep] ** 2
    return int(np.argmin(score)) * _MSER_BATCH


def series_variance(values: Values) -> tuple[float, float]:
    """The variance of the mean of an autocorrelated series, and its effective sample size.

    Geyer's (1992) initial monotone sequence estimator of the integrated autocorrelation
    time, with the bias of autocovariances taken about the sample mean corrected: the
    long-run variance S summed over the 2K lags used estimates n·var(mean), but each lag's
    covariance is low by var(mean), so var(mean) = S / (n − 4K + 1) (at most 4·S/n). Never
    below the independent s²/n (a negatively correlated series counts as independent).
    Series longer than 65,536 values are read through their batch means for the
    autocorrelation (their mean's variance is the same quantity).
    """
    import numpy as np

    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        raise ValueError("a series needs at least 2 values")
    return _series_variance(x, _var(x, fmean(x)))


def _series_variance(x: npt.NDArray[np.float64], var: float) -> tuple[float, float]:
    """`series_variance` of an array of at least 2 values whose variance (`_var`) is `var`."""
    import numpy as np

    n = len(x)
    iid = var / n
    if var == 0 or not math.isfinite(var):
        return iid, float(n)
    y = x
    if n > _ACF_MAX:
        m = math.ceil(n / _ACF_MAX)
        y = x[: (n // m) * m].reshape(-1, m).mean(axis=1)
    ny = len(y)
    yc = y - y.mean()
    size = 1 << (2 * ny - 1).bit_length()
    f = np.fft.rfft(yc, size)
    acov = np.fft.irfft(f * np.conj(f), size)[:ny] / ny
    if acov[0] <= 0:
        return iid, float(n)
    rho = acov / acov[0]
    pairs = rho[: 2 * (ny // 2)].reshape(-1, 2).sum(axis=1)  # Γ_k = ρ_2k + ρ_2k+1
    stop = np.flatnonzero(pairs <= 0)
    k = int(stop[0]) if len(stop) else len(pairs)
    used = np.minimum.accumulate(pairs[:k])  # the initial monotone sequence
    lags = 2 * k
    long_run = acov[0] * (-1.0 + 2.0 * float(used.sum())) if k else acov[0]
    denom = max(ny - (2 * lags - 1), ny / 4)
    var_mean = max(long_run / denom, iid)
    return var_mean, min(float(n), var / var_mean)


def _floor_var(var: float, step: float | None) -> float:
    return max(var, step * step / 12) if step is not None else var


def launch_stat(values: Values, series: bool, step: float | None = None) -> LaunchStat:
    """One launch's statistics (see `LaunchStat`); `step` is the print resolution q."""

    xs, dropped = _finite_only(values)  # no index array unless a value was left out
    n = len(xs)
    if n == 0:
        raise ValueError("a launch needs at least one finite value")
    found = outlier_indices(xs)  # positions among the finite values, made the input's
    flagged: tuple[int, ...] = found
    if found and dropped:
        import numpy as np

        idx = np.flatnonzero(np.isfinite(np.asarray(values, dtype=np.float64)))
        flagged = tuple(idx[list(found)].tolist())
    warmup = mser_truncation(xs) if series else 0
    kept = xs[warmup:]
    mean = fmean(kept)
    if len(kept) < 2:
        return LaunchStat(n, warmup, mean, None, None, 0.0, 1.0, series, flagged)
    var = _var(kept, mean)  # the variance `series_variance` takes: summed once, not twice
    var_mean = _series_variance(kept, var)[0] if series else var / len(kept)
    raw = LaunchStat(n, warmup, mean, var, var_mean, 0.0, 0.0, series, flagged)
    return floored(raw, step)


def floored(s: LaunchStat, step: float | None) -> LaunchStat:
    """A launch's statistics with its variances never below the print resolution q²/12 per
    value (DESIGN §5), and its effective sample size and degrees of freedom from them."""
    if s.var is None or s.var_mean is None:
        return s
    kept = len_of(s)
    var = _floor_var(s.var, step)
    var_mean = max(s.var_mean, var / kept)
    n_eff = float(kept) if not s.series or var_mean == 0 else min(float(kept), var / var_mean)
    df = max(n_eff - 1.0, 1.0)
    return replace(s, var=var, var_mean=var_mean, n_eff=n_eff, df=df)


def outlier_indices(values: Values) -> tuple[int, ...]:
    """Iglewicz–Hoaglin outliers of finite values, with the MAD = 0 fallback of DESIGN §5:
    when more than half the values are equal, the score uses 1.2533 · (mean absolute
    deviation from the median) instead of MAD / 0.6745."""
    import numpy as np

    xs = np.asarray(values, dtype=np.float64)
    if len(xs) < 3:
        return ()
    med = _median_array(xs)
    with np.errstate(over="ignore", invalid="ignore"):
        # in place: one array as long as the values, not three (the same operations, in
        # the same order: `_MZ_FACTOR * dev / mad`, products commute exactly)
        dev = xs - med
        np.abs(dev, out=dev)
        mad = _median_array(dev, own=True)  # no copy: the deviations are made again
        np.subtract(xs, med, out=dev)
        np.abs(dev, out=dev)
        if mad > 0:
            dev *= _MZ_FACTOR
            dev /= mad
        else:
            mean_ad = float(dev.mean())
            if not mean_ad > 0:
                return ()
            dev /= 1.253314 * mean_ad
        return tuple(np.flatnonzero(dev > _MZ_THRESHOLD).tolist())


def launch_noise(
    cells: Sequence[Sequence[LaunchStat]],
    given: float | None = None,
    assumed: float = ASSUMED_LAUNCH_CV,
) -> Noise:
    """σ_L of a metric from every cell (a config, or a config at one load point).

    Measured where any cell has at least two launches: each such cell's launch means relative
    to its level give a variance with L − 1 degrees of freedom; pooled over the cells (s_p²),
    it estimates σ_L² plus the launches' own relative error, which is taken off (a one-way
    random-effects estimate; ≤ 0 is 0). Else `given` (the manifest's), else `assumed`; those
    count as known exactly (df inf).
    """
    total_df = 0.0
    pooled = 0.0
    within = 0.0
    used_cells = used_launches = 0
    w_num = w_den = 0.0
    for cell in cells:
        for s in cell:
            if s.var is not None and s.mean != 0 and math.isfinite(s.var):
                w_num += (len_of(s) - 1) * s.var / (s.mean * s.mean)
                w_den += len_of(s) - 1
        if len(cell) < 2:
            continue
        means = [s.mean for s in cell]
        level = fmean(means)
        if not level > 0 or not math.isfinite(level):
            continue
        rel = [m / level for m in means]
        var_rel = _var(rel, fmean(rel))
        own = fmean([(s.var_mean or 0.0) / (level * level) for s in cell])
        k = len(cell) - 1
        total_df += k
        pooled += k * var_rel
        within += k * own
        used_cells += 1
        used_launches += len(cell)
    within_cv = math.sqrt(w_num / w_den) if w_den > 0 else None
    if total_df > 0:
        s_p = pooled / total_df
        sigma2 = max(0.0, s_p - within / total_df)
        return Noise(
            math.sqrt(sigma2),
            "measured",
            total_df,
            s_p,
            total_df,
            within_cv,
            used_cells,
            used_launches,
        )
    if given is not None:
        return Noise(given, "given", math.inf, None, 0.0, within_cv, 0, 0)
    return Noise(assumed, "assumed", math.inf, None, 0.0, within_cv, 0, 0)


def len_of(s: LaunchStat) -> int:
    """The values a launch's statistics were taken from (after its warm-up)."""
    return s.n - s.warmup


def satterthwaite(parts: Sequence[Component]) -> float | None:
    """Welch–Satterthwaite degrees of freedom of a sum of variance components; parts with
    one key are one estimate (summed before). inf when every part is known exactly."""
    by_key: dict[str, tuple[float, float]] = {}
    for c in parts:
        v, df = by_key.get(c.key, (0.0, c.df))
        by_key[c.key] = (v + c.var, min(df, c.df))
    total = sum(v for v, _ in by_key.values())
    if not total > 0 or not math.isfinite(total):
        return None
    denom = 0.0
    for v, df in by_key.values():
        if math.isfinite(df):
            if df <= 0:
                return None
            denom += (v / total) ** 2 / df
    return math.inf if denom == 0 else 1.0 / denom


def level(stats: Sequence[LaunchStat], noise: Noise, key: str) -> Level:
    """A config's level from its launches (DESIGN §5): the mean of launch means.

    With two launches or more, its variance is the pooled relative variance of launch means
    (every cell's) times level² / L. With one, the launch mean's own variance plus σ_L²·level²
    (the noise's degrees of freedom: its pooled ones when measured, inf when given or
    assumed). `key` names the config (its own error is its own estimate).
    """
    n = sum(s.n for s in stats)
    n_eff = sum(s.n_eff for s in stats)
    warm = sum(s.warmup for s in stats)
    means = tuple(s.mean for s in stats)
    if not stats:
        return Level(None, None, None, (), 0, 0, 0.0, 0, "sample", ())
    mean = fmean(means)
    launches = len(stats)
    comps: tuple[Component, ...] = ()
    unit: LaunchUnit = "sample"
    if launches >= 2 and noise.pooled_var is not None and math.isfinite(mean):
        comps = (Component(noise.pooled_var * mean * mean / launches, noise.pooled_df, "pooled"),)
        unit = "launch"
    elif launches == 1 and stats[0].var_mean is not None:
        own = stats[0]
        assert own.var_mean is not None  # for mypy
        noise_key = "pooled" if noise.source == "measured" else "noise"
        comps = (
            Component(own.var_mean, own.df, f"within:{key}"),
            Component(noise.cv * noise.cv * mean * mean, noise.df, noise_key),
        )
    if not comps:
        return Level(mean, None, None, (), launches, n, n_eff, warm, unit, means)
    var = math.fsum(c.var for c in comps)
    return Level(mean, var, satterthwaite(comps), comps, launches, n, n_eff, warm, unit, means)


def _ratio_parts(a: Level, b: Level, rho: float) -> list[Component]:
    """The components of var(m_B − ρ·m_A)."""
    return [*b.components, *(Component(c.var * rho * rho, c.df, c.key) for c in a.components)]


def t_quantile(q: float, df: float) -> float:
    """The q quantile of Student's t on df degrees of freedom (the normal's at df = inf)."""
    return _z(q) if math.isinf(df) else _t_ppf(q, df)


def _z(q: float) -> float:
    return NormalDist().inv_cdf(q) if q < 1 else -NormalDist().inv_cdf(1 - q)


def ratio_df(a: Level, b: Level) -> float | None:
    """Degrees of freedom of the Fieller quantity at the estimated ratio."""
    if a.mean is None or b.mean is None or a.mean == 0:
        return None
    return satterthwaite(_ratio_parts(a, b, b.mean / a.mean))


def fieller(
    mean_a: float, var_a: float, mean_b: float, var_b: float, t: float
) -> tuple[float, float] | None:
    """Fieller's interval of μ_B/μ_A from independent means and their variances at the
    critical value t: every ρ with (m_B − ρ·m_A)² ≤ t²·(v_B + ρ²·v_A). None when that set is
    not a bounded interval (m_A not clearly away from 0: g = t²·v_A/m_A² ≥ 1)."""
    if mean_a == 0:
        return None
    g = t * t * var_a / (mean_a * mean_a)
    if not g < 1:
        return None
    rho = mean_b / mean_a
    disc = var_b * (1 - g) + rho * rho * var_a
    half = abs(t / mean_a) * math.sqrt(max(disc, 0.0))
    lo, hi = (rho - half) / (1 - g), (rho + half) / (1 - g)
    return (lo, hi) if lo <= hi else (hi, lo)


def ratio(a: Level, b: Level, alpha: float = 0.05) -> Ratio:
    """r = level_B/level_A − 1 with its Fieller interval at 1 − alpha (DESIGN §5)."""
    _check_alpha(alpha)
    if a.mean is None or b.mean is None or not a.mean > 0:
        return Ratio(None, None, None, None, alpha, False)
    change = b.mean / a.mean - 1
    if a.var is None or b.var is None:
        return Ratio(change, None, None, None, alpha, False)
    df = ratio_df(a, b)
    if df is None:  # no variance at all: the point itself
        return Ratio(change, change, change, None, alpha, True)
    t = t_quantile(1 - alpha / 2, df)
    got = fieller(a.mean, a.var, b.mean, b.var, t)
    if got is None:
        return Ratio(change, None, None, df, alpha, False)
    return Ratio(change, got[0] - 1, got[1] - 1, df, alpha, True)


def min_effect_p(a: Level, b: Level, rho0: float) -> tuple[float, float] | None:
    """One-sided p-values at the claim's ratio ρ0 = 1 ± δ: (p that μ_B/μ_A > ρ0 is not shown,
    p that μ_B/μ_A < ρ0 is not shown), from T = (m_B − ρ0·m_A)/√(v_B + ρ0²·v_A) on the
    degrees of freedom of the interval (so p ≤ alpha/2 exactly when ρ0 lies outside the
    1 − alpha Fieller interval). None where no variance is known."""
    if a.mean is None or b.mean is None or a.var is None or b.var is None:
        return None
    df = ratio_df(a, b)
    se2 = b.var + rho0 * rho0 * a.var
    diff = b.mean - rho0 * a.mean
    if df is None or not se2 > 0:
        if diff == 0:
            return (0.5, 0.5)
        return (0.0, 1.0) if diff > 0 else (1.0, 0.0)
    t = diff / math.sqrt(se2)
    if math.isinf(df):
        return (float(NormalDist().cdf(-t)), float(NormalDist().cdf(t)))
    return (_t_sf(t, df), _t_sf(-t, df))


def holm_levels(pvalues: Sequence[float | None], alpha: float) -> list[float | None]:
    """Holm's step-down on one-sided p-values at level alpha/2 (DESIGN §5): the i-th smallest
    of m is decided when p ≤ (alpha/2)/(m − i + 1), and from the first that is not, no later
    one is. The two-sided alpha each member was decided at — alpha/(m − i + 1) — or None."""
    _check_alpha(alpha)
    m = len(pvalues)
    order = sorted(
        range(m), key=lambda i: (pvalues[i] is None, pvalues[i] if pvalues[i] is not None else 1, i)
    )
    out: list[float | None] = [None] * m
    for rank, i in enumerate(order):
        p = pvalues[i]
        level_i = alpha / (m - rank)
        if p is None or not p <= level_i / 2:
            break
        out[i] = level_i
    return out


def test_levels(pvalues: Sequence[float | None], alpha: float) -> list[float]:
    """The two-sided alpha Holm's step-down tests each member at (by the rank of its p),
    whether or not the step-down reaches it."""
    m = len(pvalues)
    order = sorted(
        range(m), key=lambda i: (pvalues[i] is None, pvalues[i] if pvalues[i] is not None else 1, i)
    )
    out = [alpha] * m
    for rank, i in enumerate(order):
        out[i] = alpha / (m - rank)
    return out


def launches_needed(
    a: Sequence[LaunchStat],
    b: Sequence[LaunchStat],
    noise: Noise,
    effect: float,
    min_effect: float,
    alpha: float = 0.05,
    most: int = 100,
) -> int | None:
    """Launches per side at which the expected interval of r would clear δ on the side the
    estimate lies (half-width < |e − δ|), at the current estimates of σ_L and of each side's
    own launch error, with the t quantile on the degrees of freedom those launches would give;
    more than the current count. None beyond `most` or where e = δ."""
    _check_alpha(alpha)
    gap = abs(effect - min_effect)
    if not a or not b or gap == 0 or not math.isfinite(gap):
        return None
    mean_a = fmean([s.mean for s in a])
    mean_b = fmean([s.mean for s in b])
    if not mean_a > 0:
        return None
    own_a = fmean([s.var_mean or 0.0 for s in a])
    own_b = fmean([s.var_mean or 0.0 for s in b])
    sigma2 = noise.cv * noise.cv
    rho = mean_b / mean_a
    start = max(len(a), len(b)) + 1
    others = max(0.0, noise.pooled_df - (len(a) - 1) - (len(b) - 1))
    for n in range(max(start, 2), most + 1):
        var_a = (sigma2 * mean_a * mean_a + own_a) / n
        var_b = (sigma2 * mean_b * mean_b + own_b) / n
        df = 2 * (n - 1) + others
        half = t_quantile(1 - alpha / 2, df) * math.sqrt(var_b + rho * rho * var_a) / mean_a
        if half < gap:
            return n
    return None


def min_detectable_effect(
    levels: Sequence[Level], alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The smallest relative change between two configs like these that a comparison would
    find with `power` at `alpha`: (t_{1−α/2} + t_power)·√(2·v) for the median relative
    variance v of the levels (on the median degrees of freedom)."""
    rel = sorted(
        lv.var / (lv.mean * lv.mean)
        for lv in levels
        if lv.var is not None and lv.mean is not None and lv.mean != 0
    )
    dfs = sorted(lv.df if lv.df is not None else math.inf for lv in levels if lv.var is not None)
    if not rel:
        return None
    v = _median(rel)
    df = dfs[len(dfs) // 2]
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * math.sqrt(2 * v)


# ---------------------------------------------------------------- change points (DESIGN §10)

# E-divisive means (Matteson & James 2014) as `ecp::e.divisive` runs it: α = 1, a
# permutation test at 0.05 with 199 permutations. A regime is at least 3 sessions: with
# fewer, one odd night and a shift cannot be told apart, and the newest session is judged
# against its regime instead (`predict_ratio`).
CP_ALPHA = 0.05
CP_PERMUTATIONS = 199
CP_MIN_SIZE = 3
CP_SEED = 20140101  # fixed: the same series always gives the same change points
CP_WINDOW = 96  # longer series are read in overlapping windows (each permutation is O(n²))
W_FEW_SESSIONS = "few-sessions"  # no session-to-session variance to judge with (df 0)


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """A change of distribution found by e-divisive: `index` is the first value of the new
    regime; `q` the energy statistic of the split that found it, `p_value` its permutation
    p-value over `permutations` shuffles (fewer when the test stopped early)."""

    index: int
    q: float
    p_value: float
    permutations: int


@dataclass(frozen=True, slots=True)
class Divisive:
    """The change points of a series, sorted by index, and how they were found: on the whole
    series, or (`windowed`) on overlapping windows of `window` values, then merged."""

    change_points: tuple[ChangePoint, ...]
    alpha: float
    permutations: int
    min_size: int
    windowed: bool
    window: int


def energy_statistic(x: Values, y: Values) -> float:
    """Q̂(X, Y; α = 1) of Matteson & James (2014): mn/(m+n) · Ê, where
    Ê = 2/(mn)·Σ|x_i − y_j| − C(n,2)⁻¹·Σ_{i<k}|x_i − x_k| − C(m,2)⁻¹·Σ_{j<k}|y_j − y_k|.
    Each side needs two values or more."""
    import numpy as np

    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    n, m = len(a), len(b)
    if n < 2 or m < 2:
        raise ValueError("each side needs at least 2 values")
    between = float(np.abs(a[:, None] - b[None, :]).sum())
    within_a = float(np.abs(a[:, None] - a[None, :]).sum()) / 2
    within_b = float(np.abs(b[:, None] - b[None, :]).sum()) / 2
    e = 2 * between / (n * m) - within_a / (n * (n - 1) / 2) - within_b / (m * (m - 1) / 2)
    return n * m / (n + m) * e


def _best_split(z: npt.NDArray[np.float64], min_size: int) -> tuple[int, float] | None:
    """The split τ (and κ) of a segment that maximises Q̂(z[:τ], z[τ:κ]) over τ, κ with at
    least `min_size` values on each side (the first maximum in τ, then κ); (τ, Q̂).

    All pairs at once from one prefix-sum table: with U the upper triangle of |z_i − z_j|
    and P[a, b] = Σ_{i<a, j<b} U[i, j], the within sum of z[:τ] is P[τ, τ], the between sum
    of z[:τ] and z[τ:κ] is P[τ, κ] − P[τ, τ], and the within sum of z[τ:κ] P[κ, κ] − P[τ, κ]
    (U is zero below the diagonal). O(n²) time and memory."""
    import numpy as np

    n = len(z)
    if n < 2 * min_size:
        return None
    u = np.abs(z[:, None] - z[None, :])
    u = np.triu(u, 1)
    p = np.zeros((n + 1, n + 1))
    np.cumsum(u, axis=0, out=u)
    np.cumsum(u, axis=1, out=p[1:, 1:])
    taus = np.arange(min_size, n - min_size + 1)
    kappas = np.arange(2 * min_size, n + 1)
    diag = np.diagonal(p)
    t = taus[:, None].astype(np.float64)
    k = kappas[None, :].astype(np.float64)
    ny = k - t
    p_tk = p[np.ix_(taus, kappas)]
    within_x = diag[taus][:, None]
    between = p_tk - within_x
    within_y = diag[kappas][None, :] - p_tk
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (2 * between - 2 * ny * within_x / (t - 1) - 2 * t * within_y / (ny - 1)) / k
    q[ny < min_size] = -np.inf
    i = int(np.argmax(q))
    best = float(q.flat[i])
    if not math.isfinite(best):
        return None
    return int(taus[i // q.shape[1]]), best


def _bounds(n: int, cuts: Sequence[int]) -> list[tuple[int, int]]:
    edges = [0, *cuts, n]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def _candidate(
    z: npt.NDArray[np.float64], cuts: Sequence[int], min_size: int
) -> tuple[int, float] | None:
    """The best split over every segment between the cuts: (index in z, Q̂)."""
    best: tuple[int, float] | None = None
    for lo, hi in _bounds(len(z), cuts):
        got = _best_split(z[lo:hi], min_size)
        if got is not None and (best is None or got[1] > best[1]):
            best = (lo + got[0], got[1])
    return best


def _monte_carlo_p(
    q: float, draw: Callable[[], float], permutations: int, alpha: float
) -> tuple[float, int]:
    """A permutation p-value (#{Q̂* ≥ Q̂} + 1)/(R + 1) of an observed Q̂ and its permutations
    count. The test stops once the count of Q̂* ≥ Q̂ alone makes it not significant, and then
    gives the sequential p-value h/r of Besag & Clifford (1991)."""
    enough = math.floor(alpha * (permutations + 1) - 1) + 1
    over = 0
    for done in range(1, permutations + 1):
        if draw() >= q:
            over += 1
            if over >= enough:
                return over / done, done
    return (over + 1) / (permutations + 1), permutations


def _shuffled_best(
    z: npt.NDArray[np.float64], cuts: tuple[int, ...], min_size: int, rng: np.random.Generator
) -> float:
    """One permutation of e-divisive's test: each segment of `z` shuffled within itself (in
    place: permutations of permutations are permutations), then its best Q̂."""
    for lo, hi in _bounds(len(z), cuts):
        rng.shuffle(z[lo:hi])
    got = _candidate(z, cuts, min_size)
    return -math.inf if got is None else got[1]


def _hierarchical(
    z: npt.NDArray[np.float64],
    alpha: float,
    permutations: int,
    min_size: int,
    rng: np.random.Generator,
) -> list[ChangePoint]:
    """E-divisive on one series: split the segment with the best Q̂ while its permutation
    test (every segment shuffled within itself) is significant."""
    cuts: list[int] = []
    found: list[ChangePoint] = []
    while True:
        cand = _candidate(z, cuts, min_size)
        if cand is None:
            break
        index, q = cand
        draw = functools.partial(_shuffled_best, z.copy(), tuple(cuts), min_size, rng)
        p, done = _monte_carlo_p(q, draw, permutations, alpha)
        if not p <= alpha:
            break
        found.append(ChangePoint(index, q, p, done))
        cuts = sorted([*cuts, index])
    return sorted(found, key=lambda c: c.index)


def _pair_sum(sorted_values: npt.NDArray[np.float64]) -> float:
    """Σ_{i<j} |x_i − x_j| of values in ascending order: Σ_k (2k − n − 1)·x_(k), k = 1..n."""
    import numpy as np

    n = len(sorted_values)
    weights = 2.0 * np.arange(1, n + 1) - n - 1
    return float(weights @ sorted_values)


def _split_test(
    z: npt.NDArray[np.float64], at: int, alpha: float, permutations: int, seed: int
) -> ChangePoint:
    """The two-sample energy test of z[:at] against z[at:] by permutation of the labels, for
    the merge of windowed change points. In one dimension every within sum is `_pair_sum`
    of a side's values in sorted order, so the values are sorted once and a permutation (a
    shuffle of the labels over that order) costs O(n), not O(n²)."""
    import numpy as np

    n = len(z)
    order = np.argsort(z, kind="stable")
    zs = z[order]
    total = _pair_sum(zs)
    nx, ny = at, n - at
    rng = np.random.default_rng([seed, n, at])

    def q_of(mask: npt.NDArray[np.bool_]) -> float:
        within_x = _pair_sum(zs[mask])
        within_y = _pair_sum(zs[~mask])
        between = total - within_x - within_y
        e = (
            2 * between / (nx * ny)
            - within_x / (nx * (nx - 1) / 2)
            - within_y / (ny * (ny - 1) / 2)
        )
        return nx * ny / n * e

    labels = np.zeros(n, dtype=bool)
    labels[order < at] = True  # in sorted order: which values are the first side's
    q = q_of(labels)

    def draw() -> float:
        rng.shuffle(labels)
        return q_of(labels)

    p, done = _monte_carlo_p(q, draw, permutations, alpha)
    return ChangePoint(at, q, p, done)


def e_divisive(
    values: Values,
    alpha: float = CP_ALPHA,
    permutations: int = CP_PERMUTATIONS,
    min_size: int = CP_MIN_SIZE,
    seed: int = CP_SEED,
    window: int = CP_WINDOW,
) -> Divisive:
    """Change points of a series by e-divisive means (Matteson & James 2014, α = 1).

    Hierarchical: the best split of any current segment (the largest Q̂ over τ and κ,
    `_best_split`) is tested by permutation — every segment shuffled within itself and its
    best split found the same way, `permutations` times — and kept while its p-value is at
    most `alpha` (`_monte_carlo_p`). Each permutation costs O(n²), so a series longer than
    `window` is read as Hunter/Otava read long histories (Fleming et al. 2023): e-divisive on
    windows of `window` values that overlap by half (the next starting at the last change
    point found, or half a window on), then a merge that re-tests each change point against
    its neighbours' regimes (a two-sample energy test) and drops the weakest while one is
    not significant. Deterministic: every test's generator is seeded from `seed`.
    """
    import numpy as np

    _check_alpha(alpha)
    if min_size < 2:
        raise ValueError("a segment needs at least 2 values")
    if window < 4 * min_size:
        raise ValueError("a window needs room for two splits")
    z = np.asarray(values, dtype=np.float64)
    if not bool(np.isfinite(z).all()):
        raise ValueError("change points need finite values")
    n = len(z)
    if n <= window:
        found = _hierarchical(z, alpha, permutations, min_size, np.random.default_rng(seed))
        return Divisive(tuple(found), alpha, permutations, min_size, False, window)
    # one test per window: Bonferroni over them, with permutations enough to reach it
    step = window // 2
    looks = math.ceil((n - window) / step) + 1
    alpha_w = alpha / looks
    perms_w = max(permutations, math.ceil(2 / alpha_w))
    cuts: set[int] = set()
    start = 0
    while True:
        end = min(start + window, n)
        rng = np.random.default_rng([seed, start])
        part = _hierarchical(z[start:end], alpha_w, perms_w, min_size, rng)
        got = [start + c.index for c in part]
        cuts.update(got)
        if end == n:
            break
        start = max([*got, start + step])
    # the same change seen from two windows: keep one of any two closer than a regime
    order: list[int] = []
    for c in sorted(cuts):
        if order and c - order[-1] < min_size:
            continue
        order.append(c)
    # merge: drop the weakest change point while one is not significant against the regimes
    # on either side of it (its neighbours' tests change with it, and are redone)
    tests: dict[tuple[int, int, int], ChangePoint] = {}
    while order:
        edges = [0, *order, n]
        points = []
        for i in range(1, len(edges) - 1):
            key = (edges[i - 1], edges[i], edges[i + 1])
            if key not in tests:
                lo, at, hi = key
                t = _split_test(z[lo:hi], at - lo, alpha, permutations, seed)
                tests[key] = ChangePoint(at, t.q, t.p_value, t.permutations)
            points.append(tests[key])
        weakest = max(points, key=lambda c: (c.p_value, -c.q))
        if weakest.p_value <= alpha:
            return Divisive(tuple(points), alpha, permutations, min_size, True, window)
        order.remove(weakest.index)
    return Divisive((), alpha, permutations, min_size, True, window)


@dataclass(frozen=True, slots=True)
class RegimeNoise:
    """Session-to-session noise of a series: the relative variance of its values about
    their regime's mean, pooled over the regimes (a CV², with its degrees of freedom)."""

    cv2: float | None
    df: int


def regime_noise(values: Values, cuts: Sequence[int]) -> RegimeNoise:
    """The pooled relative variance within the regimes the cuts make: Σ (x/m_r − 1)² over
    Σ (n_r − 1) (regimes whose mean is not above 0 are left out)."""
    xs = [float(v) for v in values]
    total = 0.0
    df = 0
    for lo, hi in _bounds(len(xs), cuts):
        part = xs[lo:hi]
        if len(part) < 2:
            continue
        m = fmean(part)
        if not m > 0:
            continue
        total += math.fsum((x / m - 1) ** 2 for x in part)
        df += len(part) - 1
    return RegimeNoise(total / df if df else None, df)


def _regime_ratio(
    mean_a: float, var_a: float, mean_b: float, var_b: float, df: int, alpha: float
) -> Ratio:
    change = mean_b / mean_a - 1
    t = t_quantile(1 - alpha / 2, float(df))
    got = fieller(mean_a, var_a, mean_b, var_b, t)
    if got is None:
        return Ratio(change, None, None, float(df), alpha, False)
    return Ratio(change, got[0] - 1, got[1] - 1, float(df), alpha, True)


def shift_ratio(before: Values, after: Values, noise: RegimeNoise, alpha: float = 0.05) -> Ratio:
    """The shift at a change point: r = mean(after)/mean(before) − 1, with Fieller's interval
    from each regime's mean and the pooled session-to-session CV² (var = CV²·m²/n a side)."""
    _check_alpha(alpha)
    a, b = fmean(before), fmean(after)
    if not a > 0:
        return Ratio(None, None, None, None, alpha, False)
    if noise.cv2 is None or noise.df < 1:
        return Ratio(b / a - 1, None, None, None, alpha, False)
    va = noise.cv2 * a * a / len(before)
    vb = noise.cv2 * b * b / len(after)
    return _regime_ratio(a, va, b, vb, noise.df, alpha)


def predict_ratio(regime: Values, newest: float, noise: RegimeNoise, alpha: float = 0.05) -> Ratio:
    """The newest session against its regime: r = newest/mean(regime) − 1, with Fieller's
    interval treating the regime's k sessions as replicates and the newest as one more: the
    mean's variance CV²·m²/k, the newest's a whole session's CV²·x² (a prediction interval:
    one session carries the session-to-session noise)."""
    _check_alpha(alpha)
    a = fmean(regime)
    if not a > 0:
        return Ratio(None, None, None, None, alpha, False)
    if noise.cv2 is None or noise.df < 1:
        return Ratio(newest / a - 1, None, None, None, alpha, False)
    va = noise.cv2 * a * a / len(regime)
    vb = noise.cv2 * newest * newest
    return _regime_ratio(a, va, newest, vb, noise.df, alpha)


def pooled_cv(parts: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """CVs measured with their degrees of freedom, pooled: √(Σ df·cv² / Σ df), Σ df.
    None without a part of positive degrees of freedom."""
    total = sum(df for _, df in parts if df > 0 and math.isfinite(df))
    if not total > 0:
        return None
    return math.sqrt(math.fsum(df * cv * cv for cv, df in parts if df > 0) / total), total
